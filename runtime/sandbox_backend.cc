#include "runtime/sandbox_backend.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "base/child_process.h"
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
  // The pidfd taken while bwrap held its child (HoldSupervisor), else bwrap's child now.
  [[nodiscard]] base::UniqueFd SupervisorPidfd() const override {
    if (supervisor_) return base::UniqueFd(::fcntl(supervisor_.get(), F_DUPFD_CLOEXEC, 3));
    return ChildPidfd();
  }
  [[nodiscard]] int pidfd() const override { return pidfd_.get(); }
  // bwrap itself passes nothing on: every signal but SIGKILL goes to its only child, the
  // sandbox's pid 1 (--as-pid-1).
  void Signal(int sig) const override {
    if (sig != SIGKILL) {
      if (base::UniqueFd supervisor = SupervisorPidfd(); supervisor) {
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

  // Keeps a pidfd of the supervisor, bwrap's child, before it can run anything: `info` is
  // bwrap's --info-fd, which it writes and closes right after its clone (EOF comes sooner
  // only when bwrap failed), and its child waits on --block-fd, after its mounts and
  // before the command, until `release` goes. So the pidfd refers to the supervisor from
  // its first instruction on, also after bwrap has reaped it, and the channels' peer check
  // (relay/peer_check.h) holds a late handover to it, not to whatever lives now.
  void HoldSupervisor(base::UniqueFd info, base::UniqueFd release) {
    char document[512];
    for (;;) {
      const ssize_t n = ::read(info.get(), document, sizeof document);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
    }
    supervisor_ = ChildPidfd();
    release.reset();
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
  base::UniqueFd supervisor_;  // HoldSupervisor's
  bool reaped_ = false;
};

// The steps of the child that becomes bwrap, as its report names them.
enum class BwrapChildStep : uint32_t { kEnterCgroups = 1, kSwitchIds, kExec };

class Bwrap final : public SandboxBackend {
 public:
  explicit Bwrap(std::string path) : path_(std::move(path)) {}

  [[nodiscard]] base::Result<std::unique_ptr<SandboxProcess>> Start(
      const Plan& plan) const override {
    if (plan.info_fd || plan.block_fd) {
      return base::Error(EINVAL, "bwrap backend: --info-fd and --block-fd are its own");
    }
    // The pipes by which bwrap's child is held until we have its pidfd (HoldSupervisor):
    // bwrap gets the write end of `info` and the read end of `hold`.
    Plan held = plan;
    auto info = base::MakePipe();
    if (!info) return info.error().WithContext("bwrap backend: --info-fd");
    auto hold = base::MakePipe();
    if (!hold) return hold.error().WithContext("bwrap backend: --block-fd");
    held.info_fd = info->write_end.get();
    held.block_fd = hold->read_end.get();
    // Everything that allocates happens here, before the clone: the child only makes
    // system calls until it execs.
    auto invocation = PrepareBwrapInvocation(held, path_);
    if (!invocation) return invocation.error();
    std::vector<char*> argv = ArgvPointers(*invocation);
    auto report = base::ChildReport::Open();
    if (!report) return report.error();
    // A child that becomes bwrap; our pidfd of it is the handle.
    auto child = base::CloneWithPidfd(0, "the bwrap backend's child");
    if (!child) return child.error();
    if (child->pid == 0) BecomeBwrap(held, *invocation, argv.data(), *report);
    report->CloseWriteEnd();
    // Only bwrap holds these now, so EOF on `info` comes when bwrap closed it or ended.
    info->write_end.reset();
    hold->read_end.reset();
    // From here a failure kills and reaps the child with its handle.
    auto process = std::make_unique<BwrapProcess>(child->pid, std::move(child->pidfd));
    auto failure = report->Read();
    if (!failure) return failure.error();
    if (*failure) return StepError(plan, **failure);
    process->HoldSupervisor(std::move(info->read_end), std::move(hold->write_end));
    return std::unique_ptr<SandboxProcess>(std::move(process));
  }

 private:
  [[noreturn]] static void BecomeBwrap(const Plan& plan, const BwrapInvocation& invocation,
                                       char* const* argv, base::ChildReport& report) noexcept {
    report.CloseReadEnd();
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    // Into the dispatch's cgroups before anything else runs, and while still the caller
    // (a cgroup v1 is root's to write): "0" moves the writer itself.
    if (int err = base::EnterCgroups(plan.cgroup_procs_fds, 0); err != 0) {
      report.Fail(static_cast<uint32_t>(BwrapChildStep::kEnterCgroups), err);
    }
    // bwrap cannot map the sandbox onto another host uid, so for a root caller it runs
    // as the run-as (or leased) host user itself: the sandbox is then that user, never
    // host root, and the user namespace bwrap makes is that uid's alone. Inside, bwrap's
    // --uid/--gid give the agent its ids (bwrap_render.cc).
    if (plan.userns && plan.userns->written_by_parent) {
      if (int err = base::SwitchToIds(plan.userns->uid.outside, plan.userns->gid.outside)) {
        report.Fail(static_cast<uint32_t>(BwrapChildStep::kSwitchIds), err);
      }
      // Credentials changed: the parent-death signal was cleared; set it again.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    }
    // The rlimits that hold across bwrap's exec and mean the same there (RLIMIT_NPROC
    // would count the caller's processes outside the sandbox too). Best effort, as before
    // bwrap: the sandbox's own child lowers them again and reports a failure.
    for (const auto& limit : plan.self_limits.rlimits) {
      if (limit.resource != RLIMIT_NPROC) (void)base::LowerRlimit(limit.resource, limit.value);
    }
    report.Fail(static_cast<uint32_t>(BwrapChildStep::kExec), ExecPrepared(invocation, argv));
  }

  [[nodiscard]] base::Error StepError(const Plan& plan, const base::ChildFailure& failure) const {
    switch (static_cast<BwrapChildStep>(failure.step)) {
      case BwrapChildStep::kEnterCgroups:
        return {failure.err, "can't enter the dispatch's cgroup"};
      case BwrapChildStep::kSwitchIds:
        return {failure.err, "can't switch to uid",
                plan.userns ? std::to_string(plan.userns->uid.outside) : std::string()};
      case BwrapChildStep::kExec:
        break;
    }
    return ExecError(failure.err, path_);
  }

  std::string path_;
};

}  // namespace

std::unique_ptr<SandboxBackend> NativeBackend() { return std::make_unique<Native>(); }

std::unique_ptr<SandboxBackend> BwrapBackend(std::string bwrap_path) {
  return std::make_unique<Bwrap>(std::move(bwrap_path));
}

}  // namespace sbx::runtime
