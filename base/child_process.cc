#include "base/child_process.h"

#include <grp.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>

#include "base/syscalls.h"

namespace sbx::base {

Result<ChildReport> ChildReport::Open() {
  auto pipe = MakePipe();
  if (!pipe) return pipe.error();
  return ChildReport(std::move(*pipe));
}

void ChildReport::Fail(ChildFailure failure, const char* text, size_t text_len,
                       int exit_code) const noexcept {
  if (text != nullptr) failure.detail = static_cast<uint32_t>(text_len);
  // The record and the text in one write when they fit a pipe's atomic size, so the
  // parent never sees half a report; best effort: a parent that went away reads nothing.
  char buffer[sizeof(ChildFailure) + 512];
  size_t len = sizeof(failure);
  __builtin_memcpy(buffer, &failure, sizeof(failure));
  const bool together = text != nullptr && text_len <= sizeof(buffer) - len;
  if (together) {
    __builtin_memcpy(buffer + len, text, text_len);
    len += text_len;
  }
  (void)!::write(pipe_.write_end.get(), buffer, len);
  if (!together && text != nullptr && text_len > 0) {
    (void)!::write(pipe_.write_end.get(), text, text_len);
  }
  ::_exit(exit_code);
}

Result<std::optional<ChildFailure>> ChildReport::Read() const {
  ChildFailure failure;
  ssize_t n = 0;
  do {
    n = ::read(pipe_.read_end.get(), &failure, sizeof(failure));
  } while (n < 0 && errno == EINTR);
  if (n == 0) return std::optional<ChildFailure>();
  if (n != static_cast<ssize_t>(sizeof(failure))) {
    return Error(n < 0 ? errno : EPROTO, "Unexpected short read of a child's report");
  }
  return std::optional<ChildFailure>(failure);
}

std::string ChildReport::ReadText(size_t length) const {
  std::string text(length, '\0');
  size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(pipe_.read_end.get(), text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  text.resize(got);
  return text;
}

namespace {

// The parent's pidfd of its child `pid`, or -1 with errno after the child was killed and
// reaped: a child nobody can signal safely must not go on.
int OpenPidfdOrKill(pid_t pid) noexcept {
  const int pidfd = PidfdOpen(pid);
  if (pidfd >= 0) return pidfd;
  const int err = errno;
  (void)::kill(pid, SIGKILL);
  while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  errno = err;
  return -1;
}

}  // namespace

pid_t CloneProcess(uint64_t flags, int* pidfd) noexcept {
  Clone3Args args;
  args.flags = flags | (pidfd != nullptr ? CLONE_PIDFD : 0);
  args.pidfd = reinterpret_cast<uint64_t>(pidfd);
  args.exit_signal = SIGCHLD;
  pid_t pid = Clone3(&args);
  if (pid >= 0 || errno != ENOSYS) return pid;
  pid =
      static_cast<pid_t>(::syscall(SYS_clone, flags | SIGCHLD, nullptr, nullptr, nullptr, nullptr));
  if (pid <= 0 || pidfd == nullptr) return pid;
  *pidfd = OpenPidfdOrKill(pid);
  return *pidfd < 0 ? -1 : pid;
}

Result<ClonedChild> CloneWithPidfd(uint64_t flags, const char* what) {
  int pidfd = -1;
  const pid_t pid = CloneProcess(flags, &pidfd);
  if (pid < 0) return ErrnoError("Can't clone", what);
  ClonedChild child;
  child.pid = pid;
  if (pid > 0) child.pidfd.reset(pidfd);
  return child;
}

Result<ClonedChild> ForkWithPidfd(const char* what) {
  const pid_t pid = ::fork();
  if (pid < 0) return ErrnoError("Can't fork", what);
  ClonedChild child;
  child.pid = pid;
  if (pid == 0) return child;
  child.pidfd.reset(OpenPidfdOrKill(pid));
  if (!child.pidfd) return ErrnoError("Can't open a pidfd of", what);
  return child;
}

int SwitchToIds(uid_t uid, gid_t gid) noexcept {
  if (::setgroups(0, nullptr) != 0) return errno;
  if (::setresgid(gid, gid, gid) != 0) return errno;
  if (::setresuid(uid, uid, uid) != 0) return errno;
  uid_t r = 0;
  uid_t e = 0;
  uid_t s = 0;
  if (::getresuid(&r, &e, &s) != 0) return errno;
  return r == uid && e == uid && s == uid ? 0 : EPERM;
}

int LowerRlimit(int resource, uint64_t ceiling) noexcept {
  const auto which = static_cast<__rlimit_resource>(resource);
  rlimit current{};
  if (::getrlimit(which, &current) != 0) return errno;
  const rlimit lowered{std::min<rlim_t>(current.rlim_cur, ceiling),
                       std::min<rlim_t>(current.rlim_max, ceiling)};
  return ::setrlimit(which, &lowered) == 0 ? 0 : errno;
}

int EnterCgroups(const std::vector<int>& procs_fds, pid_t pid) noexcept {
  // The pid in decimal, formatted by hand: a child may not allocate.
  char text[16];
  size_t len = 0;
  char reversed[16];
  auto value = static_cast<uint32_t>(pid < 0 ? 0 : pid);
  do {
    reversed[len++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value != 0 && len < sizeof(reversed));
  for (size_t i = 0; i < len; ++i) text[i] = reversed[len - 1 - i];
  for (int fd : procs_fds) {
    if (::write(fd, text, len) != static_cast<ssize_t>(len)) return errno;
  }
  return 0;
}

}  // namespace sbx::base
