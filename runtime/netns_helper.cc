#include "runtime/netns_helper.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#include "runtime/base/socket_message.h"
#include "runtime/base/syscalls.h"
#include "runtime/child/child_steps.h"

namespace sbx::runtime {
namespace {

NetnsHelperReport Failed(Phase phase, int err, uint32_t detail = 0) {
  return {static_cast<uint32_t>(phase), detail, err};
}

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

// The helper process: a forked copy of the monitor, so libnl may allocate freely.
[[noreturn]] void HelperMain(const Plan& plan, int child_pidfd, int channel) {
  // Joined through the child's pidfd: the namespace then belongs to the child's user
  // namespace, exactly as if clone had created it. The monitor owns that user namespace,
  // so joining it needs no privilege (and gives full capabilities inside it).
  if ((plan.clone_flags & CLONE_NEWUSER) != 0 && ::setns(child_pidfd, CLONE_NEWUSER) != 0) {
    SendReport(channel, Failed(Phase::kCreateNetns, errno), -1);
    ::_exit(0);
  }
  if (::unshare(CLONE_NEWNET) != 0) {
    SendReport(channel, Failed(Phase::kCreateNetns, errno), -1);
    ::_exit(0);
  }
  if (StepResult r = child::ConfigureLoopback(); r.failed()) {
    SendReport(channel, Failed(Phase::kLoopback, r.err, r.detail), -1);
    ::_exit(0);
  }
  // The host's /proc: this process has a pid in the monitor's pid namespace.
  int ns_fd = ::open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
  if (ns_fd < 0) {
    SendReport(channel, Failed(Phase::kCreateNetns, errno), -1);
    ::_exit(0);
  }
  SendReport(channel, {}, ns_fd);
  ::_exit(0);
}

}  // namespace

bool NetnsFromHelper(const Plan& plan) {
  bool parent_maps = plan.userns && plan.userns->written_by_parent;
  return (plan.clone_flags & CLONE_NEWNET) != 0 && plan.configure_loopback && !plan.info_fd &&
         !plan.json_status_fd && !plan.userns_block_fd && !plan.joined.any() && !parent_maps;
}

base::Result<pid_t> StartNetnsHelper(const Plan& plan, int child_pidfd, int channel) {
  // A plain fork, not CLONE_VM: setns() into a user namespace refuses a shared mm, and
  // the monitor only waits meanwhile, so the copy costs nothing on the child's path.
  base::Clone3Args args;
  args.exit_signal = SIGCHLD;
  pid_t pid = base::Clone3(&args);
  if (pid < 0 && errno == ENOSYS) pid = static_cast<pid_t>(::fork());
  if (pid < 0) return base::ErrnoError("Can't fork the network namespace helper");
  if (pid == 0) HelperMain(plan, child_pidfd, channel);
  return pid;
}

namespace child {

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
