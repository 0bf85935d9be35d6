// Support for run_test: runs `ateam-sandbox run` with the backend under test, plus host-side
// servers the tunnel is pointed at. Test code: setup failures abort.
//
// $SBX_ATEAM: the ateam-sandbox binary (default baked at configure time);
// $SBX_RUN_BACKEND: native|bwrap (default native); $SBX_RUN_NETCLIENT: the client program.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "integration/harness.h"

namespace sbx::integration::run {

std::string AteamPath();
std::string Backend();
std::string NetClientPath();

// ateam-sandbox run --backend B [--ro probe] [--ro netclient] options -- command.
Args RunArgv(const Args& options, const Args& command);
RunResult RunAteam(const Args& options, const Args& command, const RunOptions& run = {});

RunOptions WithEnv(std::vector<std::string> env);
RunOptions WithTimeout(std::chrono::milliseconds timeout);

// Where something is missing for these tests (binary, tool), or "" when all is there.
std::string MissingPrerequisite(const std::vector<std::string>& tools = {});

// A root test's --workspace/--out top given to uid 65534, another uid than root's and the
// dispatch's: `run` lends the top and what of it is root's to the dispatch's leased uid and
// gives the top back as it was. No-op for other callers.
void HandToSandboxUser(const std::string& dir);

// Pids whose /proc/PID/cmdline contains `needle` (NUL separators read as blanks).
std::vector<int> ProcessesMatching(const std::string& needle);
// The first subordinate-id range /etc/subuid (or subgid) grants this user: "START,COUNT";
// "" when none.
std::string SubordinateRange(const char* file);

// The real uid on the Uid: line of /proc/PID/status; 0 when it cannot be read.
uid_t UidOfProcess(int pid);

// FNV-1a of the xorshift stream netclient `bulk` sends, as 16 hex digits.
std::string FormatHash(uint64_t hash);

// How many lines of `text` contain `needle` (what a one-line message is checked by).
int CountLines(const std::string& text, const std::string& needle);

// The names in `dir` but . and .. (none when it cannot be read).
std::vector<std::string> DirectoryEntries(const std::string& dir);
// A git repository at `path` with one empty commit: 0, or the exit code of the git step
// that failed.
int MakeOneCommitRepository(const std::string& path);

// An echo server on 127.0.0.1 (one thread per connection). Tracks the hash and byte count
// of everything received over the lifetime of the server.
class EchoServer {
 public:
  EchoServer();
  EchoServer(const EchoServer&) = delete;
  EchoServer& operator=(const EchoServer&) = delete;
  ~EchoServer();
  [[nodiscard]] int port() const { return port_; }
  [[nodiscard]] int accepted() const { return accepted_.load(); }
  // Hash of the bytes of the largest connection (the bulk transfer).
  [[nodiscard]] std::string LargestHash();

 private:
  void AcceptLoop();
  Fd fd_;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> accepted_{0};
  std::thread acceptor_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  uint64_t largest_bytes_ = 0;
  uint64_t largest_hash_ = 0;
};

// A server that speaks first, line by line, on 127.0.0.1 (an SSH banner, an SMTP greeting):
// each connection gets `greeting` and CR LF at once; then each line it sends is answered,
// "QUIT" with "221 bye" and a close, anything else with "250 " and the line.
class GreetingServer {
 public:
  explicit GreetingServer(std::string greeting);
  GreetingServer(const GreetingServer&) = delete;
  GreetingServer& operator=(const GreetingServer&) = delete;
  ~GreetingServer();
  [[nodiscard]] int port() const { return port_; }
  [[nodiscard]] int accepted() const { return accepted_.load(); }
  // Every line received so far, over all connections, without CR LF.
  std::vector<std::string> lines();

 private:
  void AcceptLoop();
  void Serve(int conn);
  std::string greeting_;
  Fd fd_;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> accepted_{0};
  std::thread acceptor_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::vector<std::string> lines_;
};

// A scratch directory for --workspace-root: `run` refuses a root below a shared directory
// that neither root nor the caller owns (some containers give /tmp to the overflow uid), so
// it goes in /tmp only when root owns /tmp, else in /var/tmp. Removed at destruction.
class RootTempDir {
 public:
  RootTempDir();
  RootTempDir(const RootTempDir&) = delete;
  RootTempDir& operator=(const RootTempDir&) = delete;
  ~RootTempDir();
  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] std::string Sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// A TCP port on 127.0.0.1 that nothing is bound to right now, for a server the test starts
// itself (bound then released: another process may take it in between, and then that server
// fails to start and the test fails; it never passes wrongly).
int FreePort();

// A TCP port on 127.0.0.1 that stays closed while this object lives: a socket is bound to it
// and never listens, so a connect is refused (ECONNREFUSED) and no other socket can take it.
class ClosedPort {
 public:
  ClosedPort();
  [[nodiscard]] int port() const { return port_; }

 private:
  Fd fd_;
  int port_ = 0;
};

// A test CA (ca.pem) and a server certificate for api.example.test signed by it (srv.pem,
// srv.key) in `dir`, made with the openssl CLI; false when that failed.
bool MakeTestCertificates(const std::string& dir);

}  // namespace sbx::integration::run
