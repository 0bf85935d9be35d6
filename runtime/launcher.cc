#include "runtime/launcher.h"

#include <fcntl.h>
#include <linux/limits.h>
#include <poll.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/child_process.h"
#include "base/exit_status.h"
#include "base/syscalls.h"
#include "base/unique_fd.h"
#include "runtime/child/child_main.h"
#include "runtime/child/netns_helper.h"
#include "runtime/failure_message.h"
#include "runtime/joined_namespaces.h"
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
  // bwrap words EPERM this way whenever it asked for a user namespace (it is never
  // setuid here); with --userns no user namespace is created and the generic text follows.
  if (err == EPERM && userns) {
    return Error::Message(
        "No permissions to create a new namespace, likely because the kernel does not allow "
        "non-privileged user namespaces. On e.g. debian this can be enabled with 'sysctl "
        "kernel.unprivileged_userns_clone=1'.");
  }
  return NamespaceCreationError(err);
}

// The network namespace may come from a helper instead (runtime/child/netns_helper.h).
uint64_t CloneFlags(const Plan& plan) {
  return plan.clone_flags & ~(NetnsFromHelper(plan) ? CLONE_NEWNET : 0ULL);
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
        return base::ExitCodeFromWaitStatus(status);
      }
      status_fd = -1;  // the reaper went away without a report: wait for pid 1 itself
      continue;
    }
    siginfo_t info{};
    if (::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd), &info, WEXITED) != 0) {
      if (errno == EINTR) continue;
      return 255;
    }
    return base::ExitCodeFromSiginfo(info);
  }
}

// Reads the child's SetupFailure, if any. nullopt: EOF without bytes, the command runs.
std::optional<Error> ReadFailure(const base::ChildReport& report, const Plan& plan) {
  auto failure = report.Read();
  if (!failure) return Error(failure.error().err(), "Unexpected short read from the sandbox child");
  if (!*failure) return std::nullopt;
  std::string text;
  if (static_cast<Stage>((*failure)->stage) == Stage::kSymlinkExists) {
    text = report.ReadText((*failure)->detail);
  }
  return Error::Message(RenderFailure(plan, **failure, text));
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

// --pidns: learns which process the sandbox is (the child's descendant in the joined pid
// namespace) and takes it over. On failure the child's own report, if it wrote one, comes
// first, as bwrap prints the child's message before the monitor's.
base::Status FollowIntoPidNamespace(const Plan& plan, int socket_fd,
                                    const base::ChildReport& report, StartedSandbox* sandbox) {
  auto pid = ReceivePid(socket_fd);
  if (!pid) {
    std::string text = pid.error().Render();
    if (auto child = ReadFailure(report, plan)) text = child->Render() + "\n" + text;
    return Error::Message(text);
  }
  UniqueFd pidfd(base::PidfdOpen(*pid));
  if (!pidfd) return base::ErrnoError("pidfd_open");
  AdoptSandboxProcess(sandbox->pidfd(), *pid);
  sandbox->FollowTo(*pid, std::move(pidfd));
  return {};
}

// Reads the namespace ids for --info-fd/--json-status-fd now (before --userns2 changes
// this process's view), as bwrap does. With --pidns --unshare-pid the new pid namespace
// counts as created, although the clone did not create it.
base::Result<std::optional<NamespaceIds>> ReadIdsToPublish(const Plan& plan, pid_t pid) {
  if (!plan.info_fd && !plan.json_status_fd) return std::optional<NamespaceIds>();
  Plan created;
  created.clone_flags = plan.clone_flags | (plan.joined.new_pidns_below ? CLONE_NEWPID : 0);
  auto ids = ReadNamespaceIds(created, pid);
  if (!ids) return ids.error();
  return std::optional<NamespaceIds>(std::move(*ids));
}

// The monitor's part between clone and releasing the child, in bwrap's order: maps
// written from outside, namespace ids, --userns2, the --info-fd/--json-status-fd
// documents, --userns-block-fd.
base::Status PrepareRelease(const Plan& plan, pid_t pid) {
  // First: everything the child does from here on, and every process it makes, is charged
  // to (and limited by) the dispatch's cgroups.
  if (int err = base::EnterCgroups(plan.cgroup_procs_fds, pid); err != 0) {
    return Error(err, "Can't move the sandbox into its cgroup");
  }
  if (plan.userns && plan.userns->written_by_parent) {
    if (auto st = WriteIdMapsFromParent(pid, *plan.userns); !st) return st.error();
  }
  auto ids = ReadIdsToPublish(plan, pid);
  if (!ids) return ids.error();
  if (plan.joined.userns2_fd && ::setns(*plan.joined.userns2_fd, CLONE_NEWUSER) != 0) {
    return base::ErrnoError("Setting userns2 failed");
  }
  if (*ids) {
    if (auto st = PublishNamespaceIds(plan, **ids); !st) return st.error();
  }
  if (plan.userns_block_fd) {
    char byte;
    (void)!::read(*plan.userns_block_fd, &byte, 1);
  }
  return {};
}

}  // namespace

void StartedSandbox::FollowTo(pid_t pid, base::UniqueFd pidfd) {
  pid_ = pid;
  pidfd_ = std::move(pidfd);
}

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

namespace {

// The monitor's ends and the child's ends of every channel between them.
struct LaunchFds {
  base::ChildReport report;      // child -> monitor: SetupFailure, EOF on exec
  base::FdPair go = {};          // monitor -> child: EOF releases it (only when parent_first)
  base::FdPair status = {};      // reaper -> monitor: the command's wait status
  base::FdPair pid_socket = {};  // --pidns: the sandbox's final process sends its pid
  base::FdPair netns = {};       // NetnsFromHelper: both ends the child's (it forks the helper)
  UniqueFd self_pidfd = {};      // --die-with-parent: the child watches the monitor
};

// Everything the monitor does before clone, in bwrap's order.
base::Result<LaunchFds> PrepareMonitor(const Plan& plan) {
  auto report = base::ChildReport::Open();
  if (!report) return report.error();
  LaunchFds fds{.report = std::move(*report)};
  bool parent_maps = plan.userns && plan.userns->written_by_parent;
  // --pidns: the monitor must know the sandbox's pid before it may run; --userns2: the
  // monitor joins it first and a failure there must stop the child before its setup.
  bool parent_first = plan.info_fd || plan.json_status_fd || plan.userns_block_fd || parent_maps ||
                      plan.joined.pidns_fd || plan.joined.userns2_fd ||
                      !plan.cgroup_procs_fds.empty();
  if (parent_first) {
    auto p = base::MakePipe();
    if (!p) return p.error();
    fds.go = std::move(*p);
  }
  if (plan.reaper) {
    auto p = base::MakePipe();
    if (!p) return p.error();
    fds.status = std::move(*p);
  }
  // Before the death signal is armed below: a change of credentials could clear it.
  if (plan.joined.userns_fd) {
    if (auto st = JoinUserNamespace(*plan.joined.userns_fd); !st) return st.error();
  }
  if (plan.joined.pidns_fd) {
    auto pair = PreparePidSocket();
    if (!pair) return pair.error();
    fds.pid_socket = std::move(*pair);
  }
  if (NetnsFromHelper(plan)) {
    auto pair = base::MakeSocketPair(SOCK_SEQPACKET);
    if (!pair) return pair.error();
    fds.netns = std::move(*pair);
  }
  if (plan.die_with_parent) {
    fds.self_pidfd.reset(base::PidfdOpen(::getpid()));
    if (!fds.self_pidfd) return base::ErrnoError("pidfd_open");
    // The monitor dies with its caller too (unless it is a launcher that must outlive its
    // caller, as `run` is); the child then dies with the monitor.
    if (!plan.launcher_outlives_parent) ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  }
  return fds;
}

// The clone child: drops the monitor's ends and becomes the sandbox.
[[noreturn]] void EnterChild(const Plan& plan, ChildMemory& memory, LaunchFds& fds) {
  fds.report.CloseReadEnd();
  fds.go.write_end.reset();
  fds.status.read_end.reset();
  fds.pid_socket.read_end.reset();
  child::ChildLaunch launch;
  launch.plan = &plan;
  launch.sources = memory.sources.data();
  launch.report = &fds.report;
  launch.go_fd = fds.go.read_end.get();
  launch.parent_pidfd = fds.self_pidfd.get();
  launch.status_fd = fds.status.write_end.get();
  launch.pid_socket = fds.pid_socket.write_end.get();
  launch.netns_channel = fds.netns.write_end.get();
  launch.netns_helper_end = fds.netns.read_end.get();
  launch.argv = memory.argv.data();
  launch.envp = memory.envp.data();
  launch.pwd_slot = memory.envp.size() - 2;
  launch.pwd_entries = memory.pwd_entries.data();
  launch.failure_text = memory.failure_text.data();
  child::ChildMain(launch);
}

}  // namespace

base::Result<StartedSandbox> Start(const Plan& plan) {
  if (!IsSingleThreaded()) return Error(EDEADLK, "Refusing to clone from a multi-threaded process");
  ChildMemory memory(plan);
  auto fds = PrepareMonitor(plan);
  if (!fds) return fds.error();
  std::signal(SIGCHLD, SIG_DFL);  // a caller that ignores SIGCHLD would break waitid

  int raw_pidfd = -1;
  const pid_t pid = base::CloneProcess(CloneFlags(plan), &raw_pidfd);
  if (pid < 0) return CloneError(errno, plan);
  if (pid == 0) EnterChild(plan, memory, *fds);
  StartedSandbox sandbox(plan, pid, UniqueFd(raw_pidfd), std::move(fds->status.read_end));
  fds->report.CloseWriteEnd();
  fds->go.read_end.reset();
  fds->status.write_end.reset();
  fds->self_pidfd.reset();
  fds->pid_socket.write_end.reset();
  fds->netns.write_end.reset();
  fds->netns.read_end.reset();

  if (plan.joined.pidns_fd) {
    auto st = FollowIntoPidNamespace(plan, fds->pid_socket.read_end.get(), fds->report, &sandbox);
    if (!st) return st.error();
    fds->pid_socket.read_end.reset();
  }
  if (auto st = PrepareRelease(plan, sandbox.pid()); !st) return st.error();
  fds->go.write_end.reset();  // releases the child

  if (auto failure = ReadFailure(fds->report, plan)) return *failure;
  return sandbox;
}

base::Result<int> Launch(const Plan& plan) {
  auto sandbox = Start(plan);
  if (!sandbox) return sandbox.error();
  return sandbox->Wait();
}

}  // namespace sbx::runtime
