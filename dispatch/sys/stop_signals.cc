#include "dispatch/sys/stop_signals.h"

#include <poll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>

namespace sbx::dispatch {

base::Result<base::UniqueFd> BlockStopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  if (::sigprocmask(SIG_BLOCK, &set, nullptr) != 0) return base::ErrnoError("sigprocmask");
  base::UniqueFd fd(::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!fd) return base::ErrnoError("signalfd");
  return fd;
}

std::string StopSignalName(int sig) {
  switch (sig) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case SIGHUP:
      return "SIGHUP";
    default:
      return "signal " + std::to_string(sig);
  }
}

int TakeStopSignal(int signal_fd) {
  signalfd_siginfo info{};
  if (::read(signal_fd, &info, sizeof(info)) != static_cast<ssize_t>(sizeof(info))) return 0;
  return static_cast<int>(info.ssi_signo);
}

int WaitOrStop(int pidfd, int signal_fd, pid_t pgid, int other_fd, std::string* output,
               size_t limit) {
  bool reading = other_fd >= 0;
  for (;;) {
    pollfd fds[3] = {
        {pidfd, POLLIN, 0}, {signal_fd, POLLIN, 0}, {reading ? other_fd : -1, POLLIN, 0}};
    if (::poll(fds, 3, -1) < 0) {
      if (errno == EINTR) continue;
      return 0;  // nothing to wait with: the caller's waitpid still waits
    }
    if ((fds[1].revents & POLLIN) != 0) {
      if (int sig = TakeStopSignal(signal_fd); sig != 0) {
        ::kill(-pgid, SIGKILL);
        return sig;
      }
    }
    if (reading && fds[2].revents != 0) {
      char buf[4096];
      ssize_t n = ::read(other_fd, buf, sizeof(buf));
      if (n > 0 && output->size() < limit) output->append(buf, static_cast<size_t>(n));
      if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) reading = false;
      continue;  // the output first: the process may exit with some still in the pipe
    }
    if ((fds[0].revents & POLLIN) != 0) return 0;
  }
}

}  // namespace sbx::dispatch
