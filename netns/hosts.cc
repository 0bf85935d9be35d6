#include "netns/hosts.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstdio>
#include <set>

namespace sbx::netns {
namespace {

constexpr size_t kMaxHostnameLen = 253;
constexpr size_t kMaxLabelLen = 63;
constexpr uint32_t kRouteBase = (127U << 24) | (77U << 16);  // 127.77.0.0
constexpr uint32_t kFirstRouteHost = 2;

// The input as it may appear inside one line of an error message: quoted, with control
// characters, quotes, backslashes and non-ASCII bytes escaped, cut after 80 bytes.
std::string Quote(std::string_view text) {
  constexpr size_t kMaxShown = 80;
  std::string out = "\"";
  for (size_t i = 0; i < text.size() && i < kMaxShown; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7f) {
      char hex[5];
      std::snprintf(hex, sizeof(hex), "\\x%02x", c);
      out += hex;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (text.size() > kMaxShown) out += "...";
  return out + "\"";
}

base::Error Invalid(std::string_view host, const std::string& reason) {
  return base::Error::Message("Invalid hostname " + Quote(host) + ": " + reason);
}

bool IsLabelChar(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; }

// "" when `label` (already lowercased) is a valid RFC 1123 label, else the reason.
std::string CheckLabel(std::string_view label) {
  if (label.empty()) return "empty label (two dots in a row, or a leading dot)";
  if (label.size() > kMaxLabelLen) {
    return "label of " + std::to_string(label.size()) + " characters (at most 63)";
  }
  for (char c : label) {
    if (!IsLabelChar(c)) {
      return "character " + Quote(std::string_view(&c, 1)) +
             " not allowed (letters, digits, '-' and '.' only)";
    }
  }
  if (label.front() == '-' || label.back() == '-') {
    return "label " + Quote(label) + " starts or ends with '-'";
  }
  return {};
}

// IP literals are refused: the relay must dial a name it resolves itself, and glibc would
// parse such a "name" as an address without ever reading /etc/hosts.
bool IsIpLiteral(const std::string& name) {
  in_addr v4{};
  in6_addr v6{};
  if (::inet_aton(name.c_str(), &v4) != 0) return true;  // also 127.1, 0x7f000001, 017...
  if (::inet_pton(AF_INET6, name.c_str(), &v6) == 1) return true;
  const size_t dot = name.rfind('.');
  std::string_view last = dot == std::string::npos ? name : std::string_view(name).substr(dot + 1);
  return std::all_of(last.begin(), last.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool IsReserved(std::string_view name) {
  return name == "localhost" || name.ends_with(".localhost") || name == "ip6-localhost" ||
         name == "ip6-loopback";
}

}  // namespace

base::Result<std::string> NormalizeHostname(std::string_view host) {
  if (host.empty()) return Invalid(host, "empty");
  if (host.find(':') != std::string_view::npos || host.front() == '[') {
    return Invalid(host, "an IPv6 address or a port; give the hostname alone");
  }
  std::string name(host);
  if (name.back() == '.') name.pop_back();  // the root label of a fully qualified name
  std::transform(name.begin(), name.end(), name.begin(), [](char c) {
    return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  });
  if (name.size() > kMaxHostnameLen) {
    return Invalid(host, std::to_string(name.size()) + " characters (at most 253)");
  }
  for (size_t start = 0;;) {
    const size_t dot = name.find('.', start);
    const size_t end = dot == std::string::npos ? name.size() : dot;
    if (std::string reason = CheckLabel(std::string_view(name).substr(start, end - start));
        !reason.empty()) {
      return Invalid(host, reason);
    }
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  if (IsIpLiteral(name)) return Invalid(host, "an IP address, not a hostname");
  if (IsReserved(name)) return Invalid(host, "reserved for the loopback entries of /etc/hosts");
  return name;
}

base::Result<in_addr> RouteInAddr(size_t index) {
  if (index >= kMaxRoutes) {
    return base::Error::Message("Route index " + std::to_string(index) + " out of range (at most " +
                                std::to_string(kMaxRoutes) + " routes)");
  }
  in_addr addr{};
  addr.s_addr = htonl(kRouteBase + kFirstRouteHost + static_cast<uint32_t>(index));
  return addr;
}

base::Result<std::string> RouteAddress(size_t index) {
  auto addr = RouteInAddr(index);
  if (!addr) return addr.error();
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &*addr, text, sizeof(text));
  return std::string(text);
}

base::Status ValidateRoutes(std::span<const HostRoute> routes) {
  if (routes.size() > kMaxRoutes) {
    return base::Error::Message("Too many routes: " + std::to_string(routes.size()) + " (at most " +
                                std::to_string(kMaxRoutes) + ")");
  }
  std::set<std::string> seen;
  for (const HostRoute& route : routes) {
    auto name = NormalizeHostname(route.host);
    if (!name) return name.error();
    if (route.port == 0) return base::Error::Message("Route " + *name + ": port 0 is not valid");
    if (!seen.insert(*name).second) {
      return base::Error::Message("Route " + *name + " is given twice");
    }
  }
  return {};
}

base::Result<std::string> RenderHostsFile(std::span<const HostRoute> routes) {
  if (auto valid = ValidateRoutes(routes); !valid) return valid.error();
  std::string out =
      "# Generated by ateam-sandbox: each allowed host has its own loopback address.\n"
      "127.0.0.1 localhost\n"
      "::1 localhost ip6-localhost ip6-loopback\n";
  for (size_t i = 0; i < routes.size(); ++i) {
    auto address = RouteAddress(i);
    auto name = NormalizeHostname(routes[i].host);
    if (!address) return address.error();
    if (!name) return name.error();
    out += *address + ' ' + *name + '\n';
  }
  return out;
}

}  // namespace sbx::netns
