#include "runtime/child/netns_helper.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#include "base/child_process.h"
#include "base/socket_message.h"
#include "base/syscalls.h"
#include "runtime/child/child_steps.h"

namespace sbx::runtime {
namespace {

// Sends the report, with `ns_fd` attached when it is valid. MSG_NOSIGNAL: a child that
// died meanwhile must not turn into a SIGPIPE here.
void SendReport(int channel, NetnsHelperReport report, int ns_fd) {
  base::SocketMessage<int> message(&report, sizeof(report));
  if (ns_fd >= 0) {
    message.Attach(SOL_SOCKET, SCM_RIGHTS, ns_fd);
  } else {
    message.Detach();
  }
  (void)message.Send(channel, MSG_NOSIGNAL);
}

// Reports the step that failed and ends the helper; the child fails with that step.
[[noreturn]] void FailHelper(int channel, Phase phase, int err, uint32_t detail = 0) {
  SendReport(channel, {static_cast<uint32_t>(phase), detail, err}, -1);
  ::_exit(0);
}

// The helper process: a forked copy of the child, in the sandbox's user namespace with
// every capability there, so the namespace it makes belongs to that user namespace exactly
// as if clone had made it. Being a plain fork, libnl may allocate freely.
[[noreturn]] void HelperMain(int channel, int proc_fd, bool new_pid_namespace) noexcept {
  // Bounded work, but nothing should outlive a child that failed meanwhile.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::unshare(CLONE_NEWNET) != 0) FailHelper(channel, Phase::kCreateNetns, errno);
  if (StepResult r = child::ConfigureLoopback(); r.failed()) {
    FailHelper(channel, Phase::kLoopback, r.err, r.detail);
  }
  // Through the host's /proc, relative to its fd: the child may be pivoting meanwhile,
  // which moves this process's root too. thread-self resolves in that procfs's pid
  // namespace, where this process has a pid.
  int ns_fd = ::openat(proc_fd, "thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  if (ns_fd < 0) FailHelper(channel, Phase::kCreateNetns, errno);
  SendReport(channel, {}, ns_fd);
  // After the report, off the child's path. The last pid handed out in the namespace
  // becomes 1 (the child): the next is 2 again, free once this process is reaped.
  if (new_pid_namespace) {
    int fd = ::openat(proc_fd, "sys/kernel/ns_last_pid", O_WRONLY | O_CLOEXEC);
    if (fd >= 0) (void)!::write(fd, "1", 1);
  }
  ::_exit(0);
}

}  // namespace

bool NetnsFromHelper(const Plan& plan) {
  bool parent_maps = plan.userns && plan.userns->written_by_parent;
  return (plan.clone_flags & CLONE_NEWNET) != 0 && plan.configure_loopback && !plan.info_fd &&
         !plan.json_status_fd && !plan.userns_block_fd && !plan.joined.any() && !parent_maps &&
         plan.cgroup_procs_fds.empty();
}

namespace child {

pid_t StartNetnsHelper(int helper_end, int proc_fd, bool new_pid_namespace) noexcept {
  // A plain fork: the helper unshares a namespace of its own and uses libnl, neither of
  // which may share this process's memory. It is reaped in ReapNetnsHelper.
  const pid_t pid = base::CloneProcess(0, nullptr);
  if (pid == 0) HelperMain(helper_end, proc_fd, new_pid_namespace);
  return pid;
}

void ReapNetnsHelper(pid_t helper_pid) noexcept {
  while (::waitpid(helper_pid, nullptr, 0) < 0 && errno == EINTR) {
  }
}

StepResult JoinHelperNetns(int channel, Phase* phase) noexcept {
  NetnsHelperReport report;
  base::SocketMessage<int> message(&report, sizeof(report));
  *phase = Phase::kCreateNetns;
  ssize_t n = message.Receive(channel, MSG_CMSG_CLOEXEC);
  if (n < 0) return {errno, Stage::kNone};
  // The helper died without a report (killed): no namespace to join.
  if (n != static_cast<ssize_t>(sizeof(report))) return {ECHILD, Stage::kNone};
  if (report.phase != 0) {
    *phase = static_cast<Phase>(report.phase);
    return {report.err != 0 ? report.err : EIO, Stage::kNone, report.detail};
  }
  int ns_fd = -1;
  if (!message.Find(SOL_SOCKET, SCM_RIGHTS, &ns_fd)) return {EBADMSG, Stage::kNone};
  int err = ::setns(ns_fd, CLONE_NEWNET) == 0 ? 0 : errno;
  ::close(ns_fd);
  ::close(channel);
  return {err, Stage::kNone};
}

}  // namespace child
}  // namespace sbx::runtime
