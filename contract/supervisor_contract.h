// What the host side of `run` (dispatch/) and the supervisor inside the sandbox
// (supervise/) agree on: where the tunnel's pieces are inside the sandbox, and the
// supervisor's command line. Both sides use this one type; the command line is written
// (WriteSupervisorArgs) and parsed (ParseSupervisorArgs) only here.
//
// The tunnel directory, a tmpfs at kTunnelDir that only the supervisor uses:
//   supervisor        this executable, bound read-only (the sandbox's pid 1 runs it)
//   route-N.sock      the host relay's Unix socket of route N (unmounted before the agent)
//   tty.sock          --tty: where the agent's terminal is handed over to the host
//   report.sock       --report: where a command that cannot start is reported to the host
//
// The command line (after `supervise`):
//   --route ADDR:PORT=SOCKET_PATH ... [--probe-timeout-ms N]
//   [--landlock PARTS [--landlock-write PATH ...]] [--tty SOCKET_PATH [--tty-size RxC]]
//   [--report SOCKET_PATH]
//   -- CMD [ARGS...]
// Parsing checks the syntax only (known options, their values present, a command);
// supervise/routes.h checks what the values mean. Pure: no I/O, any thread.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/error.h"

namespace sbx::contract {

inline constexpr const char* kTunnelDir = "/run/ateam-tunnel";
inline constexpr const char* kTtySocketName = "tty.sock";
inline constexpr const char* kReportSocketName = "report.sock";

// The supervisor's binary inside: kTunnelDir/supervisor.
std::string SupervisorBinaryInside();
// Route `index`'s socket inside: kTunnelDir/route-INDEX.sock.
std::string RouteSocketInside(size_t index);
// The terminal's socket inside: kTunnelDir/tty.sock.
std::string TtySocketInside();
// The start report's socket inside: kTunnelDir/report.sock.
std::string ReportSocketInside();

struct SupervisorRoute {
  std::string listen;  // "127.77.0.N:PORT"
  std::string socket;  // the Unix socket inside, e.g. RouteSocketInside(i)
  bool operator==(const SupervisorRoute&) const = default;
};

struct SupervisorArgs {
  std::vector<SupervisorRoute> routes;       // command-line order
  std::optional<std::string> probe_timeout;  // --probe-timeout-ms, as given
  std::optional<std::string> landlock;       // --landlock PARTS ("fs,net,scope")
  std::vector<std::string> landlock_write;   // --landlock-write PATH, in order
  std::optional<std::string> tty;            // --tty SOCKET_PATH
  std::optional<std::string> tty_size;       // --tty-size ROWSxCOLS
  std::optional<std::string> report;         // --report SOCKET_PATH
  std::vector<std::string> command;          // the agent's argv; never empty once parsed
  bool help = false;                         // --help or -h: nothing else is read
  bool operator==(const SupervisorArgs&) const = default;
};

// The arguments after `supervise`, in the order above.
std::vector<std::string> WriteSupervisorArgs(const SupervisorArgs& args);
// The whole command the sandbox's pid 1 runs: the binary inside, "supervise", the above.
std::vector<std::string> SupervisorCommand(const SupervisorArgs& args);

// Parses the arguments after `supervise`. Each option is `--name VALUE` or `--name=VALUE`;
// the command starts after `--`, or at the first argument that does not start with '-'.
// Errors: an unknown option, an option without its value, no command (one line each).
base::Result<SupervisorArgs> ParseSupervisorArgs(std::span<const std::string> args);

}  // namespace sbx::contract
