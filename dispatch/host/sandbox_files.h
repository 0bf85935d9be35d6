// The files `run` writes for the sandbox instead of showing the host's: a copy of the
// --credentials file and /etc/resolv.conf. Each is a sealed memfd; the sandbox setup (the
// native child, or bwrap's --ro-bind-data) copies it into a file of the sandbox's uid on a
// tmpfs of its own and binds that read-only at its place, so the agent can read it whatever
// uid it runs as, cannot write it, and never sees the host's file or its path.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "base/error.h"
#include "base/unique_fd.h"
#include "dispatch/plan/layout.h"
#include "dispatch/request/credentials_file.h"
#include "dispatch/request/request.h"

namespace sbx::dispatch {

// What goes into /etc/resolv.conf inside: no server (the routes are in /etc/hosts), so the
// resolver falls back to the loopback address, where nothing listens, and any other name
// fails at once.
std::string SandboxResolvConf();

struct SandboxFiles {
  base::UniqueFd credentials;  // without --credentials: none
  base::UniqueFd resolv_conf;  // none when the host's /etc/resolv.conf can't be covered

  // Writes both memfds, close-on-exec: `credentials` is the --credentials file's content
  // (CheckRequestPaths read it), none without the flag.
  static base::Result<SandboxFiles> Make(const std::optional<std::string>& credentials);
  // Hands their fds to the layout (BuildDispatchSpec binds them).
  void AddTo(DispatchHostPaths& paths) const;
};

}  // namespace sbx::dispatch
