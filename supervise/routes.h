// The `ateam-sandbox supervise` command line (contract/supervisor_contract.h reads its
// syntax), checked and parsed into plain data:
//   supervise --route ADDR:PORT=SOCKET_PATH [--route ...] [--probe-timeout-ms N]
//             [--landlock PARTS [--landlock-write PATH ...]]
//             [--tty SOCKET_PATH [--tty-size ROWSxCOLS]] [--report SOCKET_PATH]
//             -- CMD [ARGS...]
// e.g. `--route 127.77.0.2:443=/run/ateam-tunnel/route-0.sock`.
//
// Who calls it: RunSuperviseCommand, in the supervisor process before any setup step. Pure:
// no I/O, no syscalls, any thread. Errors are one-line messages without the program prefix.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "relay/endpoint.h"
#include "relay/socket_address.h"
#include "security/landlock.h"

namespace sbx::supervise {

// One route of the tunnel: the supervisor listens on `listen` inside the sandbox's network
// namespace and hands every connection over to the host relay's Unix socket `target`.
struct SuperviseRoute {
  relay::SocketAddress listen;  // 127.77.0.N:PORT, N in 2..254 (netns/hosts.h plan)
  relay::Endpoint target;       // unix:SOCKET_PATH, an absolute path
  std::string text;             // the --route value as given, to name the route in messages
};

// --tty: the agent gets a terminal of the sandbox's own devpts instance; its master goes to
// the host side of `run` over the Unix socket `socket` (supervise/agent_tty.h).
struct SuperviseTty {
  relay::Endpoint socket;  // unix:SOCKET_PATH, an absolute path
  uint16_t rows = 0;       // --tty-size; 0 x 0: left as the kernel makes it
  uint16_t cols = 0;
};

inline constexpr std::chrono::milliseconds kDefaultProbeTimeout{5000};
inline constexpr std::chrono::milliseconds kMaxProbeTimeout{600000};

struct SuperviseConfig {
  std::vector<SuperviseRoute> routes;  // command-line order; none is allowed
  std::chrono::milliseconds probe_timeout = kDefaultProbeTimeout;
  // --landlock PARTS (a comma list of fs, net, scope) restricts the agent with Landlock
  // (security/landlock.h): writes beneath each --landlock-write PATH (absolute, as seen
  // inside) and to the sandbox's device files, TCP connect to the routes' ports. Without
  // --landlock, none.
  std::optional<security::LandlockPolicy> landlock;
  std::optional<SuperviseTty> tty;  // --tty; none: the agent inherits fds 0-2
  // --report: where a command that could not be started is reported to `run`
  // (supervise/start_report.h); none: the supervisor says it on stderr.
  std::optional<relay::Endpoint> report;
  std::vector<std::string> command;  // argv of the agent, never empty
  bool help = false;                 // --help: print usage, run nothing
};

// Parses one --route value. Rejected: a missing '=', an address that is not numeric IPv4
// with a port (1..65535), an address outside 127.77.0.2..127.77.0.254, a relative or empty
// socket path, a path too long for sockaddr_un.
base::Result<SuperviseRoute> ParseRoute(std::string_view text);

// Parses the arguments after `supervise`. Options: --route VALUE / --route=VALUE (repeated),
// --probe-timeout-ms N / --probe-timeout-ms=N (1..600000), --landlock PARTS,
// --landlock-write PATH (repeated; needs --landlock), --tty SOCKET_PATH (absolute),
// --tty-size ROWSxCOLS (1..65535 each; only with --tty), --report SOCKET_PATH (absolute),
// --help. The command starts after
// `--`, or at the first argument that does not start with '-'. Rejected besides bad values:
// unknown options, a missing command, the same listen address twice.
base::Result<SuperviseConfig> ParseSuperviseArgs(std::span<const std::string> args);

// The usage text printed by --help.
std::string_view SuperviseUsage();

}  // namespace sbx::supervise
