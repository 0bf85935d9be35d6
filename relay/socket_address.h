// SocketAddress: one numeric IPv4 or IPv6 address with a port, as plain data. It never
// resolves names (see upstream.h for that) so parsing it can't block or touch the network.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "base/error.h"

namespace sbx::relay {

class SocketAddress {
 public:
  SocketAddress() = default;

  // "192.0.2.1:443" or "[2001:db8::1]:443". Numeric only; the port is required, 1..65535.
  static base::Result<SocketAddress> Parse(std::string_view text);
  // A numeric IP without brackets ("192.0.2.1", "::1") and a port.
  static base::Result<SocketAddress> FromIp(std::string_view ip, uint16_t port);
  // Copies an AF_INET or AF_INET6 sockaddr (from getaddrinfo, accept, getsockname).
  static base::Result<SocketAddress> FromSockaddr(const sockaddr* addr, socklen_t len);

  [[nodiscard]] int family() const { return storage_.ss_family; }
  [[nodiscard]] bool is_v4() const { return family() == AF_INET; }
  [[nodiscard]] bool is_v6() const { return family() == AF_INET6; }
  [[nodiscard]] uint16_t port() const;
  [[nodiscard]] const sockaddr* get() const;
  [[nodiscard]] socklen_t size() const { return len_; }

  // The IPv4 address in host byte order; only meaningful when is_v4().
  [[nodiscard]] uint32_t v4() const;
  // The 16 IPv6 address bytes; only meaningful when is_v6().
  [[nodiscard]] const uint8_t* v6() const;

  // "192.0.2.1" / "2001:db8::1".
  [[nodiscard]] std::string IpString() const;
  // "192.0.2.1:443" / "[2001:db8::1]:443"; the inverse of Parse.
  [[nodiscard]] std::string ToString() const;

  friend bool operator==(const SocketAddress& a, const SocketAddress& b) {
    return a.ToString() == b.ToString();
  }

 private:
  sockaddr_storage storage_{};
  socklen_t len_ = 0;
};

}  // namespace sbx::relay
