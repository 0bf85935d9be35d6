// A terminal for tty_test: a pty of the test's own, on which a command runs as a user's
// shell would start it (a session leader whose controlling terminal it is, with it as fds
// 0-2). The test types into the master and reads what the command writes back.
// Test code: setup failures abort; every wait is bounded by a watchdog.
#pragma once

#include <sys/types.h>
#include <termios.h>

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "integration/harness.h"

namespace sbx::integration::run {

class PtyTerminal {
 public:
  // Starts `argv` with the terminal sized `rows` x `cols`; `extra_env` as RunOptions'.
  // `controlling` false: the terminal is only the command's fds 0-2, not its controlling
  // terminal, so its hang-up sends the command no SIGHUP.
  PtyTerminal(const Args& argv, unsigned short rows, unsigned short cols,
              const std::vector<std::string>& extra_env = {}, bool controlling = true);
  PtyTerminal(const PtyTerminal&) = delete;
  PtyTerminal& operator=(const PtyTerminal&) = delete;
  // Kills the command's session if it is still running.
  ~PtyTerminal();

  [[nodiscard]] pid_t pid() const { return pid_; }
  // Reads until everything written since the start contains `needle` (false on timeout).
  bool WaitFor(std::string_view needle, std::chrono::milliseconds timeout);
  // WaitFor on Text(): for full-screen programs, which move the cursor between words.
  bool WaitForText(std::string_view words, std::chrono::milliseconds timeout);
  // Everything read so far as plain words: escape sequences and runs of blanks and line
  // ends each become one space.
  [[nodiscard]] std::string Text() const;
  // Everything read so far, raw (CR LF line ends, escape sequences).
  [[nodiscard]] const std::string& output() const { return output_; }
  // Everything read so far with non-printable bytes shown as \xNN, for messages.
  [[nodiscard]] std::string Printable() const;
  // Keys, as typed: bytes into the master.
  void Type(std::string_view keys);
  // A new window size (TIOCSWINSZ on the master: the foreground job gets SIGWINCH).
  void Resize(unsigned short rows, unsigned short cols);
  // The terminal window closes: the master is closed (the command's session is hung up).
  void Close();
  // st_dev of the slave: the devpts instance the test's terminal belongs to.
  [[nodiscard]] dev_t SlaveDevice() const;
  // The settings of the terminal, as the command's side sees them.
  [[nodiscard]] termios Modes() const;
  // Waits for the command to end, reading its output meanwhile: its exit status,
  // 128 + signal when killed, -1 when it did not end in time (it is then killed).
  int Wait(std::chrono::milliseconds timeout);
  // Reads the command's output until it ends (true) or `timeout` passes (false: it goes
  // on running, and Wait still applies).
  bool Ended(std::chrono::milliseconds timeout);

 private:
  void Pump(int wait_ms);

  pid_t pid_ = -1;
  bool reaped_ = false;
  int status_ = 0;  // the command's wait status, once reaped_
  Fd master_;
  Fd slave_;  // kept: Modes() reads through it, also after the command ended
  std::string output_;
};

// Field by field, the settings that raw mode changes and a restore must bring back.
bool SameModes(const termios& a, const termios& b);
std::string DescribeModes(const termios& t);

}  // namespace sbx::integration::run
