#include "runtime/launcher.h"

#include <fcntl.h>
#include <linux/limits.h>
#include <poll.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "runtime/base/syscalls.h"
#include "runtime/base/unique_fd.h"
#include "runtime/child/child_main.h"
#include "runtime/failure_message.h"
#include "runtime/namespace_info.h"

namespace sbx::runtime {
namespace {

using base::Error;
using base::UniqueFd;

// The child uses malloc and libnl after clone: only safe when no other thread can hold
// an allocator or library lock at the moment of the clone.
bool IsSingleThreaded() {
  struct stat st {};
  return ::stat("/proc/self/task", &st) == 0 && st.st_nlink == 3;
}

// Memory the child reads after clone, built here so the child allocates nothing for it.
struct ChildMemory {
  std::vector<child::OpSources> sources;
  std::vector<char*> argv;
  std::vector<char*> envp;
  std::vector<std::string> pwd_strings;
  std::vector<char*> pwd_entries;
  std::string failure_text = std::string(PATH_MAX, '\0');

  explicit ChildMemory(const Plan& plan) : sources(plan.ops.size()) {
    for (const auto& arg : plan.argv) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    for (const auto& entry : plan.env) envp.push_back(const_cast<char*>(entry.c_str()));
    envp.push_back(nullptr);  // PWD slot, filled by the child
    envp.push_back(nullptr);
    for (const auto& dir : plan.cwd_candidates) pwd_strings.push_back("PWD=" + dir);
    for (auto& s : pwd_strings) pwd_entries.push_back(s.data());
  }
};

Error CloneError(int err, const Plan& plan) {
  bool userns = (plan.clone_flags & CLONE_NEWUSER) != 0;
  if (err == EINVAL && userns) {
    return Error::Message(
        "Creating new namespace failed, likely because the kernel does not support user "
        "namespaces.  bwrap must be installed setuid on such systems.");
  }
  if (err == EPERM && plan.mode == PrivilegeMode::kUnprivileged) {
    return Error::Message(
        "No permissions to create a new namespace, likely because the kernel does not allow "
        "non-privileged user namespaces. On e.g. debian this can be enabled with 'sysctl "
        "kernel.unprivileged_userns_clone=1'.");
  }
  if (err == ENOSPC) {
    return Error::Message(
        "Creating new namespace failed: nesting depth or /proc/sys/user/max_*_namespaces "
        "exceeded (ENOSPC)");
  }
  return {err, "Creating new namespace failed"};
}

// clone3 with fork semantics and a pidfd; plain clone + pidfd_open only where the kernel
// has no clone3.
pid_t CloneChild(const Plan& plan, int* pidfd) {
  base::Clone3Args args;
  args.flags = plan.clone_flags | CLONE_PIDFD;
  args.pidfd = reinterpret_cast<uint64_t>(pidfd);
  args.exit_signal = SIGCHLD;
  pid_t pid = base::Clone3(&args);
  if (pid >= 0 || errno != ENOSYS) return pid;
  pid = static_cast<pid_t>(
      ::syscall(SYS_clone, plan.clone_flags | SIGCHLD, nullptr, nullptr, nullptr, nullptr));
  if (pid > 0) *pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  return pid;
}

int ExitCodeFromWaitStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 255;
}

// Waits until the command is done: the reaper's report when there is one (the sandbox
// may go on with other processes, as with bwrap), else the child's own exit.
int WaitForCommand(int pidfd, int status_fd) {
  for (;;) {
    pollfd fds[2] = {{pidfd, POLLIN, 0}, {status_fd, POLLIN, 0}};
    if (::poll(fds, status_fd >= 0 ? 2 : 1, -1) < 0) {
      if (errno == EINTR) continue;
      return 255;
    }
    if (status_fd >= 0 && (fds[1].revents & (POLLIN | POLLHUP)) != 0) {
      int status = 0;
      if (::read(status_fd, &status, sizeof(status)) == sizeof(status)) {
        return ExitCodeFromWaitStatus(status);
      }
      status_fd = -1;  // the reaper went away without a report: wait for pid 1 itself
      continue;
    }
    siginfo_t info{};
    if (::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd), &info, WEXITED) != 0) {
      if (errno == EINTR) continue;
      return 255;
    }
    if (info.si_code == CLD_EXITED) return info.si_status;
    return 128 + info.si_status;
  }
}

// Reads the child's SetupFailure, if any. nullopt: EOF without bytes, the command runs.
std::optional<Error> ReadFailure(int report_fd, const Plan& plan) {
  SetupFailure failure;
  ssize_t n;
  do {
    n = ::read(report_fd, &failure, sizeof(failure));
  } while (n < 0 && errno == EINTR);
  if (n == 0) return std::nullopt;
  if (n != sizeof(failure)) return Error(errno, "Unexpected short read from the sandbox child");
  std::string text;
  if (static_cast<Stage>(failure.stage) == Stage::kSymlinkExists) {
    text.resize(failure.detail);
    ssize_t got = ::read(report_fd, text.data(), text.size());
    text.resize(got > 0 ? static_cast<size_t>(got) : 0);
  }
  return Error::Message(RenderFailure(plan, failure, text));
}

// Root callers' sandboxes run as an unprivileged host uid: only the monitor, still in
// the initial user namespace with CAP_SETUID, may write such a map.
base::Status WriteIdMapsFromParent(pid_t pid, const UserNamespacePlan& ns) {
  auto write = [pid](const char* file, const IdMapping& m) -> base::Status {
    std::string path = fmt::format("/proc/{}/{}", pid, file);
    std::string line = fmt::format("{} {} 1\n", m.inside, m.outside);
    UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
    if (!fd || ::write(fd.get(), line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
      return base::ErrnoError(fmt::format("setting up {}", file));
    }
    return {};
  };
  if (auto st = write("uid_map", ns.uid); !st) return st;
  return write("gid_map", ns.gid);
}

}  // namespace

StartedSandbox::~StartedSandbox() {
  if (done_ || !pidfd_) return;
  base::PidfdSendSignal(pidfd_.get(), SIGKILL);
  siginfo_t info{};
  ::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd_.get()), &info, WEXITED);
}

int StartedSandbox::Wait() {
  int code = WaitForCommand(pidfd_.get(), status_fd_.get());
  done_ = true;
  PublishExitCode(*plan_, code);
  return code;
}

void StartedSandbox::Signal(int sig) const { base::PidfdSendSignal(pidfd_.get(), sig); }

base::Result<StartedSandbox> Start(const Plan& plan) {
  if (!IsSingleThreaded()) return Error(EDEADLK, "Refusing to clone from a multi-threaded process");
  ChildMemory memory(plan);
  auto report = base::MakePipe();
  if (!report) return report.error();
  bool parent_maps = plan.userns && plan.userns->written_by_parent;
  bool parent_first = plan.info_fd || plan.json_status_fd || plan.userns_block_fd || parent_maps;
  base::FdPair go, status;
  if (parent_first) {
    auto p = base::MakePipe();
    if (!p) return p.error();
    go = std::move(*p);
  }
  if (plan.reaper) {
    auto p = base::MakePipe();
    if (!p) return p.error();
    status = std::move(*p);
  }
  UniqueFd self_pidfd;
  if (plan.die_with_parent) {
    self_pidfd.reset(static_cast<int>(::syscall(SYS_pidfd_open, ::getpid(), 0)));
    if (!self_pidfd) return base::ErrnoError("pidfd_open");
    // The monitor dies with its caller too; the child then dies with the monitor.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  }
  std::signal(SIGCHLD, SIG_DFL);  // a caller that ignores SIGCHLD would break waitid

  int raw_pidfd = -1;
  pid_t pid = CloneChild(plan, &raw_pidfd);
  if (pid < 0) return CloneError(errno, plan);
  if (pid == 0) {
    report.value().read_end.reset();
    go.write_end.reset();
    status.read_end.reset();
    child::ChildLaunch launch;
    launch.plan = &plan;
    launch.sources = memory.sources.data();
    launch.report_fd = report->write_end.get();
    launch.go_fd = go.read_end.get();
    launch.parent_pidfd = self_pidfd.get();
    launch.status_fd = status.write_end.get();
    launch.argv = memory.argv.data();
    launch.envp = memory.envp.data();
    launch.pwd_slot = memory.envp.size() - 2;
    launch.pwd_entries = memory.pwd_entries.data();
    launch.failure_text = memory.failure_text.data();
    child::ChildMain(launch);
  }
  StartedSandbox sandbox(plan, pid, UniqueFd(raw_pidfd), std::move(status.read_end));
  report->write_end.reset();
  go.read_end.reset();
  status.write_end.reset();
  self_pidfd.reset();

  if (parent_maps) {
    if (auto st = WriteIdMapsFromParent(pid, *plan.userns); !st) return st.error();
  }
  if (auto st = PublishNamespaceInfo(plan, pid); !st) return st.error();
  if (plan.userns_block_fd) {
    char byte;
    (void)!::read(*plan.userns_block_fd, &byte, 1);
  }
  go.write_end.reset();  // releases the child

  if (auto failure = ReadFailure(report->read_end.get(), plan)) return *failure;
  return sandbox;
}

base::Result<int> Launch(const Plan& plan) {
  auto sandbox = Start(plan);
  if (!sandbox) return sandbox.error();
  return sandbox->Wait();
}

}  // namespace sbx::runtime
