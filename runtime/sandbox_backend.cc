#include "runtime/sandbox_backend.h"

#include <fcntl.h>
#include <grp.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "base/syscalls.h"
#include "base/unique_fd.h"
#include "runtime/bwrap_backend.h"
#include "runtime/launcher.h"

namespace sbx::runtime {
namespace {

class NativeProcess final : public SandboxProcess {
 public:
  explicit NativeProcess(StartedSandbox started) : started_(std::move(started)) {}
  [[nodiscard]] int pidfd() const override { return started_.pidfd(); }
  void Signal(int sig) const override { base::PidfdSendSignal(started_.pidfd(), sig); }
  siginfo_t Reap() override {
    siginfo_t info{};
    ::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(started_.pidfd()), &info, WEXITED);
    started_.MarkReaped();
    return info;
  }
  [[nodiscard]] base::UniqueFd SupervisorPidfd() const override {
    return base::UniqueFd(::fcntl(started_.pidfd(), F_DUPFD_CLOEXEC, 3));
  }

 private:
  StartedSandbox started_;
};

class Native final : public SandboxBackend {
 public:
  [[nodiscard]] base::Result<std::unique_ptr<SandboxProcess>> Start(
      const Plan& plan) const override {
    auto started = runtime::Start(plan);
    if (!started) return started.error();
    return std::unique_ptr<SandboxProcess>(new NativeProcess(std::move(*started)));
  }
};

class BwrapProcess final : public SandboxProcess {
 public:
  BwrapProcess(pid_t pid, base::UniqueFd pidfd) : pid_(pid), pidfd_(std::move(pidfd)) {}
  BwrapProcess(const BwrapProcess&) = delete;
  BwrapProcess& operator=(const BwrapProcess&) = delete;
  // Not reaped (a run that ends early): the sandbox goes with its handle, as the native
  // one does (StartedSandbox), so none of its processes outlives the caller's cleanup.
  ~BwrapProcess() override {
    if (reaped_) return;
    base::PidfdSendSignal(pidfd_.get(), SIGKILL);
    siginfo_t info{};
    ::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd_.get()), &info, WEXITED);
  }
  [[nodiscard]] base::UniqueFd SupervisorPidfd() const override { return ChildPidfd(); }
  [[nodiscard]] int pidfd() const override { return pidfd_.get(); }
  // bwrap itself passes nothing on: every signal but SIGKILL goes to its only child, the
  // sandbox's pid 1 (--as-pid-1).
  void Signal(int sig) const override {
    if (sig != SIGKILL) {
      if (base::UniqueFd supervisor = ChildPidfd(); supervisor) {
        base::PidfdSendSignal(supervisor.get(), sig);
        return;
      }
    }
    base::PidfdSendSignal(pidfd_.get(), sig);
  }
  siginfo_t Reap() override {
    siginfo_t info{};
    ::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd_.get()), &info, WEXITED);
    reaped_ = true;
    return info;
  }

 private:
  // bwrap's child, from /proc/<bwrap>/task/<bwrap>/children, as a pidfd (checked to be
  // still bwrap's child after it was opened, so a recycled pid is never signalled).
  [[nodiscard]] base::UniqueFd ChildPidfd() const {
    std::ifstream children(fmt::format("/proc/{}/task/{}/children", pid_, pid_));
    pid_t child = 0;
    if (!(children >> child) || child <= 0) return {};
    base::UniqueFd fd(base::PidfdOpen(child));
    if (base::ParentPidOf(child) != pid_) return {};
    return fd;
  }

  pid_t pid_;
  base::UniqueFd pidfd_;
  bool reaped_ = false;
};

class Bwrap final : public SandboxBackend {
 public:
  Bwrap(std::string path, std::string prefix, int failure_exit)
      : path_(std::move(path)), prefix_(std::move(prefix)), failure_exit_(failure_exit) {}

  [[nodiscard]] base::Result<std::unique_ptr<SandboxProcess>> Start(
      const Plan& plan) const override {
    // A child that becomes bwrap; our pidfd of it is the handle.
    int pidfd = -1;
    base::Clone3Args args;
    args.flags = CLONE_PIDFD;
    args.pidfd = reinterpret_cast<uint64_t>(&pidfd);
    args.exit_signal = SIGCHLD;
    pid_t pid = base::Clone3(&args);
    // Container seccomp profiles answer clone3 with ENOSYS to send callers back to clone.
    if (pid < 0 && errno == ENOSYS) {
      pid = static_cast<pid_t>(::fork());
      if (pid > 0) pidfd = base::PidfdOpen(pid);
    }
    if (pid < 0) return base::ErrnoError("clone3 for the bwrap backend");
    if (pid == 0) BecomeBwrap(plan);
    return std::unique_ptr<SandboxProcess>(new BwrapProcess(pid, base::UniqueFd(pidfd)));
  }

 private:
  [[noreturn]] void BecomeBwrap(const Plan& plan) const {
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    // Into the dispatch's cgroups before anything else runs, and while still the caller
    // (a cgroup v1 is root's to write): "0" moves the writer itself.
    for (int fd : plan.cgroup_procs_fds) {
      if (::write(fd, "0", 1) != 1) {
        fmt::print(stderr, "{}: can't enter the dispatch's cgroup: {}\n", prefix_,
                   std::strerror(errno));  // NOLINT(concurrency-mt-unsafe)
        ::_exit(failure_exit_);
      }
    }
    // bwrap cannot map the sandbox onto another host uid, so for a root caller it runs
    // as the run-as (or leased) host user itself: the sandbox is then that user, never
    // host root, and the user namespace bwrap makes is that uid's alone. Inside, bwrap's
    // --uid/--gid give the agent its ids (bwrap_render.cc).
    if (plan.userns && plan.userns->written_by_parent) {
      const uid_t uid = plan.userns->uid.outside;
      const gid_t gid = plan.userns->gid.outside;
      if (::setgroups(0, nullptr) != 0 || ::setresgid(gid, gid, gid) != 0 ||
          ::setresuid(uid, uid, uid) != 0) {
        fmt::print(stderr, "{}: can't switch to uid {}: {}\n", prefix_, uid,
                   std::strerror(errno));  // NOLINT(concurrency-mt-unsafe)
        ::_exit(failure_exit_);
      }
      // Credentials changed: the parent-death signal was cleared; set it again.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    }
    // The rlimits that hold across bwrap's exec and mean the same there (RLIMIT_NPROC
    // would count the caller's processes outside the sandbox too).
    for (const auto& limit : plan.self_limits.rlimits) {
      if (limit.resource == RLIMIT_NPROC) continue;
      rlimit current{};
      if (::getrlimit(static_cast<__rlimit_resource>(limit.resource), &current) != 0) continue;
      rlimit lowered{std::min<rlim_t>(current.rlim_cur, limit.value),
                     std::min<rlim_t>(current.rlim_max, limit.value)};
      (void)::setrlimit(static_cast<__rlimit_resource>(limit.resource), &lowered);
    }
    auto st = ExecBwrap(plan, path_);
    fmt::print(stderr, "{}: {}\n", prefix_, st.error().Render());
    ::_exit(failure_exit_);
  }

  std::string path_;
  std::string prefix_;
  int failure_exit_;
};

}  // namespace

std::unique_ptr<SandboxBackend> NativeBackend() { return std::make_unique<Native>(); }

std::unique_ptr<SandboxBackend> BwrapBackend(std::string bwrap_path, std::string message_prefix,
                                             int failure_exit) {
  return std::make_unique<Bwrap>(std::move(bwrap_path), std::move(message_prefix), failure_exit);
}

}  // namespace sbx::runtime
