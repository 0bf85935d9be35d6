#include "dispatch/terminal/terminal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>

namespace sbx::dispatch {

bool WantsTty(TtyMode mode) {
  switch (mode) {
    case TtyMode::kOn:
      return true;
    case TtyMode::kOff:
      return false;
    case TtyMode::kAuto:
      break;
  }
  return ::isatty(STDIN_FILENO) == 1 && ::isatty(STDOUT_FILENO) == 1;
}

std::optional<winsize> CallerWindowSize() {
  for (int fd : {STDOUT_FILENO, STDIN_FILENO}) {
    winsize size{};
    if (::ioctl(fd, TIOCGWINSZ, &size) == 0 && size.ws_row != 0 && size.ws_col != 0) return size;
  }
  return std::nullopt;
}

bool RawMode::Enter(int fd) {
  Restore();
  termios modes{};
  if (::tcgetattr(fd, &modes) != 0) return false;
  saved_ = modes;
  ::cfmakeraw(&modes);
  // TCSADRAIN: what the terminal was still showing goes out first; keys typed ahead stay
  // queued and reach the agent.
  int rc = 0;
  do {
    rc = ::tcsetattr(fd, TCSADRAIN, &modes);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) return false;
  fd_ = fd;
  return true;
}

void RawMode::Restore() {
  if (fd_ < 0) return;
  int rc = 0;
  do {
    rc = ::tcsetattr(fd_, TCSADRAIN, &saved_);
  } while (rc != 0 && errno == EINTR);
  fd_ = -1;
}

base::UniqueFd ReopenNonBlocking(int fd, int access_mode) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !(S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))) return {};
  if (S_ISCHR(st.st_mode) && ::isatty(fd) != 1) return {};
  // O_NOCTTY: reopening must never make the terminal anybody's controlling terminal.
  std::string path = "/proc/self/fd/" + std::to_string(fd);
  return base::UniqueFd(::open(path.c_str(), access_mode | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
}

}  // namespace sbx::dispatch
