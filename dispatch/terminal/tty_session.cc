#include "dispatch/terminal/tty_session.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "base/socket_message.h"
#include "dispatch/plan/layout.h"
#include "relay/endpoint.h"

namespace sbx::dispatch {
namespace {

// Writes all of `text` to `fd`, blocking; gives up on the first error.
void WriteAll(int fd, const char* text, size_t len) {
  while (len > 0) {
    ssize_t n = ::write(fd, text, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    text += n;
    len -= static_cast<size_t>(n);
  }
}

// A received descriptor is the master of a pty when TIOCGPTN answers for it; anything else
// (a slave, a file, a socket) is refused.
bool IsPtyMaster(int fd) {
  unsigned int number = 0;
  return ::ioctl(fd, TIOCGPTN, &number) == 0;
}

}  // namespace

CallerStdioHidden::~CallerStdioHidden() {
  for (int fd = 0; fd < 3; ++fd) {
    if (saved_[fd]) (void)::dup2(saved_[fd].get(), fd);
  }
}

base::Result<std::unique_ptr<TtySession>> TtySession::Create(relay::EventLoop* loop,
                                                             const std::string& state_dir,
                                                             std::optional<uid_t> socket_owner) {
  std::unique_ptr<TtySession> session(new TtySession(loop));
  session->socket_path_ = state_dir + "/" + kTtySocketName;
  auto endpoint = relay::Endpoint::Unix(session->socket_path_);
  if (!endpoint) return endpoint.error();
  relay::ListenOptions options;
  options.backlog = 1;
  options.unix_owner = socket_owner;
  auto listener = endpoint->Listen(options);
  if (!listener) return listener.error();
  session->listener_ = std::move(*listener);

  sigset_t winch;
  sigemptyset(&winch);
  sigaddset(&winch, SIGWINCH);
  if (::sigprocmask(SIG_BLOCK, &winch, nullptr) != 0) return base::ErrnoError("sigprocmask");
  session->winch_fd_.reset(::signalfd(-1, &winch, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!session->winch_fd_) return base::ErrnoError("signalfd");

  auto pipe = base::MakePipe();
  if (!pipe) return pipe.error();
  session->output_read_ = std::move(pipe->read_end);
  session->output_write_ = std::move(pipe->write_end);
  // Only our end: the sandbox's end of a pipe is a description of its own and stays blocking.
  if (::fcntl(session->output_read_.get(), F_SETFL, O_NONBLOCK) != 0) {
    return base::ErrnoError("fcntl O_NONBLOCK");
  }
  session->size_ = CallerWindowSize();
  return session;
}

TtySession::~TtySession() {
  if (winch_fd_) loop_->UnwatchCallback(winch_fd_.get());
  if (output_read_) loop_->UnwatchCallback(output_read_.get());
  if (channel_) loop_->UnwatchCallback(channel_.get());
  if (listener_) loop_->UnwatchCallback(listener_.get());
}

std::string TtySession::size_argument() const {
  if (!size_) return "";
  return fmt::format("{}x{}", size_->ws_row, size_->ws_col);
}

base::Result<CallerStdioHidden> TtySession::HideCallerStdio() {
  CallerStdioHidden hidden;
  base::UniqueFd null(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!null) return base::ErrnoError("Can't open", "/dev/null");
  const int stand_ins[3] = {null.get(), output_write_.get(), output_write_.get()};
  for (int fd = 0; fd < 3; ++fd) {
    // Saved above 2 and close-on-exec, so neither the sandbox nor bwrap inherits them.
    hidden.saved_[fd].reset(::fcntl(fd, F_DUPFD_CLOEXEC, 3));
    if (!hidden.saved_[fd] && errno != EBADF) return base::ErrnoError("Can't save fd", "stdio");
    if (::dup2(stand_ins[fd], fd) < 0) return base::ErrnoError("Can't replace fd", "stdio");
  }
  return hidden;
}

base::Status TtySession::Start() {
  output_write_.reset();  // the sandbox has its copies: EOF here once it is gone
  if (auto st =
          loop_->WatchCallback(listener_.get(), EPOLLIN, [this](uint32_t) { OnConnection(); });
      !st) {
    return st;
  }
  if (auto st =
          loop_->WatchCallback(winch_fd_.get(), EPOLLIN, [this](uint32_t) { OnWindowChange(); });
      !st) {
    return st;
  }
  return loop_->WatchCallback(output_read_.get(), EPOLLIN, [this](uint32_t) { OnSandboxOutput(); });
}

// Only the first connection is the supervisor's (it connects before the agent exists); the
// socket is closed at once, so nothing in the sandbox can connect after it.
void TtySession::OnConnection() {
  base::UniqueFd channel(
      ::accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
  if (!channel && (errno == EAGAIN || errno == EINTR || errno == ECONNABORTED)) return;
  if (channel && gate_ != nullptr) {
    if (std::string why = gate_->Check(channel.get()); !why.empty()) {
      if (!refusal_said_) {
        const std::string line = "ateam-sandbox run: refused a terminal channel: " + why + "\n";
        WriteAll(STDERR_FILENO, line.data(), line.size());
        refusal_said_ = true;  // once: a flood of connections is not a flood of lines
      }
      return;  // closed; the supervisor's own connection is still to come
    }
  }
  loop_->UnwatchCallback(listener_.get());
  listener_.reset();
  if (!channel) return;
  channel_ = std::move(channel);
  (void)loop_->WatchCallback(channel_.get(), EPOLLIN, [this](uint32_t) { OnHandover(); });
}

void TtySession::OnHandover() {
  char byte = 0;
  base::SocketMessage<int> message(&byte, 1);
  ssize_t n = message.Receive(channel_.get(), MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
  int fd = -1;
  base::UniqueFd master;
  if (n == 1 && message.Find(SOL_SOCKET, SCM_RIGHTS, &fd)) master.reset(fd);
  loop_->UnwatchCallback(channel_.get());
  channel_.reset();
  const int flags = master ? ::fcntl(master.get(), F_GETFL) : -1;
  if (!master || !IsPtyMaster(master.get()) || flags < 0 ||
      ::fcntl(master.get(), F_SETFL, flags | O_NONBLOCK) != 0) {
    const char kRefused[] = "ateam-sandbox run: the sandbox did not hand over its terminal\n";
    WriteAll(STDERR_FILENO, kRefused, sizeof(kRefused) - 1);
    return;
  }
  if (hung_up_) return;  // closing the master here hangs the agent's terminal up at once
  BeginRelay(std::move(master));
}

void TtySession::BeginRelay(base::UniqueFd master) {
  const bool input_terminal = ::isatty(STDIN_FILENO) == 1;
  if (!raw_.Enter(STDIN_FILENO) && ::isatty(STDOUT_FILENO) == 1) (void)raw_.Enter(STDOUT_FILENO);
  CallerEnds ends;
  ends.input_owned = ReopenNonBlocking(STDIN_FILENO, O_RDONLY);
  ends.input = ends.input_owned ? ends.input_owned.get() : STDIN_FILENO;
  ends.input_is_terminal = input_terminal;
  ends.output_owned = ReopenNonBlocking(STDOUT_FILENO, O_WRONLY);
  ends.output = ends.output_owned ? ends.output_owned.get() : STDOUT_FILENO;
  ends.output_nonblocking = static_cast<bool>(ends.output_owned);
  // The caller's terminal went away without a SIGHUP for `run` (it is not in the terminal's
  // foreground, or only the output side failed): the same as one, so the dispatch loop
  // stops the sandbox as it does for SIGHUP.
  relay_ = std::make_unique<TtyRelay>(loop_, std::move(master), std::move(ends),
                                      [] { (void)::kill(::getpid(), SIGHUP); });
  // The size may have changed since the supervisor was given it.
  CopyWindowSize();
  if (auto st = relay_->Start(); !st) {
    std::string line =
        fmt::format("ateam-sandbox run: terminal relay: {}\r\n", st.error().Render());
    WriteAll(STDERR_FILENO, line.data(), line.size());
    relay_->HangUp();
  }
}

void TtySession::HangUp() {
  if (relay_) {
    relay_->HangUp();
    return;
  }
  // Not handed over yet: nobody may relay it later either.
  hung_up_ = true;
}

void TtySession::OnWindowChange() {
  signalfd_siginfo info{};
  while (::read(winch_fd_.get(), &info, sizeof(info)) == static_cast<ssize_t>(sizeof(info))) {
  }
  CopyWindowSize();
}

void TtySession::CopyWindowSize() {
  if (!relay_ || relay_->master() < 0) return;
  // The same size again changes nothing: the kernel signals the agent only on a change.
  if (auto size = CallerWindowSize()) (void)::ioctl(relay_->master(), TIOCSWINSZ, &*size);
}

// The supervisor's and bwrap's own messages: to the caller's stderr, with CR LF while the
// terminal is raw (it no longer turns LF into a new line by itself).
void TtySession::OnSandboxOutput() {
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(output_read_.get(), buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n <= 0) {
      StopSandboxOutput();
      return;
    }
    size_t start = 0;
    for (size_t i = 0; i < static_cast<size_t>(n); ++i) {
      if (buf[i] != '\n' || !raw_.active()) continue;
      WriteAll(STDERR_FILENO, buf + start, i - start);
      WriteAll(STDERR_FILENO, "\r\n", 2);
      start = i + 1;
    }
    WriteAll(STDERR_FILENO, buf + start, static_cast<size_t>(n) - start);
  }
}

void TtySession::StopSandboxOutput() {
  if (!output_read_) return;
  loop_->UnwatchCallback(output_read_.get());
  output_read_.reset();
}

void TtySession::Finish() {
  // An agent that writes and exits at once may end the sandbox before the loop got round to
  // the supervisor's handover: the master is still queued on the socket, holding all the
  // agent wrote. It is taken now, before `run` reaps the sandbox, so that output is relayed
  // too (both steps are non-blocking and do nothing when nothing is queued).
  if (!relay_ && !hung_up_) {
    if (listener_) OnConnection();
    if (channel_) OnHandover();
  }
  if (relay_) relay_->Drain();
  if (output_read_) OnSandboxOutput();  // nothing holds the write end now: reads to EOF
  raw_.Restore();
}

}  // namespace sbx::dispatch
