// The files `run` writes for the sandbox instead of showing the host's: a copy of each
// --credentials file, /etc/resolv.conf, and the agent preset's state in the home
// (dispatch/plan/agent_state.h). Each is a sealed memfd. The sandbox setup (the native
// child, or bwrap's --ro-bind-data) copies the first two into files of the sandbox's uid on
// a tmpfs of its own and binds those read-only at their places, so the agent can read them
// whatever uid it runs as, cannot write them, and never sees the host's file or its path;
// the state files are copied into the home (bwrap's --file), writable by the agent.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"
#include "dispatch/plan/agent_state.h"
#include "dispatch/plan/layout.h"
#include "dispatch/request/checks.h"
#include "dispatch/request/credentials_file.h"
#include "dispatch/request/request.h"

namespace sbx::dispatch {

// What goes into /etc/resolv.conf inside: no server (the routes are in /etc/hosts), so the
// resolver falls back to the loopback address, where nothing listens, and any other name
// fails at once.
std::string SandboxResolvConf();

struct SandboxFiles {
  struct Fd {
    std::string dest;  // relative to the home
    base::UniqueFd fd;
  };
  std::vector<Fd> credentials;  // one per --credentials
  std::vector<Fd> agent_state;  // the preset's state files
  base::UniqueFd resolv_conf;   // none when the host's /etc/resolv.conf can't be covered

  // Writes the memfds, close-on-exec: `credentials` are the --credentials files' contents
  // (CheckRequestPaths read them).
  static base::Result<SandboxFiles> Make(const std::vector<CredentialsCopy>& credentials,
                                         const std::vector<HomeFile>& agent_state);
  // Their fds for the layout (BuildDispatchSpec binds or copies them), borrowed.
  [[nodiscard]] std::vector<HomeFd> CredentialFds() const { return Borrow(credentials); }
  [[nodiscard]] std::vector<HomeFd> AgentStateFds() const { return Borrow(agent_state); }

 private:
  static std::vector<HomeFd> Borrow(const std::vector<Fd>& files);
};

}  // namespace sbx::dispatch
