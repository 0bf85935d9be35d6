#include "tests/relay/relay_test_util.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace sbx::relay::testing {

TempDir::TempDir() {
  std::string tmpl = "/tmp/relay-test-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

bool RunLoopUntil(EventLoop& loop, const std::function<bool()>& done,
                  std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done() && std::chrono::steady_clock::now() < deadline) {
    if (!loop.RunOnce(std::chrono::milliseconds(10))) return false;
  }
  return done();
}

SocketAddress LocalAddress(int fd) {
  sockaddr_storage storage{};
  socklen_t len = sizeof(storage);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&storage), &len);
  auto address = SocketAddress::FromSockaddr(reinterpret_cast<sockaddr*>(&storage), len);
  if (!address) throw std::runtime_error("getsockname failed");
  return *address;
}

base::UniqueFd ListenLoopback() {
  base::UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) < 0 ||
      ::listen(fd.get(), 4096) < 0) {
    throw std::runtime_error("listen on loopback failed");
  }
  return fd;
}

SocketAddress UnusedLoopbackAddress() {
  base::UniqueFd fd = ListenLoopback();
  return LocalAddress(fd.get());  // closed on return: nothing listens there any more
}

base::UniqueFd ConnectTcp(const SocketAddress& address) {
  base::UniqueFd fd(::socket(address.family(), SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (::connect(fd.get(), address.get(), address.size()) < 0) return {};
  return fd;
}

base::UniqueFd ConnectUnix(const std::string& path) {
  base::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) < 0) return {};
  return fd;
}

TestServer::TestServer(Mode mode) : mode_(mode) {
  listener_.reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(listener_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) < 0 ||
      ::listen(listener_.get(), 4096) < 0) {
    throw std::runtime_error("test server listen failed");
  }
  address_ = LocalAddress(listener_.get());
  acceptor_ = std::thread([this] { AcceptLoop(); });
}

TestServer::~TestServer() {
  stopping_ = true;
  // shutdown() on a listening socket wakes the blocked accept() with EINVAL.
  ::shutdown(listener_.get(), SHUT_RDWR);
  acceptor_.join();
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& worker : workers_) worker.join();
}

void TestServer::AcceptLoop() {
  while (!stopping_) {
    base::UniqueFd fd(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!fd) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return;
    }
    ++accepted_;
    std::lock_guard<std::mutex> lock(mutex_);
    workers_.emplace_back([this, f = fd.release()] { Serve(base::UniqueFd(f)); });
  }
}

void TestServer::Serve(base::UniqueFd fd) {
  char buf[65536];
  if (mode_ == Mode::kResetAfterRead) {
    if (::read(fd.get(), buf, sizeof(buf)) > 0) {
      linger lg{1, 0};
      ::setsockopt(fd.get(), SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
    }
    return;
  }
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof(buf));
    if (n <= 0) break;
    for (ssize_t off = 0; off < n;) {
      ssize_t w = ::send(fd.get(), buf + off, static_cast<size_t>(n - off), MSG_NOSIGNAL);
      if (w <= 0) return;
      off += w;
    }
  }
  ::shutdown(fd.get(), SHUT_WR);
}

namespace {

struct ClientState {
  base::UniqueFd fd;
  const std::string* payload = nullptr;
  size_t sent = 0;
  bool write_done = false;
  bool read_done = false;
  std::string received;
};

// One poll round for one client: send what fits, read what is there.
void ServiceClient(ClientState& c, short revents) {
  if ((revents & POLLOUT) != 0 && !c.write_done) {
    ssize_t n = ::send(c.fd.get(), c.payload->data() + c.sent,
                       std::min<size_t>(c.payload->size() - c.sent, 65536), MSG_NOSIGNAL);
    if (n > 0) c.sent += static_cast<size_t>(n);
    if (n < 0 && errno != EAGAIN) c.write_done = true;
    if (c.sent == c.payload->size()) {
      ::shutdown(c.fd.get(), SHUT_WR);
      c.write_done = true;
    }
  }
  if ((revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
    char buf[65536];
    ssize_t n = ::recv(c.fd.get(), buf, sizeof(buf), MSG_DONTWAIT);
    if (n > 0) {
      c.received.append(buf, static_cast<size_t>(n));
    } else if (n == 0 || errno != EAGAIN) {
      c.read_done = true;
      c.write_done = true;
    }
  }
}

}  // namespace

std::vector<std::string> RunClients(const std::function<base::UniqueFd()>& connect,
                                    const std::vector<std::string>& payloads,
                                    std::chrono::milliseconds timeout) {
  std::vector<ClientState> clients(payloads.size());
  for (size_t i = 0; i < payloads.size(); ++i) {
    clients[i].fd = connect();
    clients[i].payload = &payloads[i];
    if (!clients[i].fd) {
      clients[i].read_done = clients[i].write_done = true;
      continue;
    }
    ::fcntl(clients[i].fd.get(), F_SETFL, O_NONBLOCK);
    if (payloads[i].empty()) {
      ::shutdown(clients[i].fd.get(), SHUT_WR);
      clients[i].write_done = true;
    }
  }
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    std::vector<pollfd> pfds;
    std::vector<size_t> index;
    for (size_t i = 0; i < clients.size(); ++i) {
      if (clients[i].read_done) continue;
      short events = POLLIN;
      if (!clients[i].write_done) events |= POLLOUT;
      pfds.push_back({clients[i].fd.get(), events, 0});
      index.push_back(i);
    }
    if (pfds.empty()) break;
    if (::poll(pfds.data(), pfds.size(), 100) < 0 && errno != EINTR) break;
    for (size_t k = 0; k < pfds.size(); ++k) ServiceClient(clients[index[k]], pfds[k].revents);
  }
  std::vector<std::string> out;
  for (auto& c : clients) out.push_back(std::move(c.received));
  return out;
}

void RunWithLoop(EventLoop& loop, const std::function<void()>& fn) {
  std::atomic<bool> done{false};
  std::thread worker([&] {
    fn();
    done = true;
  });
  RunLoopUntil(
      loop, [&] { return done.load(); }, std::chrono::seconds(60));
  worker.join();
}

std::string RandomBytes(size_t size, uint32_t seed) {
  std::string out(size, '\0');
  uint32_t x = seed * 2654435761u + 1;
  for (char& c : out) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    c = static_cast<char>(x & 0xff);
  }
  return out;
}

uint64_t Checksum(const std::string& data) {
  uint64_t h = 1469598103934665603ull;
  for (char c : data) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace sbx::relay::testing
