// Fuzzes the --allow parser of `run` (dispatch::ParseDispatchRoutes): the first byte picks
// the agent preset and --no-default-allow, the rest is the list of --allow values, cut at
// NUL. Every accepted route list must render as the sandbox's /etc/hosts.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "dispatch/host/prepare.h"
#include "fuzz/fuzz_input.h"
#include "netns/hosts.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 8192) return -1;
  sbx::fuzz::InputReader input(data, size);
  const uint8_t flags = input.Byte();
  sbx::dispatch::DispatchRequest request;
  request.no_default_allow = (flags & 1) != 0;
  if ((flags & 2) != 0) request.agent = sbx::dispatch::AgentPreset::kClaude;
  request.allow = sbx::fuzz::SplitOnNul(input.Rest());

  auto routes = sbx::dispatch::ParseDispatchRoutes(request);
  if (!routes) {
    sbx::fuzz::Check(!routes.error().Render().empty(), "refusal without a message");
    return 0;
  }
  std::vector<sbx::netns::HostRoute> hosts;
  for (size_t i = 0; i < routes->size(); ++i) {
    const auto& route = (*routes)[i];
    sbx::fuzz::Check(route.index == static_cast<int>(i), "route index out of order");
    sbx::fuzz::Check(route.port != 0, "route with port 0");
    // The route keeps the caller's spelling (case, a trailing dot); it must be a valid name.
    sbx::fuzz::Check(sbx::netns::NormalizeHostname(route.host).ok(), "route host not valid");
    hosts.push_back({route.host, route.port});
  }
  sbx::fuzz::Check(sbx::netns::RenderHostsFile(hosts).ok(),
                   "accepted routes that /etc/hosts refuses");
  return 0;
}
