// Test harness for the supervisor: runs `ateam-sandbox supervise ARGS` as pid 1 of fresh
// user + mount + pid namespaces, the way the runtime starts it (still in the host's network
// namespace), and an echo server behind a Unix socket for its routes (relay/handoff.h).
//
// Both fork the test process, so call them while it is single-threaded (gtest is).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sbx::supervise::testing {

struct SandboxRun {
  enum class Kind { kRan, kSkipped, kHarnessFailed };
  Kind kind = Kind::kHarnessFailed;
  int exit_code = -1;       // the supervisor's exit code when kRan
  std::string stderr_text;  // everything the supervisor and the agent wrote to fd 2
  std::string message;      // skip reason or harness failure
};

struct SandboxOptions {
  // Mount a fresh /proc for the new pid namespace (as the runtime does), so the agent sees
  // only the sandbox's processes. A refused mount skips the run.
  bool mount_proc = true;
  std::chrono::milliseconds timeout{30000};
  // When set, pid 1 keeps only these capabilities (bit N = capability N) in its permitted,
  // effective and bounding sets before the supervisor runs, as the runtime would start it.
  std::optional<uint64_t> keep_caps;
};

// Child: unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID), map uid/gid 0 to the caller
// (setgroups "deny"), fork the grandchild (pid 1 of the new pid namespace, with every
// capability of its user namespace) and run RunSuperviseCommand(args) there. kSkipped when
// user namespaces are unavailable. A run past `timeout` is killed and reported as a failure.
SandboxRun RunSupervisorInSandbox(const std::vector<std::string>& args,
                                  const SandboxOptions& options = {});

// A forked process that stands in for the host relay: it listens on a Unix socket at `path`,
// takes the first connection as the supervisor's handoff channel, and echoes every connection
// accepted from the listener handed over on it until EOF, one at a time. Killed and reaped by
// the destructor.
class EchoServer {
 public:
  explicit EchoServer(const std::string& path);
  ~EchoServer();
  EchoServer(const EchoServer&) = delete;
  EchoServer& operator=(const EchoServer&) = delete;

  // Empty when the server runs, else why it does not.
  [[nodiscard]] const std::string& error() const { return error_; }

 private:
  pid_t pid_ = -1;
  std::string error_;
};

}  // namespace sbx::supervise::testing
