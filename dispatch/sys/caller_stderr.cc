#include "dispatch/sys/caller_stderr.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <ctime>
#include <string>

#include <fmt/format.h>

#include "base/json.h"

namespace sbx::dispatch {
namespace {

// How long one line may wait for room in the caller's stderr.
constexpr int kLineWaitMs = 500;
bool g_stalled = false;  // a wait ran out: the reader is not reading
// -q: notices are not written at all (errors still are).
bool g_notices_quiet = false;

// Writes with SIGPIPE blocked, and takes away the SIGPIPE a closed reader raised, so the
// signal never reaches `run` whatever its disposition is at this point.
ssize_t WriteWithoutSigpipe(int fd, const char* data, size_t size) {
  sigset_t pipe_only;
  sigset_t old;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  ::pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
  ssize_t n = ::write(fd, data, size);
  const int err = errno;
  if (n < 0 && err == EPIPE) {
    timespec none{};
    (void)::sigtimedwait(&pipe_only, nullptr, &none);
  }
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  errno = err;
  return n;
}

}  // namespace

std::string EscapeForTerminal(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    size_t len = byte < 0x80 ? 1 : base::Utf8SequenceAt(text, i);
    const bool c1 = len == 2 && byte == 0xc2 && static_cast<unsigned char>(text[i + 1]) < 0xa0;
    if (len == 0 || c1 || byte < 0x20 || byte == 0x7f) {
      for (size_t k = 0; k < (c1 ? 2 : 1); ++k) {
        out += fmt::format("\\x{:02x}", static_cast<unsigned char>(text[i + k]));
      }
      i += c1 ? 1 : 0;
      continue;
    }
    out.append(text.substr(i, len));
    i += len - 1;
  }
  return out;
}

void SayToCaller(std::string_view line) {
  if (g_stalled) return;
  std::string text = "ateam-sandbox run: ";
  text.append(EscapeForTerminal(line));
  text += '\n';
  size_t done = 0;
  while (done < text.size()) {
    // A pipe or terminal that reports room takes a line this short without blocking.
    pollfd fd{STDERR_FILENO, POLLOUT, 0};
    int ready = ::poll(&fd, 1, kLineWaitMs);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) g_stalled = true;
    if (ready <= 0 || (fd.revents & (POLLERR | POLLHUP | POLLNVAL)) != 0) return;
    ssize_t n = WriteWithoutSigpipe(STDERR_FILENO, text.data() + done, text.size() - done);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

void SetNoticesQuiet(bool quiet) { g_notices_quiet = quiet; }
bool NoticesQuiet() { return g_notices_quiet; }

void NoticeToCaller(std::string_view line) {
  if (!g_notices_quiet) SayToCaller(line);
}

void FillClosedStandardFds() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) >= 0 || errno != EBADF) continue;
    // open() returns the lowest free number: this one.
    int null_fd = ::open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
    if (null_fd >= 0 && null_fd != fd) ::close(null_fd);
  }
}

}  // namespace sbx::dispatch
