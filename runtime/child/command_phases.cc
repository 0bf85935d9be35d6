// The child's last phases: from a finished root to exec (and the pid-1 reaper).
#include <fcntl.h>
#include <linux/close_range.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <vector>

#include "base/exit_status.h"
#include "netns/loopback.h"
#include "runtime/child/child_steps.h"
#include "security/capabilities.h"
#include "security/seccomp.h"

extern char** environ;  // NOLINT: POSIX

namespace sbx::runtime::child {
namespace {

int ReadAll(int fd, security::BpfProgram* out) {
  uint8_t buf[8192];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n == 0) return 0;
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    out->insert(out->end(), buf, buf + n);
  }
}

int WaitForBlockFd(int fd) {
  char byte;
  while (::read(fd, &byte, 1) < 0) {
    if (errno != EINTR) return errno;
  }
  ::close(fd);
  return 0;
}

// chdir to the first candidate that works and publish it as PWD. Without --chdir the
// last candidate is "/", where the process already is after the pivot.
void EnterWorkingDirectory(const ChildLaunch& launch) {
  const Plan& plan = *launch.plan;
  size_t count = plan.cwd_candidates.size();
  size_t chosen = count - 1;
  for (size_t i = 0; i < count; ++i) {
    if (::chdir(plan.cwd_candidates[i].c_str()) == 0) {
      chosen = i;
      break;
    }
    if (plan.chdir_is_explicit) {
      Fail(launch, static_cast<uint32_t>(Phase::kChdir), {errno, Stage::kNone});
    }
  }
  launch.envp[launch.pwd_slot] = launch.pwd_entries[chosen];
}

// detail: the index of the lock file that failed.
StepResult TakeLockFiles(const Plan& plan) {
  for (size_t i = 0; i < plan.lock_files.size(); ++i) {
    const auto index = static_cast<uint32_t>(i);
    int fd = ::open(plan.lock_files[i].c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return {errno, Stage::kOpenLockFile, index};
    struct flock lock {};
    lock.l_type = F_RDLCK;
    lock.l_whence = SEEK_SET;
    if (::fcntl(fd, F_SETLK, &lock) != 0) return {errno, Stage::kLock, index};
    // The descriptor stays open in pid 1 for the sandbox's lifetime: that is the lock.
  }
  return {};
}

}  // namespace

void Fail(const ChildLaunch& launch, uint32_t step, StepResult r) noexcept {
  const SetupFailure failure{step, static_cast<uint32_t>(r.stage), r.err, r.detail};
  // The raw text (a symlink's differing target) follows the record; the parent reads both.
  const bool with_text = r.stage == Stage::kSymlinkExists;
  launch.report->Fail(failure, with_text ? launch.failure_text : nullptr,
                      with_text ? std::strlen(launch.failure_text) : 0);
}

StepResult ConfigureLoopback() noexcept {
  auto failure = netns::BringUpLoopback();
  if (!failure) return {};
  return {failure->err, Stage::kNone, static_cast<uint32_t>(failure->step)};
}

void ReaperMain(const Plan& plan, pid_t command_pid, int status_fd) noexcept {
  // The reaper keeps nothing the sandbox could use: no capabilities. It stays dumpable
  // (RunCommandPhases): its pid is the --info-fd child-pid, whose /proc/PID/ns files the
  // caller opens to join the sandbox (--userns, --pidns), as with bwrap's pid 1.
  (void)security::ClearAllCaps(/*tolerate_eperm=*/true);
  if (plan.die_with_parent) ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  int command_status = 0;
  for (;;) {
    int status = 0;
    pid_t pid = ::wait(&status);
    if (pid < 0) {
      if (errno == EINTR) continue;
      break;  // ECHILD: nothing left to reap
    }
    if (pid == command_pid) {
      command_status = status;
      if (status_fd >= 0) {
        (void)!::write(status_fd, &status, sizeof(status));
        ::close(status_fd);
        status_fd = -1;
      }
    }
  }
  ::_exit(base::ExitCodeFromWaitStatus(command_status));
}

namespace {

// What the command process does between the reaper's fork and exec. Also the whole tail
// when there is no reaper.
[[noreturn]] void ExecCommand(const ChildLaunch& launch,
                              const std::vector<security::BpfProgram>& programs) {
  const Plan& plan = *launch.plan;
  if (plan.sync_fd && !plan.as_pid_1) ::close(*plan.sync_fd);
  Check(launch, Phase::kCapabilities, security::ApplyCapPlanAmbient(plan.caps));
  Check(launch, Phase::kLoadSeccomp, security::LoadSeccompPrograms(programs));
  if (plan.close_inherited_fds) {
    Check(launch, Phase::kExec, ::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) == 0 ? 0 : errno);
  }
  environ = launch.envp;
  ::execvp(plan.exec_file.c_str(), launch.argv);
  Fail(launch, static_cast<uint32_t>(Phase::kExec), {errno, Stage::kNone});
}

struct CommandStart {
  const ChildLaunch* launch;
  const std::vector<security::BpfProgram>* programs;
};

int CommandEntry(void* arg) {
  auto* start = static_cast<CommandStart*>(arg);
  const ChildLaunch& launch = *start->launch;
  if (launch.status_fd >= 0) ::close(launch.status_fd);
  if (launch.plan->die_with_parent) ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  ExecCommand(launch, *start->programs);
}

// Starts the command as the reaper's child, vfork-style: CLONE_VM shares the reaper's
// memory and CLONE_VFORK suspends the reaper until the command has exec'd (or failed and
// exited), so no page tables are copied and neither side takes copy-on-write faults.
// The command only closes fds (its own table: no CLONE_FILES), makes per-task prctl and
// capability calls, installs seccomp and execs, none of which allocates or writes memory
// the reaper reads afterwards except `environ`, which the reaper never uses. It runs on its
// own stack, sized like posix_spawn's for execvp's script fallback (argv on the stack).
pid_t SpawnCommand(const ChildLaunch& launch, const std::vector<security::BpfProgram>& programs) {
  size_t argc = 0;
  while (launch.argv[argc] != nullptr) ++argc;
  const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  constexpr size_t kStackBase = size_t{64} * 1024;
  size_t stack_size = ((argc + 2) * sizeof(char*) + kStackBase + page - 1) / page * page;
  void* stack = ::mmap(nullptr, stack_size, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_NORESERVE, -1, 0);
  if (stack == MAP_FAILED) return -1;
  CommandStart start{&launch, &programs};
  pid_t pid = ::clone(CommandEntry, static_cast<char*>(stack) + stack_size,
                      CLONE_VM | CLONE_VFORK | SIGCHLD, &start);
  int err = errno;
  ::munmap(stack, stack_size);
  errno = err;
  return pid;
}

}  // namespace

void RunCommandPhases(const ChildLaunch& launch) noexcept {
  const Plan& plan = *launch.plan;
  Check(launch, Phase::kCapabilities, security::ApplyCapPlanSets(plan.caps));
  // Every privileged step is done. As bwrap after dropping its privileges: dumpable, so
  // that /proc/PID of this process (and of the reaper forked from it) belongs to the
  // sandbox's uid instead of root, and the caller may open /proc/PID/ns/* of the pid it
  // was given. A change of ids (SwitchToSandboxIds) or an unreadable executable made it
  // non-dumpable. The command's exec sets dumpability again from its own file.
  Check(launch, Phase::kSetDumpable, ::prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) == 0 ? 0 : errno);
  if (plan.block_fd) Check(launch, Phase::kBlockFd, WaitForBlockFd(*plan.block_fd));
  std::vector<security::BpfProgram> programs = plan.seccomp_programs;
  if (plan.seccomp_fd) {
    security::BpfProgram program;
    Check(launch, Phase::kReadSeccomp, ReadAll(*plan.seccomp_fd, &program));
    ::close(*plan.seccomp_fd);
    if (program.size() % 8 != 0) {
      Fail(launch, static_cast<uint32_t>(Phase::kReadSeccomp), {EINVAL, Stage::kWriteData});
    }
    programs.push_back(std::move(program));
  }
  ::umask(022);
  EnterWorkingDirectory(launch);
  if (plan.new_session) Check(launch, Phase::kNewSession, ::setsid() < 0 ? errno : 0);
  if (!plan.lock_files.empty()) Check(launch, Phase::kLockFile, TakeLockFiles(plan));
  if (plan.reaper) {
    pid_t pid = SpawnCommand(launch, programs);
    if (pid < 0) Fail(launch, static_cast<uint32_t>(Phase::kForkReaper), {errno, Stage::kNone});
    // pid 1 keeps --sync-fd open for the sandbox's lifetime; it needs no report pipe.
    launch.report->CloseWriteEnd();
    (void)security::LoadSeccompPrograms(programs);
    ReaperMain(plan, pid, launch.status_fd);
  }
  ExecCommand(launch, programs);
}

}  // namespace sbx::runtime::child
