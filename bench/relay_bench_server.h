// The loopback server and blocking client helpers of relay_bench (bench/relay_bench.cc).
//
// Server: one epoll thread on 127.0.0.1. A connection whose first byte is 'S' is a sink: it
// discards everything and answers one byte at EOF (the end of a bulk transfer); any other
// connection is an echo. The caller owns the Server; Stop() joins the thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <thread>

namespace bench {

class Server {
 public:
  Server() = default;
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Creates the listening socket on an ephemeral port (no thread yet, so the caller may still
  // fork). Returns false on failure.
  bool Listen();
  // Starts the serving thread.
  void Start();
  // Stops and joins the thread, closes every socket.
  void Stop();

  [[nodiscard]] uint16_t port() const { return port_; }
  [[nodiscard]] int listen_fd() const { return listen_fd_; }

 private:
  void Loop();

  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// A blocking TCP connection to 127.0.0.1:port with TCP_NODELAY and 10 s send/receive timeouts
// (they bound connect() too). Stores how long connect() took; returns -1 on failure.
int ConnectLoopback(uint16_t port, double* connect_ms);
bool WriteAll(int fd, const char* data, size_t size);
bool ReadExact(int fd, char* data, size_t size);
uint16_t LocalPort(int fd);
// A port that was free a moment ago (for a child that binds it itself).
uint16_t FreeLoopbackPort();
// Raises RLIMIT_NOFILE's soft limit to at least `fds` (up to the hard limit).
void RaiseFdLimit(int fds);

}  // namespace bench
