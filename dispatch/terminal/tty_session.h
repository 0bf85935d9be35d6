// TtySession: the host side of `run --tty`. The agent runs on a terminal of the sandbox's own
// devpts instance (made by the supervisor, supervise/agent_tty.h); `run` receives its master
// and relays it to the caller's terminal (tty_relay.h), which is in raw mode meanwhile.
//
//   1. Create():   <state dir>/tty.sock, bound into the sandbox like the route sockets; the
//                  caller's window size for the supervisor's --tty-size; SIGWINCH blocked and
//                  read through a signalfd.
//   2. HideCallerStdio(), around the sandbox's start: fds 0-2 of `run` are /dev/null and a
//                  pipe while the sandbox is cloned (or bwrap started), so no descriptor of the
//                  caller's terminal enters the sandbox and nothing binds it as /dev/console.
//                  What the supervisor or bwrap write there (their errors) reaches the caller's
//                  stderr through `run`.
//   3. Start():    on the loop: the first connection to tty.sock (the supervisor's, made before
//                  the agent exists) brings the master; then raw mode, the current window
//                  size, and the relay. SIGWINCH copies the size again (TIOCSWINSZ on the
//                  master, so the agent's foreground job gets SIGWINCH).
//   4. Finish():   after the sandbox ended: a handover still queued on tty.sock (the agent
//                  wrote and exited before the loop took it), the agent's last output, then
//                  the terminal's settings back. The destructor restores them too, on every other
//                  way out.
// Caller: the single-threaded host-side dispatch process. The loop outlives the session.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>

#include "base/error.h"
#include "base/unique_fd.h"
#include "dispatch/terminal/terminal.h"
#include "dispatch/terminal/tty_relay.h"
#include "relay/event_loop.h"
#include "relay/peer_check.h"

namespace sbx::dispatch {

// While alive, fds 0-2 of this process are the session's stand-ins; the destructor puts the
// caller's back.
class CallerStdioHidden {
 public:
  CallerStdioHidden(CallerStdioHidden&&) noexcept = default;
  CallerStdioHidden& operator=(CallerStdioHidden&&) = delete;
  CallerStdioHidden(const CallerStdioHidden&) = delete;
  CallerStdioHidden& operator=(const CallerStdioHidden&) = delete;
  ~CallerStdioHidden();

 private:
  friend class TtySession;
  CallerStdioHidden() = default;
  base::UniqueFd saved_[3];
};

class TtySession {
 public:
  // `socket_owner`: chown the socket to it (a root caller's sandbox runs as another uid).
  static base::Result<std::unique_ptr<TtySession>> Create(relay::EventLoop* loop,
                                                          const std::string& state_dir,
                                                          std::optional<uid_t> socket_owner);
  ~TtySession();
  TtySession(const TtySession&) = delete;
  TtySession& operator=(const TtySession&) = delete;

  [[nodiscard]] const std::string& socket_path() const { return socket_path_; }
  // The supervisor's --tty-size value, "ROWSxCOLS", or "" when the caller's size is unknown.
  [[nodiscard]] std::string size_argument() const;

  base::Result<CallerStdioHidden> HideCallerStdio();
  // Only a connection `gate` passes is the supervisor's (relay/peer_check.h); any other is
  // closed with one line on stderr, and the socket stays open for the supervisor.
  void SetPeerGate(const relay::PeerGate* gate) { gate_ = gate; }
  base::Status Start();
  // The caller's terminal went away (SIGHUP): the agent's is hung up too.
  void HangUp();
  void Finish();

 private:
  explicit TtySession(relay::EventLoop* loop) : loop_(loop) {}
  void OnConnection();
  void OnHandover();
  void BeginRelay(base::UniqueFd master);
  void OnWindowChange();
  void CopyWindowSize();
  void OnSandboxOutput();
  void StopSandboxOutput();

  relay::EventLoop* loop_;
  std::string socket_path_;
  base::UniqueFd listener_;
  base::UniqueFd channel_;
  base::UniqueFd winch_fd_;
  base::UniqueFd output_read_;   // the sandbox's fds 1 and 2 (before the agent's terminal)
  base::UniqueFd output_write_;  // closed once the sandbox started
  std::optional<winsize> size_;
  bool hung_up_ = false;
  const relay::PeerGate* gate_ = nullptr;
  bool refusal_said_ = false;
  RawMode raw_;
  std::unique_ptr<TtyRelay> relay_;
};

}  // namespace sbx::dispatch
