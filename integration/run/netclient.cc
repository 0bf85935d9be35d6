// Network test client run INSIDE the sandbox by run_test. Every mode prints `key: value`
// lines (the harness's ParseReport format) and exits 0 unless the usage is wrong.
//
//   connect HOST PORT        one TCP connect (getaddrinfo for names): result + elapsed_ms
//   resolve NAME             getaddrinfo: result + elapsed_ms
//   request HOST PORT        connect, send a line, read to EOF: bytes received + result
//   concurrent HOST PORT N   N simultaneous connections, each echoes a distinct line back
//   bulk HOST PORT MIB       send MIB MiB of a fixed pseudo-random stream to an echo server,
//                            read the echo back: FNV-1a hashes of both directions
//   converse HOST PORT [LINE...]  a server-speaks-first exchange: read the greeting line
//                            without sending anything, then send each LINE (CRLF) and read
//                            one reply line each; how the connection ended
//   trickle HOST PORT HEX    send the bytes HEX one per segment, then shut down the write
//                            side and read an echo server's answer to EOF: whether it is the
//                            same bytes, and how the connection ended
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

long long ElapsedMs(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
}

// Blocking connect with a 5 s cap; returns the fd or -errno (gai errors as -EHOSTUNREACH).
int ConnectTo(const char* host, const char* port, std::string* error) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  int gai = getaddrinfo(host, port, &hints, &list);
  if (gai != 0) {
    *error = std::string("gai:") + gai_strerror(gai);
    return -1;
  }
  int fd = socket(list->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  int err = fd < 0 ? errno : 0;
  if (fd >= 0 && connect(fd, list->ai_addr, list->ai_addrlen) != 0) {
    err = errno;
    if (err == EINPROGRESS) {
      pollfd pfd{fd, POLLOUT, 0};
      err = poll(&pfd, 1, 5000) == 1 ? 0 : ETIMEDOUT;
      socklen_t len = sizeof err;
      if (err == 0) getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    }
  }
  freeaddrinfo(list);
  if (err != 0) {
    if (fd >= 0) close(fd);
    *error = strerrorname_np(err) != nullptr ? strerrorname_np(err) : "unknown";
    return -1;
  }
  return fd;
}

void SetBlocking(int fd, bool blocking) {
  int flags = fcntl(fd, F_GETFL);
  fcntl(fd, F_SETFL, blocking ? (flags & ~O_NONBLOCK) : (flags | O_NONBLOCK));
}

int Connect(const char* host, const char* port) {
  auto start = Clock::now();
  std::string error;
  int fd = ConnectTo(host, port, &error);
  std::printf("connect: %s\nelapsed_ms: %lld\n", fd >= 0 ? "OK" : error.c_str(), ElapsedMs(start));
  if (fd >= 0) close(fd);
  return 0;
}

int Resolve(const char* name) {
  auto start = Clock::now();
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  int gai = getaddrinfo(name, "443", &hints, &list);
  std::printf("resolve: %s\nelapsed_ms: %lld\n", gai == 0 ? "OK" : gai_strerror(gai),
              ElapsedMs(start));
  if (gai == 0) freeaddrinfo(list);
  return 0;
}

int Request(const char* host, const char* port) {
  auto start = Clock::now();
  std::string error;
  int fd = ConnectTo(host, port, &error);
  long long received = 0;
  if (fd >= 0) {
    SetBlocking(fd, true);
    timeval tv{5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    constexpr char kLine[] = "ping\n";
    if (send(fd, kLine, sizeof kLine - 1, MSG_NOSIGNAL) < 0) error = strerrorname_np(errno);
    char buf[4096];
    for (ssize_t n; (n = read(fd, buf, sizeof buf)) != 0;) {
      if (n < 0) {
        error = strerrorname_np(errno);
        break;
      }
      received += n;
    }
    close(fd);
  }
  std::printf("request: %s\nreceived: %lld\nelapsed_ms: %lld\n",
              error.empty() ? "EOF" : error.c_str(), received, ElapsedMs(start));
  return 0;
}

int Concurrent(const char* host, const char* port, int count) {
  std::vector<int> fds;
  std::string error;
  for (int i = 0; i < count; ++i) {
    int fd = ConnectTo(host, port, &error);
    if (fd < 0) break;
    fds.push_back(fd);
  }
  // Every connection is open before any byte moves: the relay holds all of them at once.
  int good = 0;
  for (size_t i = 0; i < fds.size(); ++i) {
    SetBlocking(fds[i], true);
    timeval tv{10, 0};
    setsockopt(fds[i], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    std::string line = "conn-" + std::to_string(i) + "\n";
    if (send(fds[i], line.data(), line.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(line.size())) {
      continue;
    }
    std::string got;
    char buf[64];
    while (got.size() < line.size()) {
      ssize_t n = read(fds[i], buf, sizeof buf);
      if (n <= 0) break;
      got.append(buf, static_cast<size_t>(n));
    }
    if (got == line) ++good;
  }
  for (int fd : fds) close(fd);
  std::printf("opened: %zu\nechoed: %d\nerror: %s\n", fds.size(), good,
              error.empty() ? "none" : error.c_str());
  return 0;
}

// xorshift64 stream: both ends can regenerate it, nothing needs storing.
struct Stream {
  uint64_t state = 0x9E3779B97F4A7C15ULL;
  void Fill(unsigned char* buf, size_t len) {
    for (size_t i = 0; i < len; ++i) {
      state ^= state << 13;
      state ^= state >> 7;
      state ^= state << 17;
      buf[i] = static_cast<unsigned char>(state);
    }
  }
};

struct Fnv {
  uint64_t hash = 0xcbf29ce484222325ULL;
  void Add(const unsigned char* data, size_t len) {
    for (size_t i = 0; i < len; ++i) hash = (hash ^ data[i]) * 0x100000001b3ULL;
  }
};

int Bulk(const char* host, const char* port, long long mib) {
  std::string error;
  int fd = ConnectTo(host, port, &error);
  if (fd < 0) {
    std::printf("bulk: %s\n", error.c_str());
    return 0;
  }
  auto start = Clock::now();
  const long long total = mib << 20;
  long long sent = 0, received = 0;
  Stream stream;
  Fnv up, down;
  std::vector<unsigned char> out(1 << 16), in(1 << 16);
  size_t out_len = 0, out_pos = 0;
  bool shut = false;
  while (received < total) {
    pollfd pfd{fd, static_cast<short>(POLLIN | (shut ? 0 : POLLOUT)), 0};
    if (poll(&pfd, 1, 10000) <= 0) {
      error = "stalled";
      break;
    }
    if ((pfd.revents & POLLOUT) != 0 && !shut) {
      if (out_pos == out_len) {
        out_len = static_cast<size_t>(std::min<long long>(total - sent, 1 << 16));
        stream.Fill(out.data(), out_len);
        up.Add(out.data(), out_len);
        out_pos = 0;
      }
      ssize_t n = send(fd, out.data() + out_pos, out_len - out_pos, MSG_NOSIGNAL);
      if (n > 0) {
        out_pos += static_cast<size_t>(n);
        sent += n;
      }
      if (sent == total && out_pos == out_len) {
        shutdown(fd, SHUT_WR);  // the echo server sees EOF and finishes its hash
        shut = true;
      }
    }
    if ((pfd.revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      ssize_t n = read(fd, in.data(), in.size());
      if (n == 0) break;
      if (n > 0) {
        down.Add(in.data(), static_cast<size_t>(n));
        received += n;
      } else if (errno != EAGAIN) {
        error = strerrorname_np(errno);
        break;
      }
    }
  }
  close(fd);
  std::printf(
      "bulk: %s\nsent: %lld\nreceived: %lld\nsent_fnv: %016llx\nreceived_fnv: %016llx\n"
      "elapsed_ms: %lld\n",
      error.empty() ? "OK" : error.c_str(), sent, received,
      static_cast<unsigned long long>(up.hash), static_cast<unsigned long long>(down.hash),
      ElapsedMs(start));
  return 0;
}

// Reads one line (up to and without its CR LF). False at EOF or an error, which `end` names.
bool ReadLine(int fd, std::string* line, std::string* end) {
  line->clear();
  for (char c = 0;;) {
    ssize_t n = read(fd, &c, 1);
    if (n == 1) {
      if (c == '\n') break;
      if (c != '\r') line->push_back(c);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    *end = n == 0 ? "EOF" : (errno == EAGAIN ? "timeout" : strerrorname_np(errno));
    return false;
  }
  return true;
}

// Reads until the connection ends (EOF, a reset, or the 5 s timeout), keeping the bytes in
// `data` when given; returns how it ended.
std::string ReadToEnd(int fd, std::string* data = nullptr) {
  char buf[4096];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) {
      if (data != nullptr) data->append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n == 0 ? "EOF" : (errno == EAGAIN ? "timeout" : strerrorname_np(errno));
  }
}

int Converse(const char* host, const char* port, const std::vector<std::string>& lines) {
  std::string error;
  int fd = ConnectTo(host, port, &error);
  if (fd < 0) {
    std::printf("connect: %s\n", error.c_str());
    return 0;
  }
  SetBlocking(fd, true);
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string end;
  std::string line;
  bool open = ReadLine(fd, &line, &end);
  std::printf("greeting: %s\n", open ? line.c_str() : "<none>");
  for (size_t i = 0; open && i < lines.size(); ++i) {
    std::string out = lines[i] + "\r\n";
    if (send(fd, out.data(), out.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(out.size())) {
      end = strerrorname_np(errno);
      open = false;
      break;
    }
    open = ReadLine(fd, &line, &end);
    std::printf("reply_%zu: %s\n", i + 1, open ? line.c_str() : "<none>");
  }
  if (open) end = ReadToEnd(fd);
  std::printf("end: %s\n", end.c_str());
  close(fd);
  return 0;
}

int Trickle(const char* host, const char* port, const std::string& hex) {
  std::string bytes;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    bytes.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  std::string error;
  int fd = ConnectTo(host, port, &error);
  if (fd < 0) {
    std::printf("connect: %s\n", error.c_str());
    return 0;
  }
  SetBlocking(fd, true);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  size_t sent = 0;
  for (char c : bytes) {
    if (send(fd, &c, 1, MSG_NOSIGNAL) != 1) break;
    ++sent;
    usleep(1000);  // one segment per byte: the relay sees the hello arrive piece by piece
  }
  shutdown(fd, SHUT_WR);
  std::string echoed;
  std::string end = ReadToEnd(fd, &echoed);
  close(fd);
  std::printf("sent: %zu\nreceived: %zu\nsame: %s\nend: %s\n", sent, echoed.size(),
              echoed == bytes ? "yes" : "no", end.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  int rc = 64;
  if (mode == "resolve" && argc == 3) rc = Resolve(argv[2]);
  if (argc == 4 && mode == "connect") rc = Connect(argv[2], argv[3]);
  if (argc == 4 && mode == "request") rc = Request(argv[2], argv[3]);
  if (argc == 5 && mode == "concurrent") rc = Concurrent(argv[2], argv[3], std::atoi(argv[4]));
  if (argc == 5 && mode == "bulk") rc = Bulk(argv[2], argv[3], std::atoll(argv[4]));
  if (argc >= 4 && mode == "converse") {
    rc = Converse(argv[2], argv[3], std::vector<std::string>(argv + 4, argv + argc));
  }
  if (argc == 5 && mode == "trickle") rc = Trickle(argv[2], argv[3], argv[4]);
  if (rc == 64)
    std::fprintf(
        stderr,
        "usage: run_netclient connect|resolve|request|concurrent|bulk|converse|trickle ...\n");
  std::fflush(stdout);
  return rc;
}
