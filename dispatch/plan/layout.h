// The dispatch layout (docs/threat-model.md) as a runtime::SandboxSpec: read-only host system,
// throwaway home and /tmp, read-only credentials files, the tunnel directory, a generated
// /etc/hosts, the workspace and the out dir as the only writable places, an allowlisted
// environment, every namespace new (the network one is made by the supervisor, pid 1).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "base/error.h"
#include "contract/supervisor_contract.h"
#include "dispatch/request/request.h"
#include "runtime/spec.h"

namespace sbx::dispatch {

inline constexpr const char* kSandboxHome = "/home/ateam-sandbox";
using contract::kTunnelDir;  // the tunnel's layout inside: contract/supervisor_contract.h
// The commit identity git gets inside (GIT_AUTHOR_*, GIT_COMMITTER_*) unless --setenv
// gives another.
inline constexpr const char* kAgentGitName = "ateam agent";
inline constexpr const char* kAgentGitEmail = "agent@ateam-sandbox.invalid";
inline constexpr const char* kShmDir = "/dev/shm";  // its own tmpfs, sized apart from /dev
// The socket the agent's terminal is handed over on (--tty), in the state directory and in
// kTunnelDir.
using contract::kReportSocketName;
using contract::kTtySocketName;

// A file the setup writes into the home from an fd of `run`'s.
struct HomeFd {
  std::string dest;  // relative to the home
  int fd = -1;
};

// Everything resolved on the host before the layout is built.
struct DispatchHostPaths {
  std::string workspace;                   // absolute, exists
  std::string out;                         // absolute, exists
  std::string supervisor_binary;           // this executable
  std::vector<std::string> route_sockets;  // host paths, index = route index
  std::vector<std::string> route_listen;   // "127.77.0.N:PORT" per route
  int hosts_fd = -1;                       // the generated /etc/hosts (read by the child)
  std::vector<std::string> agent_binds;    // host paths bound read-only at the same place
  std::vector<std::string> host_env;       // the caller's environment (NAME=VALUE)
  std::vector<uint8_t> seccomp_program;    // the compiled default policy
  std::string agent_bin_dir;               // where the agent was found, outside /usr ("" otherwise)
  // The supervisor's --landlock options (landlock_plan.h); the layout adds the routes, the
  // terminal and the command.
  contract::SupervisorArgs supervisor_args;
  std::string sandbox_user = "ateam-sandbox";  // the agent's uid's name (USER, LOGNAME)
  std::string tty_socket = {};     // host path of the tty handover socket ("" without --tty)
  std::string report_socket = {};  // host path of the start report socket (start_report.h)
  std::string tty_size = {};       // "ROWSxCOLS" for the agent's terminal ("" unknown)
  // dispatch/host/sandbox_files.h: the copies of the --credentials files (one for each, in
  // order), the preset's state files and the generated /etc/resolv.conf (-1: the host's is
  // left as it is).
  std::vector<HomeFd> credentials = {};
  std::vector<HomeFd> agent_state = {};
  int resolv_conf_fd = -1;
  // The agent's environment, BuildSandboxEnvironment's (from the fields above): built once
  // per dispatch, for the agent's state files and the sandbox alike.
  std::vector<std::string> env = {};
};

// The agent's environment: HOME, PATH, the git identity, the preset's settings, the
// variables passed through from `paths.host_env`, --setenv last. Reads `paths`' workspace,
// out, agent_bin_dir, sandbox_user and host_env.
base::Result<std::vector<std::string>> BuildSandboxEnvironment(const DispatchRequest& request,
                                                               const DispatchHostPaths& paths);

base::Result<runtime::SandboxSpec> BuildDispatchSpec(const DispatchRequest& request,
                                                     const DispatchHostPaths& paths);

// The host's /usr, /etc and /bin, /lib... (or their merged-/usr symlinks), read-only: for
// the runtime's own small sandboxes (dispatch/git/harvest.h).
void AddReadOnlySystem(runtime::SandboxSpec& spec);

}  // namespace sbx::dispatch
