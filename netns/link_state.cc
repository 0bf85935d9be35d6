#include "netns/link_state.h"

#include <arpa/inet.h>
#include <net/if.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

#include "netns/netlink.h"

namespace sbx::netns {
namespace {

// libnl caches hold nl_object*; the route objects start with the common object header,
// which is how libnl's own OBJ_CAST works.
template <typename T>
T* As(nl_object* object) {
  return reinterpret_cast<T*>(object);
}

std::string ToText(nl_addr* addr) {
  char text[INET6_ADDRSTRLEN] = {};
  const int family = nl_addr_get_family(addr);
  if (family != AF_INET && family != AF_INET6) return {};
  if (::inet_ntop(family, nl_addr_get_binary_addr(addr), text, sizeof(text)) == nullptr) {
    return {};
  }
  return text;
}

base::Result<std::vector<LinkState>> ReadLinks(nl_sock* sock) {
  nl_cache* raw = nullptr;
  if (int rc = rtnl_link_alloc_cache(sock, AF_UNSPEC, &raw); rc < 0) {
    return NlError(rc, "Can't list network links");
  }
  NlCache cache(raw);
  std::vector<LinkState> links;
  for (nl_object* obj = nl_cache_get_first(cache.get()); obj != nullptr;
       obj = nl_cache_get_next(obj)) {
    auto* link = As<rtnl_link>(obj);
    LinkState state;
    state.index = rtnl_link_get_ifindex(link);
    const char* name = rtnl_link_get_name(link);
    state.name = name != nullptr ? name : "";
    state.flags = rtnl_link_get_flags(link);
    links.push_back(std::move(state));
  }
  std::sort(links.begin(), links.end(),
            [](const LinkState& a, const LinkState& b) { return a.index < b.index; });
  return links;
}

base::Status AddAddresses(nl_sock* sock, std::vector<LinkState>* links) {
  nl_cache* raw = nullptr;
  if (int rc = rtnl_addr_alloc_cache(sock, &raw); rc < 0) {
    return NlError(rc, "Can't list network addresses");
  }
  NlCache cache(raw);
  for (nl_object* obj = nl_cache_get_first(cache.get()); obj != nullptr;
       obj = nl_cache_get_next(obj)) {
    auto* addr = As<rtnl_addr>(obj);
    nl_addr* value = rtnl_addr_get_local(addr);
    if (value == nullptr) value = rtnl_addr_get_peer(addr);
    if (value == nullptr) continue;
    IpAddress ip;
    ip.family = rtnl_addr_get_family(addr);
    ip.address = ToText(value);
    ip.prefix_len = rtnl_addr_get_prefixlen(addr);
    ip.scope = rtnl_addr_get_scope(addr);
    ip.flags = rtnl_addr_get_flags(addr);
    const int index = rtnl_addr_get_ifindex(addr);
    auto it = std::find_if(links->begin(), links->end(),
                           [index](const LinkState& l) { return l.index == index; });
    if (it != links->end() && !ip.address.empty()) it->addresses.push_back(std::move(ip));
  }
  return {};
}

void AppendFlag(std::string* out, bool set, const char* name) {
  if (!set) return;
  if (out->back() != '<') *out += ',';
  *out += name;
}

}  // namespace

bool LinkState::up() const { return (flags & IFF_UP) != 0; }
bool LinkState::loopback() const { return (flags & IFF_LOOPBACK) != 0; }
bool LinkState::running() const { return (flags & IFF_RUNNING) != 0; }

bool LinkState::HasAddress(int family, std::string_view address) const {
  return std::any_of(addresses.begin(), addresses.end(), [&](const IpAddress& ip) {
    return ip.family == family && ip.address == address;
  });
}

base::Result<std::vector<LinkState>> ListLinks() {
  auto sock = OpenRouteSocket();
  if (!sock) return sock.error();
  auto links = ReadLinks(sock->get());
  if (!links) return links.error();
  if (auto added = AddAddresses(sock->get(), &*links); !added) return added.error();
  return links;
}

const LinkState* FindLink(const std::vector<LinkState>& links, std::string_view name) {
  auto it = std::find_if(links.begin(), links.end(),
                         [name](const LinkState& l) { return l.name == name; });
  return it == links.end() ? nullptr : &*it;
}

std::string DescribeLinks(const std::vector<LinkState>& links) {
  std::string out;
  for (const LinkState& link : links) {
    out += std::to_string(link.index) + ": " + link.name + " <";
    AppendFlag(&out, link.up(), "UP");
    AppendFlag(&out, link.loopback(), "LOOPBACK");
    AppendFlag(&out, link.running(), "RUNNING");
    out += '>';
    for (const IpAddress& ip : link.addresses) {
      out += ' ' + ip.address + '/' + std::to_string(ip.prefix_len);
    }
    out += '\n';
  }
  return out;
}

}  // namespace sbx::netns
