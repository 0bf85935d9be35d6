#include "supervise/agent_process.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#include "base/child_process.h"
#include "security/landlock.h"
#include "supervise/agent_tty.h"

namespace sbx::supervise {
namespace {

constexpr int kExecFailedExit = 127;
constexpr int kLandlockFailedExit = 125;  // a setup failure: the agent never ran

// Child side: undoes what the supervisor did to signals (blocked SIGCHLD/SIGTERM/SIGINT,
// ignored SIGPIPE) and anything the runtime left ignored, so the agent starts as a normal
// process would. Async-signal-safe calls only.
void ResetSignals() noexcept {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    (void)::sigaction(sig, &dfl, nullptr);  // EINVAL for glibc's reserved signals: fine
  }
  sigset_t none;
  sigemptyset(&none);
  (void)::sigprocmask(SIG_SETMASK, &none, nullptr);
}

void WriteAll(const char* text, size_t len) noexcept {
  while (len > 0) {
    ssize_t n = ::write(STDERR_FILENO, text, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    text += n;
    len -= static_cast<size_t>(n);
  }
}

[[noreturn]] void FailChild(const std::string& prefix, int err,
                            int exit_code = kExecFailedExit) noexcept {
  const char* reason = std::strerror(err);  // NOLINT(concurrency-mt-unsafe): one thread
  WriteAll(prefix.data(), prefix.size());
  WriteAll(reason, std::strlen(reason));
  WriteAll("\n", 1);
  ::_exit(exit_code);
}

// What the child needs, all built before the fork, so that nothing there allocates or
// formats beyond strerror.
struct ChildPlan {
  char* const* argv;
  const std::string& prefix;  // "": the exec failure is reported, not said
  int tty_slave;
  const std::string& tty_prefix;
  int landlock_ruleset;
  int exec_error_pipe;  // write end, close-on-exec: exec's errno when it fails
};

const std::string kLandlockPrefix = "ateam-sandbox supervise: cannot apply Landlock: ";

// Child side: never returns. Landlock comes last before exec: the supervisor's own process
// (the parent) is never restricted, and the terminal is attached before the ruleset could
// refuse anything.
[[noreturn]] void ExecAgent(const ChildPlan& plan) noexcept {
  if (plan.tty_slave >= 0) {
    if (int err = AttachControllingTty(plan.tty_slave); err != 0) {
      FailChild(plan.tty_prefix, err);
    }
  }
  ResetSignals();
  if (plan.landlock_ruleset >= 0) {
    if (int err = security::RestrictSelfWithLandlock(plan.landlock_ruleset); err != 0) {
      FailChild(kLandlockPrefix, err, kLandlockFailedExit);
    }
  }
  ::execvp(plan.argv[0], plan.argv);
  const int err = errno;
  // The parent learns exec's errno here; a successful exec closes the pipe instead.
  (void)::write(plan.exec_error_pipe, &err, sizeof(err));
  const int code = ExecFailureExitCode(err);
  if (plan.prefix.empty()) ::_exit(code);
  FailChild(plan.prefix, err, code);
}

// The parent's side of the exec error pipe: exec's errno, or 0 once the pipe closed without
// one (the exec succeeded, or the child failed before it and said why itself).
int ReadExecError(int fd) {
  int err = 0;
  for (;;) {
    ssize_t n = ::read(fd, &err, sizeof(err));
    if (n < 0 && errno == EINTR) continue;
    return n == static_cast<ssize_t>(sizeof(err)) ? err : 0;
  }
}

}  // namespace

int ExecFailureExitCode(int err) noexcept {
  // As shells do: 127 for a command that is not there, 126 for one that cannot be run.
  return err == ENOENT || err == ENOTDIR ? kExecFailedExit : kExecFailedExit - 1;
}

base::Result<AgentProcess> SpawnAgent(const std::vector<std::string>& command, int tty_slave,
                                      int landlock_ruleset, bool report_exec_failure) {
  std::vector<char*> argv;
  argv.reserve(command.size() + 1);
  for (const std::string& arg : command) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  const std::string prefix = report_exec_failure
                                 ? std::string()
                                 : "ateam-sandbox supervise: cannot run " + command.front() + ": ";
  const std::string tty_prefix =
      "ateam-sandbox supervise: cannot give " + command.front() + " its terminal: ";
  int error_pipe[2] = {-1, -1};
  if (::pipe2(error_pipe, O_CLOEXEC) != 0) return base::ErrnoError("Can't make a pipe");
  base::UniqueFd error_read(error_pipe[0]);
  base::UniqueFd error_write(error_pipe[1]);

  // The pidfd exists from the agent's first instant, so no signal can reach a recycled pid.
  auto child = base::CloneWithPidfd(0, command.front().c_str());
  if (!child) return base::Error(child.error().err(), "Can't fork the agent", command.front());
  if (child->pid == 0) {
    ExecAgent({argv.data(), prefix, tty_slave, tty_prefix, landlock_ruleset, error_write.get()});
  }
  error_write.reset();
  AgentProcess agent;
  agent.pid = child->pid;
  // Until the child's exec, which is quick: what it runs next is the agent.
  agent.exec_errno = ReadExecError(error_read.get());
  agent.pidfd = std::move(child->pidfd);
  return agent;
}

}  // namespace sbx::supervise
