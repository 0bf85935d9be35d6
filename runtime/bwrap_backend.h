// The bwrap backend: runs a Plan with the real bubblewrap binary instead of our native
// executor, so both can be compared on exactly the same plan (and as a fallback).
//
// How bwrap is started: the options (bwrap_render.h) go NUL-separated into a memfd that
// bwrap reads with `--args FD`; only `-- COMMAND ARGS...` stays on the real argv, because
// bwrap stops reading --args data at the first word that is not an option, so a command cannot come
// from there. Each seccomp program goes into its own memfd
// (--add-seccomp-fd). Those memfds are created close-on-exec and numbered above every fd
// the plan names (so an fd number the caller got wrong still fails in bwrap instead of
// reading our data); FD_CLOEXEC is cleared only in the process that execs bwrap, just
// before execve.
//
// Process contract: called in the parent, single-threaded (fork). The plan's own fds
// (--file, --bind-fd, --info-fd, --sync-fd, ...) are borrowed from the caller and must be
// open without FD_CLOEXEC, as they must be for real bwrap. Every other inherited fd goes
// to bwrap and on to the command too (bwrap's semantics), unless the plan says
// close_inherited_fds (`run`): then bwrap gets only the plan's fds and its memfds. bwrap inherits
// the caller's working directory, which its default --chdir fallback relies on (bwrap_render.h).
#pragma once

#include <string>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"
#include "runtime/plan.h"

namespace sbx::runtime {

// Everything an exec of bwrap needs, built before any fork. Owns the backend's fds.
struct BwrapInvocation {
  std::string path;                         // the bwrap binary
  std::vector<std::string> argv;            // path, "--args", N, "--", exec_file, argv[1..]
  std::vector<std::string> options;         // the content of the --args memfd, in order
  base::UniqueFd args_fd;                   // memfd, offset 0, FD_CLOEXEC set
  std::vector<base::UniqueFd> seccomp_fds;  // one memfd per plan.seccomp_programs entry
  // plan.close_inherited_fds: every other fd above 2 is marked close-on-exec just before
  // the exec, so bwrap (which passes its fds on to the command) gets only these.
  bool close_inherited_fds = false;
  std::vector<int> bwrap_fds;  // the plan's fds and the memfds above, sorted
};

// Checks that `bwrap_path` is executable ("bwrap backend: /usr/bin/bwrap not found: No
// such file or directory" otherwise), renders the plan and fills the memfds.
base::Result<BwrapInvocation> PrepareBwrapInvocation(const Plan& plan,
                                                     const std::string& bwrap_path);

// Child side: makes the invocation's fds (and, with close_inherited_fds, only those)
// survive the exec, then execs bwrap with `argv` (ArgvPointers). Returns execve's errno.
int ExecPrepared(const BwrapInvocation& invocation, char* const* argv) noexcept;
// The invocation's argv as the NULL-terminated array execve takes, built before a fork.
std::vector<char*> ArgvPointers(const BwrapInvocation& invocation);
// "bwrap backend: can't execute PATH: REASON".
base::Error ExecError(int err, const std::string& path);

// Replaces the calling process with bwrap running `plan` (the `--backend bwrap` path: the
// caller's exit status and messages are then bwrap's own). Returns only on failure.
base::Status ExecBwrap(const Plan& plan, const std::string& bwrap_path);

// Runs bwrap for `plan` as a child and waits for it. Returns bwrap's exit status (which
// bwrap already makes the command's status, or 128+signal, or 1 for its own failures),
// 128+signal if bwrap itself is killed, or an Error when bwrap cannot be started. While it
// waits the caller keeps its copies of the plan's fds (a --sync-fd peer sees EOF only
// when both bwrap and the caller have closed it); ExecBwrap has no such copy.
base::Result<int> LaunchWithBwrap(const Plan& plan, const std::string& bwrap_path);

}  // namespace sbx::runtime
