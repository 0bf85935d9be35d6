#include "dispatch/sys/stop_signals.h"

#include <poll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>

namespace sbx::dispatch {

base::Result<base::UniqueFd> BlockStopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGALRM);
  // A blocked signal is queued even when ignored, so an ignored SIGHUP is left out of the
  // set: nohup keeps meaning what it says.
  struct sigaction hup {};
  if (::sigaction(SIGHUP, nullptr, &hup) != 0 || hup.sa_handler != SIG_IGN) {
    sigaddset(&set, SIGHUP);
  }
  if (::sigprocmask(SIG_BLOCK, &set, nullptr) != 0) return base::ErrnoError("sigprocmask");
  base::UniqueFd fd(::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!fd) return base::ErrnoError("signalfd");
  return fd;
}

base::Status ArmDispatchDeadline(double seconds, double seconds_already_spent) {
  // Never zero: a zero it_value disarms the timer instead of firing it.
  const double left = std::max(seconds - seconds_already_spent, 0.001);
  itimerval timer{};
  timer.it_value.tv_sec = static_cast<time_t>(left);
  timer.it_value.tv_usec =
      static_cast<suseconds_t>((left - static_cast<double>(static_cast<time_t>(left))) * 1e6);
  if (timer.it_value.tv_sec == 0 && timer.it_value.tv_usec == 0) timer.it_value.tv_usec = 1;
  if (::setitimer(ITIMER_REAL, &timer, nullptr) != 0) {
    return base::ErrnoError("setitimer for --timeout");
  }
  return {};
}

base::Status StopWhenParentDies(pid_t parent) {
  if (::prctl(PR_SET_PDEATHSIG, SIGTERM) != 0) {
    return base::ErrnoError("prctl(PR_SET_PDEATHSIG) for --die-with-parent");
  }
  // The parent may have gone before the signal was armed: we were reparented then.
  if (::getppid() != parent) ::kill(::getpid(), SIGTERM);
  return {};
}

std::string StopSignalName(int sig) {
  switch (sig) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case SIGHUP:
      return "SIGHUP";
    case SIGALRM:
      return "SIGALRM";
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
               size_t limit, int timeout_ms) {
  using Clock = std::chrono::steady_clock;
  const auto until = Clock::now() + std::chrono::milliseconds(timeout_ms);
  bool reading = other_fd >= 0;
  for (;;) {
    pollfd fds[3] = {
        {pidfd, POLLIN, 0}, {signal_fd, POLLIN, 0}, {reading ? other_fd : -1, POLLIN, 0}};
    int wait_ms = -1;
    if (timeout_ms >= 0) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
      wait_ms = static_cast<int>(std::max<int64_t>(left.count(), 0));
    }
    int ready = ::poll(fds, 3, wait_ms);
    if (ready < 0) {
      if (errno == EINTR) continue;
      return 0;  // nothing to wait with: the caller's waitpid still waits
    }
    if (ready == 0) {
      ::kill(-pgid, SIGKILL);
      return kWaitTimedOut;
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
