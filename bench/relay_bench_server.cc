#include "bench/relay_bench_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <unordered_map>
#include <vector>

namespace bench {
namespace {

sockaddr_in Loopback(uint16_t port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return addr;
}

const sockaddr* AsSockaddr(const sockaddr_in* addr) {
  return reinterpret_cast<const sockaddr*>(addr);
}

// Per-connection server state: unknown until the first byte arrives, then sink or echo.
enum class Mode { kFirst, kSink, kEcho };

// Writes all of `data` to a non-blocking socket, waiting for room when it is full.
bool WriteNonBlocking(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n > 0) {
      data += n;
      size -= static_cast<size_t>(n);
    } else if (n < 0 && errno == EAGAIN) {
      pollfd pfd{fd, POLLOUT, 0};
      if (::poll(&pfd, 1, 10000) <= 0) return false;
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      return false;
    }
  }
  return true;
}

}  // namespace

Server::~Server() { Stop(); }

bool Server::Listen() {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) return false;
  int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr = Loopback(0);
  if (::bind(listen_fd_, AsSockaddr(&addr), sizeof(addr)) < 0) return false;
  if (::listen(listen_fd_, 4096) < 0) return false;
  port_ = LocalPort(listen_fd_);
  return true;
}

void Server::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void Server::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  if (listen_fd_ >= 0) ::close(listen_fd_);
  listen_fd_ = -1;
}

void Server::Loop() {
  int ep = ::epoll_create1(EPOLL_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = listen_fd_;
  ::epoll_ctl(ep, EPOLL_CTL_ADD, listen_fd_, &ev);
  std::unordered_map<int, Mode> modes;
  std::vector<char> buf(size_t{256} * 1024);
  std::vector<epoll_event> events(256);
  while (!stop_) {
    int n = ::epoll_wait(ep, events.data(), static_cast<int>(events.size()), 50);
    for (int i = 0; i < n; ++i) {
      int fd = events[static_cast<size_t>(i)].data.fd;
      if (fd == listen_fd_) {
        for (int k = 0; k < 64; ++k) {
          int c = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
          if (c < 0) break;
          int one = 1;
          ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
          epoll_event cev{};
          cev.events = EPOLLIN;
          cev.data.fd = c;
          ::epoll_ctl(ep, EPOLL_CTL_ADD, c, &cev);
          modes[c] = Mode::kFirst;
        }
        continue;
      }
      Mode& mode = modes[fd];
      ssize_t got = ::read(fd, buf.data(), buf.size());
      if (got < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      bool keep = got > 0;
      if (got > 0 && mode == Mode::kFirst) mode = buf[0] == 'S' ? Mode::kSink : Mode::kEcho;
      if (got > 0 && mode == Mode::kEcho) {
        keep = WriteNonBlocking(fd, buf.data(), static_cast<size_t>(got));
      }
      if (got == 0 && mode == Mode::kSink) {
        char ack = 'k';
        WriteNonBlocking(fd, &ack, 1);
      }
      if (!keep) {
        ::epoll_ctl(ep, EPOLL_CTL_DEL, fd, nullptr);
        ::close(fd);
        modes.erase(fd);
      }
    }
  }
  for (const auto& [fd, mode] : modes) ::close(fd);
  ::close(ep);
}

int ConnectLoopback(uint16_t port, double* connect_ms) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  timeval timeout{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  sockaddr_in addr = Loopback(port);
  auto start = std::chrono::steady_clock::now();
  int rc = ::connect(fd, AsSockaddr(&addr), sizeof(addr));
  *connect_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (rc < 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool ReadExact(int fd, char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::read(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

uint16_t LocalPort(int fd) {
  sockaddr_in addr{};
  socklen_t len = sizeof(addr);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) < 0) return 0;
  return ntohs(addr.sin_port);
}

uint16_t FreeLoopbackPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in addr = Loopback(0);
  uint16_t port = ::bind(fd, AsSockaddr(&addr), sizeof(addr)) == 0 ? LocalPort(fd) : 0;
  ::close(fd);
  return port;
}

void RaiseFdLimit(int fds) {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) < 0) return;
  auto want = static_cast<rlim_t>(fds);
  if (lim.rlim_cur >= want) return;
  lim.rlim_cur = std::min(want, lim.rlim_max);
  ::setrlimit(RLIMIT_NOFILE, &lim);
}

}  // namespace bench
