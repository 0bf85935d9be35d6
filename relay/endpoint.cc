#include "relay/endpoint.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace sbx::relay {
namespace {

using base::ErrnoError;
using base::Result;
using base::UniqueFd;

constexpr int kSocketFlags = SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC;

struct UnixAddress {
  sockaddr_un addr{};
  socklen_t len = 0;
};

UnixAddress MakeUnixAddress(const std::string& path) {
  UnixAddress out;
  out.addr.sun_family = AF_UNIX;
  std::memcpy(out.addr.sun_path, path.data(), path.size());  // length checked in Unix()
  out.len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size() + 1);
  return out;
}

const sockaddr* AsSockaddr(const sockaddr_un& addr) {
  return reinterpret_cast<const sockaddr*>(&addr);
}

Result<UniqueFd> ListenUnix(const std::string& path, const ListenOptions& options) {
  UniqueFd fd(::socket(AF_UNIX, kSocketFlags, 0));
  if (!fd) return ErrnoError("Can't create Unix socket for", path);
  UnixAddress address = MakeUnixAddress(path);
  if (::bind(fd.get(), AsSockaddr(address.addr), address.len) < 0) {
    return ErrnoError("Can't bind", path);
  }
  // fchmod on a socket fd changes the sockfs inode, not the file bind created: the file is
  // changed relative to its directory, opened once, never through a symlink (a name that
  // existed made bind fail with EADDRINUSE, so the entry is the one bind just created).
  auto slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  UniqueFd dir_fd(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!dir_fd) return ErrnoError("Can't open directory of", path);
  if (::fchmodat(dir_fd.get(), name.c_str(), options.unix_mode, 0) < 0) {
    return ErrnoError("Can't chmod", path);
  }
  if (options.unix_owner && ::fchownat(dir_fd.get(), name.c_str(), *options.unix_owner,
                                       static_cast<gid_t>(-1), AT_SYMLINK_NOFOLLOW) < 0) {
    return ErrnoError("Can't chown", path);
  }
  if (::listen(fd.get(), options.backlog) < 0) return ErrnoError("Can't listen on", path);
  return fd;
}

Result<UniqueFd> ListenTcp(const SocketAddress& address, const ListenOptions& options) {
  UniqueFd fd(::socket(address.family(), kSocketFlags, 0));
  if (!fd) return ErrnoError("Can't create TCP socket for", address.ToString());
  int one = 1;
  if (::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0) {
    return ErrnoError("Can't set SO_REUSEADDR on", address.ToString());
  }
  if (::bind(fd.get(), address.get(), address.size()) < 0) {
    return ErrnoError("Can't bind", address.ToString());
  }
  if (::listen(fd.get(), options.backlog) < 0) {
    return ErrnoError("Can't listen on", address.ToString());
  }
  return fd;
}

}  // namespace

Result<Endpoint> Endpoint::Unix(std::string path) {
  if (path.empty() || path.size() >= sizeof(sockaddr_un{}.sun_path)) {
    return base::Error(ENAMETOOLONG, "Unix socket path too long or empty:", path);
  }
  return Endpoint(std::move(path));
}

std::string Endpoint::ToString() const {
  return is_unix() ? "unix:" + unix_path() : "tcp:" + tcp_address().ToString();
}

Result<UniqueFd> Endpoint::Listen(const ListenOptions& options) const {
  return is_unix() ? ListenUnix(unix_path(), options) : ListenTcp(tcp_address(), options);
}

Result<UniqueFd> Endpoint::ConnectNonBlocking() const {
  if (is_unix()) {
    UniqueFd fd(::socket(AF_UNIX, kSocketFlags, 0));
    if (!fd) return ErrnoError("Can't create Unix socket for", unix_path());
    UnixAddress address = MakeUnixAddress(unix_path());
    // A Unix connect completes or fails at once; EAGAIN means the listener's backlog is full.
    if (::connect(fd.get(), AsSockaddr(address.addr), address.len) < 0) {
      return ErrnoError("Can't connect to", unix_path());
    }
    return fd;
  }
  const SocketAddress& address = tcp_address();
  UniqueFd fd(::socket(address.family(), kSocketFlags, 0));
  if (!fd) return ErrnoError("Can't create TCP socket for", address.ToString());
  if (::connect(fd.get(), address.get(), address.size()) < 0 && errno != EINPROGRESS) {
    return ErrnoError("Can't connect to", address.ToString());
  }
  return fd;
}

base::Result<base::UniqueFd> Endpoint::Connect(std::chrono::milliseconds timeout) const {
  auto fd = ConnectNonBlocking();
  if (!fd) return fd.error();
  pollfd pfd{fd->get(), POLLOUT, 0};
  int ready = 0;
  do {
    ready = ::poll(&pfd, 1, static_cast<int>(timeout.count()));
  } while (ready < 0 && errno == EINTR);
  if (ready < 0) return ErrnoError("Can't wait for connection to", ToString());
  if (ready == 0) return base::Error(ETIMEDOUT, "Connection timed out:", ToString());
  if (int err = TakeSocketError(fd->get()); err != 0) {
    return base::Error(err, "Connection failed:", ToString());
  }
  return fd;
}

int TakeSocketError(int fd) {
  int err = 0;
  socklen_t len = sizeof(err);
  if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0) return errno;
  return err;
}

void SetResetOnClose(int fd) {
  linger lg{1, 0};
  // Unix sockets accept the option and ignore it: their close is seen as EOF (or ECONNRESET
  // when unread data was dropped), so nothing is lost by not checking.
  (void)::setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
}

void SetNoDelay(int fd) {
  int one = 1;
  (void)::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

}  // namespace sbx::relay
