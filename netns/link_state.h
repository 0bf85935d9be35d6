// A snapshot of the network links and addresses of the calling thread's network namespace,
// for tests and diagnostics (`--dry-run` style reports, "what does the sandbox see").
// Not used on the sandbox start-up path: it dumps every link and address through libnl
// caches. Any process, any namespace; opens and closes its own NETLINK_ROUTE socket.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"

namespace sbx::netns {

struct IpAddress {
  int family = 0;       // AF_INET or AF_INET6
  std::string address;  // inet_ntop form of IFA_LOCAL (IFA_ADDRESS when there is no local)
  int prefix_len = 0;
  int scope = 0;       // RT_SCOPE_*: RT_SCOPE_HOST (254) for 127.0.0.1 on lo
  unsigned flags = 0;  // IFA_F_*
};

struct LinkState {
  int index = 0;
  std::string name;
  unsigned flags = 0;  // IFF_*
  std::vector<IpAddress> addresses;

  [[nodiscard]] bool up() const;
  [[nodiscard]] bool loopback() const;
  [[nodiscard]] bool running() const;
  // True when `addresses` holds `address` (inet_ntop form) of `family`.
  [[nodiscard]] bool HasAddress(int family, std::string_view address) const;
};

// Every link, ordered by index, with its IPv4 and IPv6 addresses.
base::Result<std::vector<LinkState>> ListLinks();

// The link called `name` in `links`, or nullptr.
const LinkState* FindLink(const std::vector<LinkState>& links, std::string_view name);

// "1: lo <UP,LOOPBACK,RUNNING> 127.0.0.1/8 ::1/128", one line per link.
std::string DescribeLinks(const std::vector<LinkState>& links);

}  // namespace sbx::netns
