// Endpoint: where a relay listens or what it dials, a TCP address or a Unix socket path.
// The same two kinds serve both sides of the tunnel:
//   sandbox supervisor: listen TCP 127.77.0.N:PORT, target Unix /run/ateam-tunnel/route-N.sock
//   host relay:         listen Unix <state dir>/route-N.sock, target TCP <pinned upstream>
// Every socket made here is non-blocking and close-on-exec. Callers: any single thread.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <variant>

#include "base/error.h"
#include "base/unique_fd.h"
#include "relay/socket_address.h"

namespace sbx::relay {

struct ListenOptions {
  // The kernel caps this at net.core.somaxconn (4096 by default since Linux 5.4). A large
  // backlog means a burst of connects never fails with EAGAIN on a Unix socket or waits for a
  // SYN retransmit on TCP while the loop is busy.
  int backlog = 4096;
  // Unix sockets only: the mode of the socket file (connect(2) needs write permission on it),
  // set before listen(2) so no connect can race a wider mode.
  mode_t unix_mode = 0600;
  // Unix sockets only: chown the socket file to this uid (a root caller whose sandbox runs
  // under another uid). Unset: the file stays owned by the caller.
  std::optional<uid_t> unix_owner;
};

class Endpoint {
 public:
  static Endpoint Tcp(const SocketAddress& address) { return Endpoint(address); }
  // Fails with ENAMETOOLONG when `path` does not fit in sockaddr_un.sun_path.
  static base::Result<Endpoint> Unix(std::string path);

  [[nodiscard]] bool is_unix() const { return std::holds_alternative<std::string>(where_); }
  [[nodiscard]] bool is_tcp() const { return !is_unix(); }
  // Only valid for the matching kind.
  [[nodiscard]] const SocketAddress& tcp_address() const { return std::get<0>(where_); }
  [[nodiscard]] const std::string& unix_path() const { return std::get<1>(where_); }

  // "tcp:192.0.2.1:443" or "unix:/path".
  [[nodiscard]] std::string ToString() const;

  // A listening socket: SO_REUSEADDR for TCP; for Unix, the socket file is created by bind
  // (an existing file is an error, EADDRINUSE: the caller owns the directory and cleans it).
  [[nodiscard]] base::Result<base::UniqueFd> Listen(const ListenOptions& options = {}) const;

  // Starts a non-blocking connect. The returned socket may still be connecting (TCP): wait
  // for EPOLLOUT, then call TakeSocketError(). An immediate failure (ECONNREFUSED or ENOENT
  // for a Unix path with no listener, EAGAIN for a full Unix backlog) is returned as Error.
  [[nodiscard]] base::Result<base::UniqueFd> ConnectNonBlocking() const;

  // Connects, waiting up to `timeout` for a TCP dial (a Unix connect completes at once, or
  // fails: ENOENT/ECONNREFUSED with no listener, EAGAIN with a full backlog). The socket stays
  // non-blocking. This is how the supervisor opens its handoff channel to a route socket.
  [[nodiscard]] base::Result<base::UniqueFd> Connect(std::chrono::milliseconds timeout) const;

 private:
  explicit Endpoint(SocketAddress address) : where_(address) {}
  explicit Endpoint(std::string path) : where_(std::move(path)) {}

  std::variant<SocketAddress, std::string> where_;
};

// The pending error of a socket (SO_ERROR), which also clears it: 0 once a non-blocking connect
// has succeeded.
int TakeSocketError(int fd);

// Makes close(2) of a TCP socket send RST instead of FIN (SO_LINGER with a zero timeout). Used
// to pass a reset on to the other side of a relayed pair. No effect on Unix sockets.
void SetResetOnClose(int fd);

// TCP_NODELAY: the relay writes what it read at once; the original sender already coalesced.
void SetNoDelay(int fd);

}  // namespace sbx::relay
