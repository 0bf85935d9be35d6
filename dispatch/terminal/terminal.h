// The caller's terminal, as `run --tty` uses it: whether to use it at all, its window size,
// raw mode for the length of the session, and private non-blocking handles on it.
// Caller: the single-threaded host-side dispatch process. Internal to dispatch/.
#pragma once

#include <sys/ioctl.h>
#include <termios.h>

#include <optional>

#include "base/unique_fd.h"
#include "dispatch/request/request.h"

namespace sbx::dispatch {

// kOn, kOff, or for kAuto whether fds 0 and 1 are both terminals.
bool WantsTty(TtyMode mode);

// The window size of the caller's terminal: stdout's when it is one, else stdin's. Nothing
// when neither is a terminal or the size is 0 x 0 (a terminal that does not know it).
std::optional<winsize> CallerWindowSize();

// Puts a terminal in raw mode (cfmakeraw: no echo, no line editing, no signal keys, no
// output processing) and puts the saved settings back on Restore() or destruction. Ctrl-C,
// Ctrl-Z and Ctrl-\ then arrive as bytes that `run` passes on to the agent's terminal, whose
// own line discipline turns them into signals for the agent's foreground job.
// What survives a SIGKILL of `run` is a terminal in raw mode, which `reset` (or `stty sane`)
// recovers: there is no process left to restore it.
class RawMode {
 public:
  RawMode() = default;
  RawMode(const RawMode&) = delete;
  RawMode& operator=(const RawMode&) = delete;
  ~RawMode() { Restore(); }

  // Saves the settings of terminal `fd` (borrowed; it must stay open until Restore) and
  // switches it to raw mode. False, with nothing changed, when `fd` is not a terminal.
  bool Enter(int fd);
  // Puts the saved settings back (after the output written so far has been sent); no-op
  // when not entered.
  void Restore();
  [[nodiscard]] bool active() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
  termios saved_{};
};

// A second, private open file description of what `fd` refers to (a terminal or a FIFO),
// non-blocking and close-on-exec, through /proc/self/fd. O_NONBLOCK on it cannot change the
// caller's own descriptor, which its shell shares and which must stay blocking after `run`.
// Empty when `fd` is something else (a socket, a file) or cannot be reopened.
base::UniqueFd ReopenNonBlocking(int fd, int access_mode);

}  // namespace sbx::dispatch
