// StartReport: how `run` learns that the agent's command could not be started. The
// supervisor (pid 1 inside) runs the command with execvp; when that fails, only the
// supervisor knows, and the exit code alone (127, 126) is also what a command that ran and
// failed may give. So the supervisor connects to <state dir>/report.sock (bound into the
// sandbox like the route sockets) before anything else runs in there, and on a failed exec
// sends one line, "exec-failed ERRNO", then waits for `run` to close the channel.
//
// Only the first connection is taken, and only from the supervisor (relay/peer_check.h);
// the socket is closed at once, so nothing the agent starts can connect after it. A
// refused peer is said once on stderr.
// Caller: the single-threaded host-side dispatch process; the loop outlives the report.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>

#include "base/error.h"
#include "base/unique_fd.h"
#include "dispatch/plan/layout.h"
#include "relay/event_loop.h"
#include "relay/peer_check.h"

namespace sbx::dispatch {

class StartReport {
 public:
  // `socket_owner`: chown the socket to it (a root caller's sandbox runs as another uid).
  static base::Result<std::unique_ptr<StartReport>> Create(relay::EventLoop* loop,
                                                           const std::string& state_dir,
                                                           std::optional<uid_t> socket_owner);
  ~StartReport();
  StartReport(const StartReport&) = delete;
  StartReport& operator=(const StartReport&) = delete;

  [[nodiscard]] const std::string& socket_path() const { return socket_path_; }
  void SetPeerGate(const relay::PeerGate* gate) { gate_ = gate; }
  // Watches the socket on the loop; after the sandbox has started.
  base::Status Start();
  // exec's errno when the supervisor reported that the command could not be started.
  [[nodiscard]] std::optional<int> exec_errno() const { return exec_errno_; }
  // Whether the supervisor connected at all: it did not when the sandbox failed to start
  // (a refused mount or hostname), whose exit code then says nothing about the agent.
  [[nodiscard]] bool supervisor_reached() const { return supervisor_reached_; }
  // After the loop: a connection still waiting to be accepted (the sandbox ended before the
  // loop got to it) also means the sandbox started; nothing from it is read.
  void Settle();

 private:
  explicit StartReport(relay::EventLoop* loop) : loop_(loop) {}
  void OnConnection();
  void OnData();
  void Close();

  relay::EventLoop* loop_;
  const relay::PeerGate* gate_ = nullptr;
  std::string socket_path_;
  base::UniqueFd listener_;
  base::UniqueFd channel_;
  std::string received_;
  std::optional<int> exec_errno_;
  bool supervisor_reached_ = false;
  bool refusal_said_ = false;
};

// The exit code and one-line message for a command exec could not start with `err`, as
// shells give it (127 missing, 126 not executable), with what would make it work: `name` is
// the command as given, `sandbox_path` the sandbox's PATH, `host_path` the caller's. A path
// that exists on the host but not in the sandbox gets the --ro that would show it.
struct StartFailure {
  int exit_code = 127;
  bool missing = true;  // 127: not found; else 126: not executable
  std::string message;
};
StartFailure DescribeStartFailure(int err, const std::string& name, const std::string& cwd,
                                  const std::string& sandbox_path, const std::string& host_path);

}  // namespace sbx::dispatch
