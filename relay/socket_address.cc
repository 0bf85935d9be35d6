#include "relay/socket_address.h"

#include <arpa/inet.h>

#include <cerrno>
#include <charconv>
#include <cstring>

namespace sbx::relay {
namespace {

base::Error Invalid(std::string_view text) {
  return {EINVAL, "Invalid socket address", std::string(text)};
}

}  // namespace

base::Result<SocketAddress> SocketAddress::FromIp(std::string_view ip, uint16_t port) {
  if (port == 0) return base::Error(EINVAL, "Invalid port 0 for", std::string(ip));
  std::string ip_string(ip);  // inet_pton needs a terminated string
  SocketAddress out;
  sockaddr_in v4{};
  if (::inet_pton(AF_INET, ip_string.c_str(), &v4.sin_addr) == 1) {
    v4.sin_family = AF_INET;
    v4.sin_port = htons(port);
    std::memcpy(&out.storage_, &v4, sizeof(v4));
    out.len_ = sizeof(v4);
    return out;
  }
  sockaddr_in6 v6{};
  if (::inet_pton(AF_INET6, ip_string.c_str(), &v6.sin6_addr) == 1) {
    v6.sin6_family = AF_INET6;
    v6.sin6_port = htons(port);
    std::memcpy(&out.storage_, &v6, sizeof(v6));
    out.len_ = sizeof(v6);
    return out;
  }
  return base::Error(EINVAL, "Invalid IP address", ip_string);
}

base::Result<SocketAddress> SocketAddress::Parse(std::string_view text) {
  std::string_view host;
  std::string_view port_text;
  if (!text.empty() && text.front() == '[') {
    // Bracketed IPv6: the colons inside the brackets belong to the address.
    size_t close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return Invalid(text);
    }
    host = text.substr(1, close - 1);
    port_text = text.substr(close + 2);
  } else {
    size_t colon = text.rfind(':');
    // More than one colon without brackets is an IPv6 address with no port.
    if (colon == std::string_view::npos || text.find(':') != colon) return Invalid(text);
    host = text.substr(0, colon);
    port_text = text.substr(colon + 1);
  }
  unsigned port = 0;
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || end != port_text.data() + port_text.size() || port == 0 ||
      port > 65535) {
    return Invalid(text);
  }
  auto address = FromIp(host, static_cast<uint16_t>(port));
  if (!address) return Invalid(text);
  return address;
}

base::Result<SocketAddress> SocketAddress::FromSockaddr(const sockaddr* addr, socklen_t len) {
  SocketAddress out;
  if (addr == nullptr) return base::Error(EINVAL, "Null socket address");
  if (addr->sa_family == AF_INET && len >= static_cast<socklen_t>(sizeof(sockaddr_in))) {
    out.len_ = sizeof(sockaddr_in);
  } else if (addr->sa_family == AF_INET6 && len >= static_cast<socklen_t>(sizeof(sockaddr_in6))) {
    out.len_ = sizeof(sockaddr_in6);
  } else {
    return base::Error(EAFNOSUPPORT, "Unsupported socket address family");
  }
  std::memcpy(&out.storage_, addr, out.len_);
  return out;
}

const sockaddr* SocketAddress::get() const {
  // sockaddr_storage is the one type the sockets API defines to alias every sockaddr_*.
  return reinterpret_cast<const sockaddr*>(&storage_);
}

uint16_t SocketAddress::port() const {
  if (is_v4()) return ntohs(reinterpret_cast<const sockaddr_in*>(&storage_)->sin_port);
  if (is_v6()) return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage_)->sin6_port);
  return 0;
}

uint32_t SocketAddress::v4() const {
  return ntohl(reinterpret_cast<const sockaddr_in*>(&storage_)->sin_addr.s_addr);
}

const uint8_t* SocketAddress::v6() const {
  return reinterpret_cast<const sockaddr_in6*>(&storage_)->sin6_addr.s6_addr;
}

std::string SocketAddress::IpString() const {
  char buf[INET6_ADDRSTRLEN] = {};
  if (is_v4()) {
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&storage_)->sin_addr, buf,
                sizeof(buf));
  } else if (is_v6()) {
    ::inet_ntop(AF_INET6, v6(), buf, sizeof(buf));
  }
  return buf;
}

std::string SocketAddress::ToString() const {
  if (!is_v4() && !is_v6()) return "(none)";
  // Appended piece by piece: GCC 12 at -O3 warns falsely (-Wrestrict) about the inlined
  // operator+ chain on temporaries.
  std::string out;
  out.reserve(INET6_ADDRSTRLEN + 8);
  if (is_v6()) out += '[';
  out += IpString();
  if (is_v6()) out += ']';
  out += ':';
  out += std::to_string(port());
  return out;
}

}  // namespace sbx::relay
