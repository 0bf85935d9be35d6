// EchoServer: the upstream for the concurrency and bulk-transfer tests. GreetingServer: the
// upstream that speaks first, for the route kind tests.
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <utility>

#include "integration/run/run_support.h"

namespace sbx::integration::run {

EchoServer::EchoServer() : fd_(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (bind(fd_.get(), reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
      listen(fd_.get(), 512) != 0 ||
      getsockname(fd_.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    std::abort();
  }
  port_ = ntohs(addr.sin_port);
  acceptor_ = std::thread([this] { AcceptLoop(); });
}

EchoServer::~EchoServer() {
  stop_ = true;
  acceptor_.join();
  for (std::thread& worker : workers_) worker.join();
}

std::string EchoServer::LargestHash() {
  // The worker records its totals once the peer's close reaches it: give it a moment.
  for (int i = 0; i < 50; ++i) {
    {
      std::lock_guard lock(mu_);
      if (largest_bytes_ > 0) return FormatHash(largest_hash_);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return "<nothing received>";
}

void EchoServer::AcceptLoop() {
  while (!stop_) {
    pollfd pfd{fd_.get(), POLLIN, 0};
    if (poll(&pfd, 1, 100) != 1) continue;
    int conn = accept4(fd_.get(), nullptr, nullptr, SOCK_CLOEXEC);
    if (conn < 0) continue;
    ++accepted_;
    workers_.emplace_back([this, conn] {
      uint64_t hash = 0xcbf29ce484222325ULL;
      uint64_t bytes = 0;
      char buf[1 << 16];
      // Echo until the peer shuts down its side; a 100 ms poll lets the destructor stop us.
      while (!stop_) {
        pollfd p{conn, POLLIN, 0};
        if (poll(&p, 1, 100) != 1) continue;
        ssize_t n = read(conn, buf, sizeof buf);
        if (n <= 0) break;
        for (ssize_t i = 0; i < n; ++i) {
          hash = (hash ^ static_cast<unsigned char>(buf[i])) * 0x100000001b3ULL;
        }
        bytes += static_cast<uint64_t>(n);
        for (ssize_t off = 0; off < n;) {
          ssize_t w = send(conn, buf + off, static_cast<size_t>(n - off), MSG_NOSIGNAL);
          if (w <= 0) break;
          off += w;
        }
      }
      close(conn);
      std::lock_guard lock(mu_);
      if (bytes > largest_bytes_) {
        largest_bytes_ = bytes;
        largest_hash_ = hash;
      }
    });
  }
}

namespace {

// A loopback listener on a kernel-chosen port; aborts when it can't (test setup).
int ListenOnLoopback(int fd) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 || listen(fd, 64) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    std::abort();
  }
  return ntohs(addr.sin_port);
}

bool SendAll(int fd, const std::string& text) {
  for (size_t off = 0; off < text.size();) {
    ssize_t w = send(fd, text.data() + off, text.size() - off, MSG_NOSIGNAL);
    if (w <= 0) return false;
    off += static_cast<size_t>(w);
  }
  return true;
}

}  // namespace

GreetingServer::GreetingServer(std::string greeting)
    : greeting_(std::move(greeting)), fd_(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
  port_ = ListenOnLoopback(fd_.get());
  acceptor_ = std::thread([this] { AcceptLoop(); });
}

GreetingServer::~GreetingServer() {
  stop_ = true;
  acceptor_.join();
  for (std::thread& worker : workers_) worker.join();
}

std::vector<std::string> GreetingServer::lines() {
  std::lock_guard lock(mu_);
  return lines_;
}

void GreetingServer::AcceptLoop() {
  while (!stop_) {
    pollfd pfd{fd_.get(), POLLIN, 0};
    if (poll(&pfd, 1, 100) != 1) continue;
    int conn = accept4(fd_.get(), nullptr, nullptr, SOCK_CLOEXEC);
    if (conn < 0) continue;
    ++accepted_;
    workers_.emplace_back([this, conn] {
      Serve(conn);
      close(conn);
    });
  }
}

void GreetingServer::Serve(int conn) {
  if (!SendAll(conn, greeting_ + "\r\n")) return;
  std::string pending;
  char buf[512];
  // A 100 ms poll lets the destructor stop us.
  while (!stop_) {
    pollfd p{conn, POLLIN, 0};
    if (poll(&p, 1, 100) != 1) continue;
    ssize_t n = read(conn, buf, sizeof buf);
    if (n <= 0) return;
    pending.append(buf, static_cast<size_t>(n));
    for (size_t eol; (eol = pending.find('\n')) != std::string::npos;) {
      std::string line = pending.substr(0, eol);
      pending.erase(0, eol + 1);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      {
        std::lock_guard lock(mu_);
        lines_.push_back(line);
      }
      if (line == "QUIT") {
        SendAll(conn, "221 bye\r\n");
        return;
      }
      if (!SendAll(conn, "250 " + line + "\r\n")) return;
    }
  }
}

}  // namespace sbx::integration::run
