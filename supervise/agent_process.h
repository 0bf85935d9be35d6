// Starting the agent: the supervisor's only child it waits for.
//
// Who calls it: RunSupervisor, in the supervisor process (single-threaded) after every
// capability is dropped. The child inherits the environment, the cwd and fds 0-2 as they are;
// every other fd of the supervisor is close-on-exec.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"

namespace sbx::supervise {

struct AgentProcess {
  pid_t pid = -1;
  base::UniqueFd pidfd;  // owned; readable when the agent exits
  int exec_errno = 0;    // exec's errno when the command could not be started (the child exited)
};

// The exit code of a command exec could not start, as shells give it: 127 when it is
// missing (ENOENT, ENOTDIR), 126 when it is there but cannot be executed.
int ExecFailureExitCode(int err) noexcept;

// Forks (clone3 with CLONE_PIDFD, or fork + pidfd_open where clone3 is refused with ENOSYS)
// and execvp's `command` in the child, after resetting every signal disposition to default
// and unblocking every signal. When exec fails the child _exits with ExecFailureExitCode,
// after writing "ateam-sandbox supervise: cannot run CMD: <strerror>" to stderr unless
// `report_exec_failure` (the caller reports it instead); the parent waits for the exec and
// returns its errno in `exec_errno`.
// `command` must not be empty. With `tty_slave` (borrowed, close-on-exec; -1 for none) the
// child first becomes a session leader with it as controlling terminal and fds 0-2
// (AttachControllingTty); when that fails it writes "... cannot give CMD its terminal: ..."
// and _exits 127. With a `landlock_ruleset` fd (security::CreateLandlockRuleset) the child
// then restricts itself with it right before exec; when that fails it writes
// "ateam-sandbox supervise: cannot apply Landlock: <strerror>" and _exits 125.
base::Result<AgentProcess> SpawnAgent(const std::vector<std::string>& command, int tty_slave = -1,
                                      int landlock_ruleset = -1, bool report_exec_failure = false);

}  // namespace sbx::supervise
