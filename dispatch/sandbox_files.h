// The files `run` writes for the sandbox instead of showing the host's: a copy of the
// --credentials file and /etc/resolv.conf. Each is a sealed memfd; the sandbox setup (the
// native child, or bwrap's --ro-bind-data) copies it into a file of the sandbox's uid on a
// tmpfs of its own and binds that read-only at its place, so the agent can read it whatever
// uid it runs as, cannot write it, and never sees the host's file or its path.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "base/error.h"
#include "base/unique_fd.h"
#include "dispatch/layout.h"
#include "dispatch/request.h"

namespace sbx::dispatch {

// Credentials files are a few KiB; anything past this is refused rather than copied.
inline constexpr size_t kMaxCredentialsBytes = size_t{1} << 20;

// The content of the --credentials source `path` (absolute), as `flag_value` names it in
// messages. It is opened without following a symlink at its last component, must be a
// regular file of at most kMaxCredentialsBytes, readable by the caller. A root caller reads
// it only when every directory above it belongs to root or to the file's owner and nobody
// else can write there (a sticky one such as /var/tmp may be on the way), so that no other
// user can steer root's read to a file of root's. Every refusal is one line.
// `flag` names the option in messages (--broker-secret reads its files the same way).
base::Result<std::string> ReadCredentialsFile(const std::string& path,
                                              const std::string& flag_value, bool root_caller,
                                              std::string_view flag = "--credentials");

// What goes into /etc/resolv.conf inside: no server (the routes are in /etc/hosts), so the
// resolver falls back to the loopback address, where nothing listens, and any other name
// fails at once.
std::string SandboxResolvConf();

struct SandboxFiles {
  base::UniqueFd credentials;  // without --credentials: none
  base::UniqueFd resolv_conf;  // none when the host's /etc/resolv.conf can't be covered

  // Reads the credentials (ReadCredentialsFile, as a root caller when the effective uid is
  // 0) and writes both memfds, close-on-exec.
  static base::Result<SandboxFiles> Make(const DispatchRequest& request);
  // Hands their fds to the layout (BuildDispatchSpec binds them).
  void AddTo(DispatchHostPaths& paths) const;
};

}  // namespace sbx::dispatch
