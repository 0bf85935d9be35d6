#include "supervise/routes.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <optional>
#include <utility>

#include "contract/supervisor_contract.h"

namespace sbx::supervise {
namespace {

using base::Error;
using base::Result;
using base::Status;

// 127.77.0.0/24 in host byte order; route i listens on 127.77.0.(i + 2), and .1, .255 are
// never handed out (netns/hosts.h).
constexpr uint32_t kRouteNet = (127U << 24) | (77U << 16);
constexpr uint32_t kRouteMask = 0xffffff00U;
constexpr uint32_t kFirstHost = 2;
constexpr uint32_t kLastHost = 254;

constexpr std::string_view kUsage =
    "usage: ateam-sandbox supervise --route ADDR:PORT=SOCKET_PATH [--route ...]\n"
    "                               [--probe-timeout-ms N]\n"
    "                               [--landlock PARTS [--landlock-write PATH ...]]\n"
    "                               [--tty SOCKET_PATH [--tty-size ROWSxCOLS]]\n"
    "                               [--report SOCKET_PATH] -- CMD [ARGS...]\n"
    "Runs CMD as the tunnel supervisor (pid 1 of the sandbox): a private network namespace\n"
    "with only lo, one TCP listener per route on ADDR:PORT (127.77.0.2 .. 127.77.0.254)\n"
    "relayed to the Unix socket SOCKET_PATH. With --landlock (fs,net,scope), CMD may write\n"
    "only beneath each --landlock-write PATH and to the device files, connect over TCP\n"
    "only to the routes' ports, and signal or reach abstract sockets only in its own\n"
    "processes. With --tty, CMD runs in its own session on a terminal of the sandbox, whose\n"
    "master is sent over the Unix socket SOCKET_PATH. With --report, a CMD that cannot be\n"
    "started is reported over the Unix socket SOCKET_PATH. Exits with CMD's exit status\n"
    "(127 when CMD is missing, 126 when it cannot be executed).\n";

Error BadRoute(std::string_view text, const std::string& why) {
  return Error::Message("bad --route '" + std::string(text) + "': " + why);
}

bool InRouteRange(uint32_t v4) {
  const uint32_t host = v4 & ~kRouteMask;
  return (v4 & kRouteMask) == kRouteNet && host >= kFirstHost && host <= kLastHost;
}

Result<std::chrono::milliseconds> ParseProbeTimeout(std::string_view text) {
  int64_t ms = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, ms);
  if (text.empty() || ec != std::errc() || ptr != end || ms < 1 || ms > kMaxProbeTimeout.count()) {
    return Error::Message("bad --probe-timeout-ms '" + std::string(text) + "': expected 1.." +
                          std::to_string(kMaxProbeTimeout.count()));
  }
  return std::chrono::milliseconds(ms);
}

Result<relay::Endpoint> ParseSocketPath(std::string_view flag, std::string_view text) {
  if (text.empty() || text[0] != '/') {
    return Error::Message("bad " + std::string(flag) + " '" + std::string(text) +
                          "': the socket path must be absolute");
  }
  auto socket = relay::Endpoint::Unix(std::string(text));
  if (!socket)
    return socket.error().WithContext("bad " + std::string(flag) + " '" + std::string(text) + "'");
  return std::move(*socket);
}

Result<SuperviseTty> ParseTtySocket(std::string_view text) {
  auto socket = ParseSocketPath("--tty", text);
  if (!socket) return socket.error();
  return SuperviseTty{std::move(*socket)};
}

// "ROWSxCOLS", each 1..65535.
Status ParseTtySize(std::string_view text, SuperviseTty* tty) {
  const size_t x = text.find('x');
  auto number = [](std::string_view part, uint16_t* out) {
    uint32_t value = 0;
    const char* end = part.data() + part.size();
    auto [ptr, ec] = std::from_chars(part.data(), end, value);
    if (part.empty() || ec != std::errc() || ptr != end || value < 1 || value > UINT16_MAX) {
      return false;
    }
    *out = static_cast<uint16_t>(value);
    return true;
  };
  if (x == std::string_view::npos || !number(text.substr(0, x), &tty->rows) ||
      !number(text.substr(x + 1), &tty->cols)) {
    return Error::Message("bad --tty-size '" + std::string(text) + "': expected ROWSxCOLS");
  }
  return {};
}

Status CheckNoDuplicate(const std::vector<SuperviseRoute>& routes, const SuperviseRoute& route) {
  for (const SuperviseRoute& other : routes) {
    if (other.listen == route.listen) {
      return BadRoute(route.text, "address " + route.listen.ToString() + " used twice");
    }
  }
  return {};
}

Result<security::LandlockPolicy> ParseLandlockParts(std::string_view text) {
  security::LandlockPolicy policy;
  policy.fs = policy.net = policy.scope = false;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view part = text.substr(start, comma - start);
    if (part == "fs") {
      policy.fs = true;
    } else if (part == "net") {
      policy.net = true;
    } else if (part == "scope") {
      policy.scope = true;
    } else {
      return Error::Message("bad --landlock '" + std::string(text) +
                            "': expected a comma list of fs, net, scope");
    }
    start = comma + 1;
  }
  return policy;
}

// What every Landlock policy of the supervisor holds besides the written paths.
void CompleteLandlockPolicy(SuperviseConfig& config) {
  if (!config.landlock) return;
  for (const char* device : security::kLandlockDeviceFiles) {
    config.landlock->devices.emplace_back(device);
  }
  for (const SuperviseRoute& route : config.routes) {
    config.landlock->connect_ports.push_back(route.listen.port());
  }
  config.landlock->stdio_fds = {0, 1, 2};
}

}  // namespace

std::string_view SuperviseUsage() { return kUsage; }

Result<SuperviseRoute> ParseRoute(std::string_view text) {
  const size_t eq = text.find('=');
  if (eq == std::string_view::npos) return BadRoute(text, "expected ADDR:PORT=SOCKET_PATH");
  auto listen = relay::SocketAddress::Parse(text.substr(0, eq));
  if (!listen) return BadRoute(text, listen.error().Render());
  if (!listen->is_v4() || !InRouteRange(listen->v4())) {
    return BadRoute(text, "address " + listen->IpString() +
                              " is outside 127.77.0.0/24 (127.77.0.2 .. 127.77.0.254)");
  }
  std::string path(text.substr(eq + 1));
  if (path.empty() || path[0] != '/') {
    return BadRoute(text, "the socket path must be absolute");
  }
  auto target = relay::Endpoint::Unix(path);
  if (!target) return BadRoute(text, target.error().Render());
  return SuperviseRoute{*listen, std::move(*target), std::string(text)};
}

Result<SuperviseConfig> ParseSuperviseArgs(std::span<const std::string> args) {
  auto given = contract::ParseSupervisorArgs(args);
  if (!given) return given.error();
  SuperviseConfig config;
  if (given->help) {
    config.help = true;
    return config;
  }
  for (const contract::SupervisorRoute& text : given->routes) {
    auto route = ParseRoute(text.listen + "=" + text.socket);
    if (!route) return route.error();
    if (auto dup = CheckNoDuplicate(config.routes, *route); !dup) return dup.error();
    config.routes.push_back(std::move(*route));
  }
  if (given->probe_timeout) {
    auto ms = ParseProbeTimeout(*given->probe_timeout);
    if (!ms) return ms.error();
    config.probe_timeout = *ms;
  }
  for (const std::string& path : given->landlock_write) {
    if (path.empty() || path[0] != '/') {
      return Error::Message("bad --landlock-write '" + path + "': the path must be absolute");
    }
  }
  if (given->landlock) {
    auto policy = ParseLandlockParts(*given->landlock);
    if (!policy) return policy.error();
    config.landlock = std::move(*policy);
  }
  if (given->tty) {
    auto parsed = ParseTtySocket(*given->tty);
    if (!parsed) return parsed.error();
    config.tty = std::move(*parsed);
  }
  if (given->report) {
    auto socket = ParseSocketPath("--report", *given->report);
    if (!socket) return socket.error();
    config.report = std::move(*socket);
  }
  if (given->tty_size) {
    if (!config.tty) return Error::Message("--tty-size needs --tty");
    if (auto st = ParseTtySize(*given->tty_size, &*config.tty); !st) return st.error();
  }
  config.command = std::move(given->command);
  if (!given->landlock_write.empty() && !config.landlock) {
    return Error::Message("--landlock-write needs --landlock");
  }
  if (config.landlock) config.landlock->writable = std::move(given->landlock_write);
  CompleteLandlockPolicy(config);
  return config;
}

}  // namespace sbx::supervise
