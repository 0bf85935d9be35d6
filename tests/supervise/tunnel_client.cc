// The agent of the supervisor's end-to-end tests, run inside the supervised sandbox:
//   supervise_tunnel_client ROUTE_ADDR:PORT HOST_PORT OTHER_ADDR:PORT EXIT_CODE
// 1. connects to ROUTE_ADDR:PORT (the supervisor's listener), sends a 64 KiB pattern, half-
//    closes, and expects the same bytes back then EOF (the echo server behind the route);
// 2. expects connecting to 127.0.0.1:HOST_PORT to fail (a listener in the host's netns);
// 3. expects connecting to OTHER_ADDR:PORT (an address without a route) to fail;
// then exits with EXIT_CODE. Each failure prints one line and exits with its own code.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr size_t kPayloadBytes = size_t{64} * 1024;

enum Exit : int {
  kUsage = 2,
  kRouteConnect = 3,
  kEchoMismatch = 4,
  kHostReachable = 5,
  kOtherReachable = 6,
};

[[noreturn]] void Fail(int code, const std::string& what) {
  std::fprintf(stderr, "tunnel_client: %s\n", what.c_str());
  std::exit(code);
}

bool ParseAddress(const std::string& text, sockaddr_in* out) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos) return false;
  *out = {};
  out->sin_family = AF_INET;
  out->sin_port = htons(static_cast<uint16_t>(std::atoi(text.c_str() + colon + 1)));
  return inet_pton(AF_INET, text.substr(0, colon).c_str(), &out->sin_addr) == 1;
}

// A blocking connect with 5 s send/receive timeouts; -1 and errno on failure.
int Connect(const sockaddr_in& address) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  timeval timeout{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  if (connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    const int err = errno;
    close(fd);
    errno = err;
    return -1;
  }
  return fd;
}

void CheckEcho(const sockaddr_in& route) {
  const int fd = Connect(route);
  if (fd < 0) Fail(kRouteConnect, std::string("connect to the route: ") + std::strerror(errno));
  std::vector<char> sent(kPayloadBytes);
  for (size_t i = 0; i < sent.size(); ++i) sent[i] = static_cast<char>((i * 7 + 3) & 0xff);
  for (size_t off = 0; off < sent.size();) {
    ssize_t n = send(fd, sent.data() + off, sent.size() - off, MSG_NOSIGNAL);
    if (n <= 0) Fail(kEchoMismatch, std::string("send: ") + std::strerror(errno));
    off += static_cast<size_t>(n);
  }
  shutdown(fd, SHUT_WR);
  std::vector<char> got;
  char buf[8192];
  for (;;) {
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n < 0) Fail(kEchoMismatch, std::string("recv: ") + std::strerror(errno));
    if (n == 0) break;
    got.insert(got.end(), buf, buf + n);
  }
  close(fd);
  if (got != sent) {
    Fail(kEchoMismatch, "echo differs: sent " + std::to_string(sent.size()) + " bytes, got " +
                            std::to_string(got.size()));
  }
}

void CheckUnreachable(const sockaddr_in& address, int code, const std::string& what) {
  const int fd = Connect(address);
  if (fd >= 0) Fail(code, what + " is reachable from the sandbox");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) Fail(kUsage, "usage: ROUTE_ADDR:PORT HOST_PORT OTHER_ADDR:PORT EXIT_CODE");
  sockaddr_in route{};
  sockaddr_in other{};
  sockaddr_in host{};
  const std::string host_text = std::string("127.0.0.1:") + argv[2];
  if (!ParseAddress(argv[1], &route) || !ParseAddress(argv[3], &other) ||
      !ParseAddress(host_text, &host)) {
    Fail(kUsage, "bad address");
  }
  CheckEcho(route);
  CheckUnreachable(host, kHostReachable, host_text);
  CheckUnreachable(other, kOtherReachable, argv[3]);
  return std::atoi(argv[4]);
}
