#include "dispatch/host/namespace_preflight.h"

#include <sched.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#include <fmt/format.h>

namespace sbx::dispatch {

namespace {

// The child's exit status: errno of a refused mount (below 128), plus 128 when it was the
// /proc mount; 0 when both worked.
constexpr int kProcFlag = 128;

[[noreturn]] void PreflightChild() noexcept {
  // MS_SLAVE first so the test mounts stay in this namespace. An LSM that strips the new
  // namespace of its capabilities refuses the tmpfs; masked /proc paths (a container
  // runtime's over-mounts) make the kernel refuse a fresh /proc.
  if (::mount(nullptr, "/", nullptr, MS_SLAVE | MS_REC, nullptr) != 0 ||
      ::mount("tmpfs", "/tmp", "tmpfs", 0, nullptr) != 0) {
    ::_exit(errno & (kProcFlag - 1));
  }
  if (::mount("proc", "/tmp", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
    ::_exit(kProcFlag | (errno & (kProcFlag - 1)));
  }
  ::_exit(0);
}

}  // namespace

std::string NamespaceRefusedMessage(PreflightStep step, int err) {
  const char* what = step == PreflightStep::kCreate  ? "create the sandbox's namespaces"
                     : step == PreflightStep::kMount ? "mount in the sandbox's namespaces"
                                                     : "mount a fresh /proc for the sandbox";
  return fmt::format(
      "can't {} ({}): run `ateam-sandbox doctor` for what blocks it and how to fix it", what,
      std::strerror(err));  // NOLINT(concurrency-mt-unsafe): one thread sets up
}

base::Status CheckNamespacesAllowed() {
  // Plain clone, not clone3: container seccomp profiles answer clone3 with ENOSYS, and the
  // launcher falls back to clone the same way. The child makes only raw system calls.
  const long pid = ::syscall(SYS_clone, CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | SIGCHLD,
                             nullptr, nullptr, nullptr, nullptr);
  if (pid < 0) return base::Error::Message(NamespaceRefusedMessage(PreflightStep::kCreate, errno));
  if (pid == 0) PreflightChild();
  int status = 0;
  while (::waitpid(static_cast<pid_t>(pid), &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) == 0) return {};
  const int code = WEXITSTATUS(status);
  const PreflightStep step = (code & kProcFlag) != 0 ? PreflightStep::kProc : PreflightStep::kMount;
  return base::Error::Message(NamespaceRefusedMessage(step, code & (kProcFlag - 1)));
}

}  // namespace sbx::dispatch
