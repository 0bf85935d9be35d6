// Harness for the integration tier: runs the bwrap-compatible command under test with the
// static probe inside, captures what comes out, and parses the probe's report.
//
// The command under test is a command PREFIX taken from $SBX_BWRAP, split on blanks (no
// quoting), e.g. "/usr/bin/bwrap" or "/b/ateam-sandbox bwrap --backend bwrap"; the default
// is <build>/compat/bwrap. $SBX_PROBE overrides the host path of the probe binary.
//
// Everything here runs in the test process (single-threaded); children are forked and
// exec'd at once. Test code, so failures to set up (pipe, fork) abort the test binary.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/unique_fd.h"

namespace sbx::integration {

using Args = std::vector<std::string>;

using Fd = base::UniqueFd;

struct Pipe {
  Fd read_end;
  Fd write_end;
};
Pipe MakePipe();  // both ends close-on-exec

struct RunOptions {
  // {fd number in the child, fd in this process (borrowed)}: dup'ed into place. All other
  // descriptors above 2 are closed in the child; stdin is /dev/null.
  std::vector<std::pair<int, int>> pass_fds;
  std::vector<std::string> extra_env;  // "NAME=VALUE", added to or replacing the inherited env
  std::string cwd;                     // empty: inherit
  bool ignore_sigchld = false;         // start the child with SIGCHLD set to SIG_IGN
  // Make the child a session leader with a fresh pty as controlling terminal (instead of
  // its own process group), for TIOCSTI / --new-session tests.
  bool controlling_pty = false;
  std::chrono::milliseconds timeout{30000};
};

struct RunResult {
  std::string command;  // the argv, space-joined, for messages
  int exit_code = -1;   // exit status; -1 if killed by a signal or timed out
  int term_signal = 0;
  bool timed_out = false;
  std::string out;
  std::string err;
};

// Human-readable summary (command, status, stdout, stderr) for assertion messages.
std::string Describe(const RunResult& result);

// A running child whose stdout/stderr are pipes to this process. The destructor kills the
// child's process group and reaps it.
class Process {
 public:
  static Process Start(const Args& argv, const RunOptions& options = {});
  Process(Process&& other) noexcept;
  Process& operator=(Process&&) = delete;
  ~Process();

  [[nodiscard]] pid_t pid() const { return pid_; }
  // Reads stdout until it contains `needle`; false on EOF or timeout.
  bool WaitForOutput(std::string_view needle, std::chrono::milliseconds timeout);
  // Reads until both stdout and stderr reach EOF (every holder of the write ends is gone).
  bool WaitForEof(std::chrono::milliseconds timeout);
  // Reaps the direct child (blocking up to `timeout`, then SIGKILL to the group).
  RunResult Wait(std::chrono::milliseconds timeout);
  [[nodiscard]] const std::string& out() const { return out_; }

 private:
  Process() = default;
  // One poll round over the open pipes; false once the deadline passed.
  bool Pump(std::chrono::steady_clock::time_point deadline);
  bool TryReap(bool block);

  pid_t pid_ = -1;
  bool reaped_ = false;
  int status_ = 0;
  Fd out_fd_;
  Fd err_fd_;
  Fd pty_master_;
  std::string out_;
  std::string err_;
};

// Starts argv (PATH lookup if argv[0] has no slash) and waits for it: output, exit status.
RunResult RunCommand(const Args& argv, const RunOptions& options = {});

// ---- The command under test ----

const Args& BwrapPrefix();
std::string ProbeHostPath();
inline constexpr char kProbe[] = "/probe";  // where the profiles bind the probe

// "0.8.0" from `bubblewrap 0.8.0`, empty if --version failed. Cached.
const std::string& BwrapVersion();
// Debian's bwrap lacks --argv0, --level-prefix and overlays and differs in a few texts.
bool IsBwrap080();

// ro-bind /usr, /bin /lib /lib64 -> usr/..., ro-bind /etc, the probe at kProbe.
Args BaseProfile();
// BaseProfile() plus --proc /proc and --dev /dev.
Args TypicalProfile();

// prefix + options + command.
Args BwrapArgv(const Args& options, const Args& command);
// Runs prefix + profile + options + [kProbe, probe_args...].
RunResult RunProbe(const Args& options, const Args& probe_args, const RunOptions& run = {},
                   const Args& profile = TypicalProfile());

// ---- Probe output ----

using Report = std::map<std::string, std::string>;
// `key: value` lines -> map (a later duplicate key wins). Lines without ": " are ignored.
Report ParseReport(std::string_view text);
// Value of `key`, or "<missing KEY>" so that a failed expectation names the key.
std::string Get(const Report& report, const std::string& key);
// `a b c` -> {"a", "b", "c"}.
std::vector<std::string> Words(std::string_view text);
bool Contains(const std::vector<std::string>& words, std::string_view word);

// ---- Host facts ----

bool IsRoot();
// readlink(/proc/self/ns/TYPE) of the test process, e.g. "net:[4026531833]".
std::string HostNamespace(const std::string& type);
// A field of the test process's /proc/self/status, e.g. "CapEff".
std::string HostStatus(const std::string& key);
// Why the sandbox cannot work for this caller (non-root and unprivileged user namespaces
// unavailable), or nullopt. Cached.
std::optional<std::string> SandboxUnavailableReason();

// A temporary directory (mode 0755) removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir();
  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] std::string Sub(std::string_view name) const;

 private:
  std::string path_;
};

void WriteFile(const std::string& path, std::string_view content);
std::optional<std::string> ReadFile(const std::string& path);
// Reads an fd until EOF (for --info-fd / --json-status-fd pipes).
std::string ReadAll(int fd);

// A listening TCP socket on 127.0.0.1 with a kernel-chosen port.
class TcpListener {
 public:
  TcpListener();
  [[nodiscard]] int port() const { return port_; }
  // Accepts one queued connection (non-blocking) and returns what it sent, or nullopt.
  std::optional<std::string> AcceptAndRead();

 private:
  Fd fd_;
  int port_ = 0;
};

// A bound UDP socket on 127.0.0.1 with a kernel-chosen port.
class UdpReceiver {
 public:
  UdpReceiver();
  [[nodiscard]] int port() const { return port_; }
  std::optional<std::string> Receive();  // non-blocking
  // Sends `marker` to this socket over loopback and returns the datagrams that were queued
  // before it. Loopback delivery queues a datagram while its sendto() runs, so everything a
  // finished process sent is queued before the marker: a barrier, not a wait on the clock.
  // A marker that does not arrive within the watchdog (10 s) aborts the test binary.
  std::vector<std::string> ReceiveUntilMarker(const std::string& marker);

 private:
  Fd fd_;
  int port_ = 0;
};

}  // namespace sbx::integration
