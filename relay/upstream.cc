#include "relay/upstream.h"

#include <netdb.h>

#include <cerrno>
#include <charconv>
#include <cstring>

#include "base/c_handle.h"

namespace sbx::relay {
namespace {

struct Prefix {
  uint32_t net;
  int bits;
};

bool InV4(uint32_t ip, Prefix prefix) {
  uint32_t mask = prefix.bits == 0 ? 0 : ~uint32_t{0} << (32 - prefix.bits);
  return (ip & mask) == prefix.net;
}

AddressClass ClassifyV4(uint32_t ip) {
  if (ip == 0xA9FEA9FE) return AddressClass::kMetadata;  // 169.254.169.254
  if (ip == 0) return AddressClass::kUnspecified;
  if (InV4(ip, {0x7F000000, 8})) return AddressClass::kLoopback;
  if (InV4(ip, {0xA9FE0000, 16})) return AddressClass::kLinkLocal;
  if (InV4(ip, {0xE0000000, 4})) return AddressClass::kMulticast;
  if (InV4(ip, {0xF0000000, 4})) return AddressClass::kBroadcast;  // and 255.255.255.255
  constexpr Prefix kPrivate[] = {
      {0x0A000000, 8},   // 10/8
      {0xAC100000, 12},  // 172.16/12
      {0xC0A80000, 16},  // 192.168/16
      {0x64400000, 10},  // 100.64/10, shared address space (CGNAT)
      {0x00000000, 8},   // 0/8, "this network"
      {0xC6120000, 15},  // 198.18/15, benchmarking (often lab networks)
  };
  for (Prefix prefix : kPrivate) {
    if (InV4(ip, prefix)) return AddressClass::kPrivate;
  }
  return AddressClass::kPublic;
}

uint32_t V4FromBytes(const uint8_t* b) {
  return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | uint32_t{b[3]};
}

AddressClass ClassifyV6(const uint8_t* b) {
  static constexpr uint8_t kZero[16] = {};
  static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  static constexpr uint8_t kNat64[12] = {0, 0x64, 0xff, 0x9b};
  static constexpr uint8_t kAwsMetadata[16] = {0xfd, 0, 0x0e, 0xc2, 0, 0, 0,    0,
                                               0,    0, 0,    0,    0, 0, 0x02, 0x54};
  if (std::memcmp(b, kZero, 16) == 0) return AddressClass::kUnspecified;
  if (std::memcmp(b, kZero, 15) == 0 && b[15] == 1) return AddressClass::kLoopback;
  if (std::memcmp(b, kAwsMetadata, 16) == 0) return AddressClass::kMetadata;
  // An IPv4 address carried in IPv6 reaches that IPv4 address: judge it as one.
  if (std::memcmp(b, kMapped, 12) == 0 || std::memcmp(b, kNat64, 12) == 0) {
    return ClassifyV4(V4FromBytes(b + 12));
  }
  if (b[0] == 0xff) return AddressClass::kMulticast;
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) return AddressClass::kLinkLocal;  // fe80::/10
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0xc0) return AddressClass::kPrivate;    // fec0::/10
  if ((b[0] & 0xfe) == 0xfc) return AddressClass::kPrivate;                    // fc00::/7
  if (std::memcmp(b, kZero, 12) == 0) return AddressClass::kPrivate;  // ::/96, IPv4-compatible
  // Tunnels whose far end is an IPv4 address the relay cannot judge from here (6to4 carries
  // any IPv4 address, a private one included; Teredo's relay is chosen by the network):
  // never an upstream.
  if (b[0] == 0x20 && b[1] == 0x02) return AddressClass::kPrivate;  // 2002::/16, 6to4
  if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0 && b[3] == 0) {
    return AddressClass::kPrivate;  // 2001::/32, Teredo
  }
  return AddressClass::kPublic;
}

bool IsHostName(std::string_view host) {
  if (host.empty() || host.size() > 253 || host.front() == '.' || host.front() == '-') {
    return false;
  }
  for (char c : host) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '.';
    if (!ok) return false;
  }
  return true;
}

using AddrInfoHandle = base::CHandle<addrinfo, ::freeaddrinfo>;

}  // namespace

AddressClass ClassifyAddress(const SocketAddress& address) {
  return address.is_v4() ? ClassifyV4(address.v4()) : ClassifyV6(address.v6());
}

std::string_view AddressClassName(AddressClass cls) {
  switch (cls) {
    case AddressClass::kPublic:
      return "public";
    case AddressClass::kLoopback:
      return "loopback";
    case AddressClass::kPrivate:
      return "private";
    case AddressClass::kLinkLocal:
      return "link-local";
    case AddressClass::kUnspecified:
      return "unspecified";
    case AddressClass::kMulticast:
      return "multicast";
    case AddressClass::kBroadcast:
      return "broadcast";
    case AddressClass::kMetadata:
      return "metadata";
  }
  return "unknown";
}

std::string_view RouteKindName(RouteKind kind) {
  switch (kind) {
    case RouteKind::kTls:
      return "tls";
    case RouteKind::kTcp:
      return "tcp";
    case RouteKind::kBroker:
      return "broker";
  }
  return "unknown";
}

RouteKind DefaultRouteKind(uint16_t port) {
  return port == 443 ? RouteKind::kTls : RouteKind::kTcp;
}

base::Result<Route> ParseRoute(std::string_view spec, int index) {
  Route route;
  route.index = index;
  std::optional<RouteKind> kind;
  std::string_view route_part = spec;  // without ",KIND"
  // Neither a host name nor an address holds a comma: the first one starts the kind.
  if (size_t comma = spec.find(','); comma != std::string_view::npos) {
    std::string_view name = spec.substr(comma + 1);
    if (name == "tls") {
      kind = RouteKind::kTls;
    } else if (name == "tcp") {
      kind = RouteKind::kTcp;
    } else if (name == "broker") {
      kind = RouteKind::kBroker;
    } else {
      return base::Error(EINVAL, "Unknown route kind (tls, tcp or broker) in route",
                         std::string(spec));
    }
    route_part = spec.substr(0, comma);
  }
  std::string_view target = route_part;
  if (size_t eq = route_part.find('='); eq != std::string_view::npos) {
    auto address = SocketAddress::Parse(route_part.substr(eq + 1));
    if (!address)
      return base::Error(EINVAL, "Invalid upstream address in route", std::string(spec));
    route.upstream_override = *address;
    target = route_part.substr(0, eq);
  }
  if (size_t colon = target.rfind(':'); colon != std::string_view::npos) {
    std::string_view port_text = target.substr(colon + 1);
    unsigned port = 0;
    auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (ec != std::errc() || end != port_text.data() + port_text.size() || port == 0 ||
        port > 65535) {
      return base::Error(EINVAL, "Invalid port in route", std::string(spec));
    }
    route.port = static_cast<uint16_t>(port);
    target = target.substr(0, colon);
  }
  if (!IsHostName(target))
    return base::Error(EINVAL, "Invalid host name in route", std::string(spec));
  route.host = std::string(target);
  route.kind = kind.value_or(DefaultRouteKind(route.port));
  return route;
}

base::Result<SocketAddress> PickUpstream(std::string_view host,
                                         const std::vector<SocketAddress>& candidates) {
  if (candidates.empty()) return base::Error(ENOENT, "No address for", std::string(host));
  for (const SocketAddress& candidate : candidates) {
    AddressClass cls = ClassifyAddress(candidate);
    if (cls != AddressClass::kPublic) {
      // One bad answer refuses the name: a split answer is either a misconfiguration or an
      // attempt to reach the host's own networks, and guessing which is not our job.
      return base::Error(EACCES,
                         "Refusing " + std::string(AddressClassName(cls)) + " address " +
                             candidate.IpString() + " for",
                         std::string(host) + " (name the upstream explicitly with =ADDR:PORT)");
    }
  }
  return candidates.front();
}

base::Result<SocketAddress> ResolveUpstream(const Route& route) {
  if (route.upstream_override) return *route.upstream_override;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_ADDRCONFIG | AI_NUMERICSERV;
  addrinfo* raw = nullptr;
  std::string port = std::to_string(route.port);
  int rc = ::getaddrinfo(route.host.c_str(), port.c_str(), &hints, &raw);
  AddrInfoHandle results(raw);
  if (rc != 0) {
    int err = rc == EAI_SYSTEM ? errno : 0;
    return base::Error(err, "Can't resolve",
                       route.host + " (" + std::string(::gai_strerror(rc)) +
                           "; give its address with --allow " + route.host + "=ADDR:PORT)");
  }
  std::vector<SocketAddress> candidates;
  for (const addrinfo* ai = results.get(); ai != nullptr; ai = ai->ai_next) {
    auto address = SocketAddress::FromSockaddr(ai->ai_addr, ai->ai_addrlen);
    if (address) candidates.push_back(*address);
  }
  return PickUpstream(route.host, candidates);
}

}  // namespace sbx::relay
