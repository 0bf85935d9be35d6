// Helpers for the relay tests: a temp dir, blocking test peers (an upstream TCP server and a
// many-connection client driver) that run on their own threads, while the relay under test
// runs on the test's thread, as it does in production: alone on its loop.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/unique_fd.h"
#include "relay/event_loop.h"
#include "relay/socket_address.h"

namespace sbx::relay::testing {

// mkdtemp under /tmp, removed with its content at destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Runs `loop` until `done()` or `timeout`; returns done().
bool RunLoopUntil(EventLoop& loop, const std::function<bool()>& done,
                  std::chrono::milliseconds timeout = std::chrono::seconds(20));

// The local address a socket is bound to (e.g. after binding port 0).
SocketAddress LocalAddress(int fd);
// A loopback TCP address where nothing listens (bound then closed).
SocketAddress UnusedLoopbackAddress();
// A listening loopback TCP socket on an ephemeral port, non-blocking, CLOEXEC.
base::UniqueFd ListenLoopback();

// A blocking TCP server on 127.0.0.1 with one thread per connection.
class TestServer {
 public:
  enum class Mode {
    kEcho,            // echo every byte; after EOF, shut down the write side and close
    kResetAfterRead,  // read some bytes, then close with RST
  };
  explicit TestServer(Mode mode = Mode::kEcho);
  ~TestServer();

  [[nodiscard]] const SocketAddress& address() const { return address_; }
  [[nodiscard]] int accepted() const { return accepted_.load(); }

 private:
  void AcceptLoop();
  void Serve(base::UniqueFd fd);

  Mode mode_;
  base::UniqueFd listener_;
  SocketAddress address_;
  std::atomic<int> accepted_{0};
  std::atomic<bool> stopping_{false};
  std::thread acceptor_;
  std::mutex mutex_;
  std::vector<std::thread> workers_;
};

// Connects `payloads.size()` clients (all at once, one poll loop), sends each its payload,
// shuts down its write side, and reads until EOF. Returns what each received; a client whose
// connection failed or was reset gets the bytes read until then. Blocking.
std::vector<std::string> RunClients(const std::function<base::UniqueFd()>& connect,
                                    const std::vector<std::string>& payloads,
                                    std::chrono::milliseconds timeout = std::chrono::seconds(30));

// Runs `fn` on a thread while the test's thread drives `loop`; returns when both finished.
void RunWithLoop(EventLoop& loop, const std::function<void()>& fn);

// A blocking client socket connected to a TCP address or a Unix path.
base::UniqueFd ConnectTcp(const SocketAddress& address);
base::UniqueFd ConnectUnix(const std::string& path);

// Deterministic pseudo-random bytes and a 64-bit FNV-1a checksum.
std::string RandomBytes(size_t size, uint32_t seed);
uint64_t Checksum(const std::string& data);

}  // namespace sbx::relay::testing
