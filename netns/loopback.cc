#include "netns/loopback.h"

#include <arpa/inet.h>
#include <linux/if_addr.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sys/socket.h>

#include <cerrno>

#include "base/unique_fd.h"
#include "netns/netlink.h"

namespace sbx::netns {
namespace {

constexpr int kLoopbackPrefixLen = 8;  // 127.0.0.0/8: every 127.x.y.z is local once lo is up
// lo's index in every network namespace: the kernel registers it first and BUG()s otherwise
// (loopback_net_init), so a new namespace needs no lookup.
constexpr int kLoopbackIfindex = 1;

bool IsPrivilegeError(int err) { return err == EPERM || err == EACCES; }

// The socket is made by hand rather than by nl_connect so that creation and bind failures
// stay apart (bwrap has a message for each), the fd is CLOEXEC whatever the libnl version,
// and the kernel picks the port (no libnl port bitmap, no buffer-size setsockopts).
std::optional<LoopbackFailure> OpenSocket(NlSocket* out) noexcept {
  NlSocket sock(nl_socket_alloc());
  if (!sock) return LoopbackFailure{LoopbackStep::kCreateSocket, ENOMEM};
  base::UniqueFd fd(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE));
  if (!fd) return LoopbackFailure{LoopbackStep::kCreateSocket, errno};
  sockaddr_nl local{};
  local.nl_family = AF_NETLINK;
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&local), sizeof(local)) != 0) {
    return LoopbackFailure{LoopbackStep::kBindSocket, errno};
  }
  if (int rc = nl_socket_set_fd(sock.get(), NETLINK_ROUTE, fd.get()); rc < 0) {
    return LoopbackFailure{LoopbackStep::kCreateSocket, NlErrorToErrno(rc)};
  }
  static_cast<void>(fd.release());  // nl_socket_free closes it now
  // One recvmsg per reply instead of a MSG_PEEK probe plus the read: ACKs are tiny and the
  // answer to RTM_GETLINK for lo (about 1.5 KB) fits libnl's default 16 KB buffer.
  nl_socket_disable_msg_peek(sock.get());
  *out = std::move(sock);
  return std::nullopt;
}

// RTM_NEWADDR 127.0.0.1/8 on `ifindex`, NLM_F_CREATE | NLM_F_EXCL, scope host, permanent;
// libnl sends IFA_LOCAL and IFA_ADDRESS both, as bwrap does. Returns 0 or an errno.
int AddLoopbackAddress(nl_sock* sock, int ifindex) noexcept {
  RtnlAddr addr(rtnl_addr_alloc());
  const in_addr loopback{htonl(INADDR_LOOPBACK)};
  NlAddr local(nl_addr_build(AF_INET, &loopback, sizeof(loopback)));
  if (!addr || !local) return ENOMEM;
  nl_addr_set_prefixlen(local.get(), kLoopbackPrefixLen);
  rtnl_addr_set_ifindex(addr.get(), ifindex);
  if (int rc = rtnl_addr_set_local(addr.get(), local.get()); rc < 0) return NlErrorToErrno(rc);
  rtnl_addr_set_scope(addr.get(), RT_SCOPE_HOST);
  rtnl_addr_set_flags(addr.get(), IFA_F_PERMANENT);
  return CallWithKernelErrno(sock, [&] { return rtnl_addr_add(sock, addr.get(), NLM_F_EXCL); });
}

// RTM_NEWLINK changing only IFF_UP on `ifindex`. Returns 0 or an errno.
int SetLinkUp(nl_sock* sock, int ifindex) noexcept {
  RtnlLink lo(rtnl_link_alloc());
  RtnlLink change(rtnl_link_alloc());
  if (!lo || !change) return ENOMEM;
  rtnl_link_set_ifindex(lo.get(), ifindex);
  rtnl_link_set_flags(change.get(), IFF_UP);
  return CallWithKernelErrno(sock,
                             [&] { return rtnl_link_change(sock, lo.get(), change.get(), 0); });
}

// RTM_GETLINK by name: whether lo is up already (*up), or the errno of the lookup.
int LookUpLoopbackIsUp(nl_sock* sock, bool* up) noexcept {
  rtnl_link* raw_lo = nullptr;
  int err = CallWithKernelErrno(sock, [&] { return rtnl_link_get_kernel(sock, 0, "lo", &raw_lo); });
  RtnlLink lo(raw_lo);
  if (err == 0 && !lo) err = ENODEV;
  if (err == 0) *up = (rtnl_link_get_flags(lo.get()) & IFF_UP) != 0;
  return err;
}

// bwrap's rule for a step refused for lack of privilege: fine if lo is up already (someone
// with the privilege did it). Only asked then, so the common case costs no lookup.
std::optional<LoopbackFailure> RefusedUnlessUp(nl_sock* sock, LoopbackStep step, int err) noexcept {
  bool up = false;
  if (int lookup = LookUpLoopbackIsUp(sock, &up); lookup != 0) {
    return LoopbackFailure{LoopbackStep::kLookUpLo, lookup};
  }
  if (up) return std::nullopt;
  return LoopbackFailure{step, err};
}

}  // namespace

const char* LoopbackStepMessage(LoopbackStep step) noexcept {
  switch (step) {
    case LoopbackStep::kCreateSocket:
      return "loopback: Failed to create NETLINK_ROUTE socket";
    case LoopbackStep::kBindSocket:
      return "loopback: Failed to bind NETLINK_ROUTE socket";
    case LoopbackStep::kLookUpLo:
      return "loopback: Failed to look up lo";
    case LoopbackStep::kNewAddr:
      return "loopback: Failed RTM_NEWADDR";
    case LoopbackStep::kNewLink:
      return "loopback: Failed RTM_NEWLINK";
  }
  return "loopback: Failed";
}

base::Error ToError(const LoopbackFailure& failure) {
  return {failure.err, LoopbackStepMessage(failure.step)};
}

std::optional<LoopbackFailure> BringUpLoopback() noexcept {
  NlSocket sock;
  if (auto failure = OpenSocket(&sock)) return failure;

  int err = AddLoopbackAddress(sock.get(), kLoopbackIfindex);
  if (err == EEXIST) err = 0;
  if (IsPrivilegeError(err)) return RefusedUnlessUp(sock.get(), LoopbackStep::kNewAddr, err);
  if (err != 0) return LoopbackFailure{LoopbackStep::kNewAddr, err};

  err = SetLinkUp(sock.get(), kLoopbackIfindex);
  if (IsPrivilegeError(err)) return RefusedUnlessUp(sock.get(), LoopbackStep::kNewLink, err);
  if (err != 0) return LoopbackFailure{LoopbackStep::kNewLink, err};
  return std::nullopt;
}

}  // namespace sbx::netns
