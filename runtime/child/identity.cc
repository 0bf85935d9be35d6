// Id maps, the nested user namespace and the joined namespaces, for the child after clone.
#include <fcntl.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/child_process.h"
#include "base/socket_message.h"
#include "base/unique_fd.h"
#include "runtime/child/child_steps.h"
#include "runtime/child/mount_api.h"
#include "security/capabilities.h"

namespace sbx::runtime::child {
namespace {

int WriteFileAt(int dir_fd, const char* path, const char* text) {
  base::UniqueFd fd(::openat(dir_fd, path, O_WRONLY | O_CLOEXEC));
  if (!fd) return errno;
  size_t len = std::strlen(text);
  return ::write(fd.get(), text, len) == static_cast<ssize_t>(len) ? 0 : errno;
}

// "inside outside 1\n" without any formatting library.
void FormatMapLine(char* buf, IdMapping m) {
  FormatUnsigned(buf, m.inside, 10);
  size_t n = std::strlen(buf);
  buf[n++] = ' ';
  FormatUnsigned(buf + n, m.outside, 10);
  n = std::strlen(buf);
  std::memcpy(buf + n, " 1\n", 4);
}

// A setns() into a pid namespace only moves future children: fork, and let the parent
// go. It exits at once; the monitor, a child subreaper, inherits and reaps the child.
// CloneProcess, as every child of the launch: this process is a raw clone's child itself,
// and neither side of this one does more than system calls.
int ForkIntermediate() {
  const pid_t pid = base::CloneProcess(0, nullptr);
  if (pid < 0) return errno;
  if (pid > 0) ::_exit(0);
  return 0;
}

// One byte with this process's credentials attached. The kernel checks the pid against
// the sender and rewrites it into the receiver's pid namespace, which is how the monitor
// learns the sandbox's pid as it sees it.
int SendOwnPid(int socket_fd) {
  char byte = 0;
  base::SocketMessage<ucred> message(&byte, 1);
  message.Attach(SOL_SOCKET, SCM_CREDENTIALS, ucred{::getpid(), ::geteuid(), ::getegid()});
  return message.Send(socket_fd, 0) < 0 ? errno : 0;
}

}  // namespace

StepResult JoinPidNamespace(const JoinedNamespaces& joined, int pid_socket) noexcept {
  auto fail = [](int err, JoinPidnsStep step) { return StepFailed(err, step); };
  if (::setns(*joined.pidns_fd, CLONE_NEWPID) != 0) return fail(errno, JoinPidnsStep::kSetns);
  if (int err = ForkIntermediate()) return fail(err, JoinPidnsStep::kFork);
  if (joined.new_pidns_below) {
    // --pidns with --unshare-pid: a new pid namespace below the joined one, whose pid 1
    // is the process forked next.
    if (::unshare(CLONE_NEWPID) != 0) return fail(errno, JoinPidnsStep::kUnshare);
    if (int err = ForkIntermediate()) return fail(err, JoinPidnsStep::kFork);
  }
  if (int err = SendOwnPid(pid_socket)) return fail(err, JoinPidnsStep::kSendPid);
  ::close(pid_socket);
  return {};
}

StepResult SwitchToJoinedIds(const JoinedNamespaces& joined) noexcept {
  if (joined.switch_uid && ::setuid(*joined.switch_uid) != 0) {
    return StepFailed(errno, JoinedIdsStep::kSetuid);
  }
  if (joined.switch_gid && ::setgid(*joined.switch_gid) != 0) {
    return StepFailed(errno, JoinedIdsStep::kSetgid);
  }
  return {};
}

StepResult WriteIdMaps(int proc_fd, IdMapping uid, IdMapping gid, bool deny_setgroups) noexcept {
  char line[64];
  FormatMapLine(line, uid);
  if (int err = WriteFileAt(proc_fd, "self/uid_map", line)) {
    return StepFailed(err, UsernsStep::kUidMap);
  }
  if (deny_setgroups) {
    int err = WriteFileAt(proc_fd, "self/setgroups", "deny");
    if (err != 0 && err != ENOENT) return StepFailed(err, UsernsStep::kSetgroups);
  }
  FormatMapLine(line, gid);
  if (int err = WriteFileAt(proc_fd, "self/gid_map", line)) {
    return StepFailed(err, UsernsStep::kGidMap);
  }
  return {};
}

StepResult EnterSecondUserNamespace(const Plan& plan, int proc_fd) noexcept {
  const UserNamespacePlan& ns = *plan.userns;
  if (ns.limit_nested_userns) {
    // The sandbox must not be able to raise this again: it lives in the first-level
    // namespace, which the sandbox only ever sees from inside the nested one.
    if (int err = WriteFileAt(proc_fd, "sys/user/max_user_namespaces", "1")) {
      return StepFailed(err, UsernsStep::kMaxUserNamespaces);
    }
  }
  if (::unshare(CLONE_NEWUSER) != 0) return StepFailed(errno, UsernsStep::kUnshare);
  // A new user namespace comes with a full bounding set: trim it again.
  if (int err = security::ApplyCapPlanBounding(plan.caps)) {
    return StepFailed(err, UsernsStep::kBoundingSet);
  }
  IdMapping uid = ns.second_uid.value_or(IdMapping{plan.sandbox_uid, ns.uid.inside});
  IdMapping gid = ns.second_gid.value_or(IdMapping{plan.sandbox_gid, ns.gid.inside});
  return WriteIdMaps(proc_fd, uid, gid, false);
}

int SwitchToSandboxIds(const Plan& plan) noexcept {
  return base::SwitchToIds(plan.sandbox_uid, plan.sandbox_gid);
}

}  // namespace sbx::runtime::child
