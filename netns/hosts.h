// The tunnel's name plan: allowed route i is reached at 127.77.0.(i + 2) inside the sandbox,
// and the sandbox's /etc/hosts maps each allowed hostname to its address. DNS for any other
// name fails, since the sandbox has no resolver and no route out.
//
// Who calls it: the launcher, before clone (plan compilation); the supervisor uses
// RouteInAddr to bind one listener per route. Pure functions: no I/O, any thread.
#pragma once

#include <netinet/in.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "base/error.h"

namespace sbx::netns {

// One allowed endpoint: a hostname and the TCP port the agent connects to.
struct HostRoute {
  std::string host;
  uint16_t port = 443;
};

// Route addresses run 127.77.0.2 .. 127.77.0.254 (127.77.0.1 is left unused).
inline constexpr size_t kMaxRoutes = 253;

// Validates a hostname and returns it lowercased, without a single trailing root dot.
// Accepted: RFC 1123 names, 1-63 characters a-z A-Z 0-9 '-' per label, no label starting
// or ending with '-', at most 253 characters. Rejected, with a one-line message naming the
// (escaped) input and the reason: IP literals (anything inet_aton or an IPv6 parser takes,
// and all-numeric last labels), "localhost" and *.localhost, ip6-localhost, ip6-loopback,
// whitespace, ports, paths and any other trailing text.
base::Result<std::string> NormalizeHostname(std::string_view host);

// 127.77.0.(index + 2); Error when index >= kMaxRoutes.
base::Result<in_addr> RouteInAddr(size_t index);
// The same as text: "127.77.0.7" for index 5.
base::Result<std::string> RouteAddress(size_t index);

// All hosts valid, no hostname twice (after normalisation), ports non-zero, at most
// kMaxRoutes routes.
base::Status ValidateRoutes(std::span<const HostRoute> routes);

// The sandbox's /etc/hosts: a comment line, "127.0.0.1 localhost",
// "::1 localhost ip6-localhost ip6-loopback", then "127.77.0.N host" per route in order
// (normalised names). Error as ValidateRoutes.
base::Result<std::string> RenderHostsFile(std::span<const HostRoute> routes);

}  // namespace sbx::netns
