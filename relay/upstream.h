// Upstream selection for the host side of the tunnel: which address a route dials.
//
// A route names a host and a port. Its address is resolved ONCE, when the dispatch starts,
// and pinned: every connection of the route dials that one address, so a DNS answer that
// changes during the dispatch (rebinding) can't redirect it. Results that point inside the
// host or its networks (loopback, private, shared/CGNAT, link-local, unspecified, multicast,
// broadcast, cloud metadata) are refused; a name with any such result is refused whole. A
// route that names its upstream address explicitly (`HOST[:PORT]=ADDR:PORT`) skips both the
// lookup and the check: that is how tests and local mirrors reach loopback on purpose.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "relay/socket_address.h"

namespace sbx::relay {

enum class AddressClass {
  kPublic,
  kLoopback,     // 127/8, ::1
  kPrivate,      // 10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7, fec0::/10, 0/8, 198.18/15
  kLinkLocal,    // 169.254/16, fe80::/10
  kUnspecified,  // 0.0.0.0, ::
  kMulticast,    // 224/4, ff00::/8
  kBroadcast,    // 240/4 (reserved) and 255.255.255.255
  kMetadata,     // 169.254.169.254, fd00:ec2::254 (cloud instance metadata)
};

// Classifies the IP of `address` (the port is ignored). IPv4-mapped and NAT64 (64:ff9b::/96)
// IPv6 addresses are classified by the IPv4 address they carry.
AddressClass ClassifyAddress(const SocketAddress& address);
std::string_view AddressClassName(AddressClass cls);

// What the host relay does with a route's connections before it dials (docs/tunnel.md).
enum class RouteKind {
  // Reads the TLS ClientHello and dials only when its SNI names the route's host; anything
  // else is closed without a dial. The bytes are forwarded unchanged.
  kTls,
  // Dials as soon as the agent connects and never looks at the bytes: for protocols where
  // the server speaks first (SSH, SMTP, ...), and anything that is not TLS.
  kTcp,
  // The agent speaks plain HTTP/1.1 to port 80 inside; the host relay checks and rewrites
  // each request (a brokered secret in its header) and sends it over TLS it verifies itself
  // (relay/broker_connection.h). The relay sees this route's plaintext.
  kBroker,
};
std::string_view RouteKindName(RouteKind kind);  // "tls", "tcp", "broker"
// The port the agent connects to inside: 80 for a broker route (plain HTTP), else the
// route's port.
inline constexpr uint16_t kBrokerSandboxPort = 80;
// The kind of a route that does not name one: tls for port 443, tcp for every other port.
RouteKind DefaultRouteKind(uint16_t port);

struct Route {
  int index = 0;     // N in route-N.sock and 127.77.0.(N+2)
  std::string host;  // the name the agent uses, and that the host resolves
  uint16_t port = 443;
  RouteKind kind = RouteKind::kTls;
  std::optional<SocketAddress> upstream_override;  // `=ADDR:PORT`: used as is, never checked
};

[[nodiscard]] inline uint16_t SandboxPort(const Route& route) {
  return route.kind == RouteKind::kBroker ? kBrokerSandboxPort : route.port;
}

// Parses "HOST[:PORT][=ADDR:PORT][,KIND]", e.g. "api.example.com", "api.example.com:8443",
// "api.example.com=127.0.0.1:9443", "git.example.com:22,tcp". HOST is a DNS name: letters,
// digits, '-', '.'. KIND is "tls", "tcp" or "broker" (PORT is then the upstream's); without
// it, DefaultRouteKind(PORT).
base::Result<Route> ParseRoute(std::string_view spec, int index);

// The pinned address for `route`: its override, else the first result of one getaddrinfo
// lookup (system order: RFC 6724 via gai.conf), after PickUpstream's checks.
base::Result<SocketAddress> ResolveUpstream(const Route& route);

// The check behind ResolveUpstream, on given lookup results: fails when there are none or when
// any of them is not kPublic (the error names the address and its class).
base::Result<SocketAddress> PickUpstream(std::string_view host,
                                         const std::vector<SocketAddress>& candidates);

}  // namespace sbx::relay
