#include "supervise/tunnel_setup.h"

#include <linux/capability.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <utility>
#include <vector>

#include "netns/loopback.h"
#include "netns/ownership.h"
#include "relay/endpoint.h"
#include "relay/handoff.h"
#include "security/capabilities.h"

namespace sbx::supervise {
namespace {

using base::ErrnoError;
using base::Error;
using base::Result;
using base::Status;
using base::UniqueFd;

// The kernel's highest capability number, found with a few PR_CAPBSET_READ calls (EINVAL
// past the last one) instead of reading /proc: the drop and the check below then make one
// prctl per real capability rather than one per security::CapBits bit (64).
int KernelLastCap() {
  int known = 0;  // CAP_CHOWN exists on every kernel
  int unknown = 64;
  while (unknown - known > 1) {
    int mid = (known + unknown) / 2;
    if (::prctl(PR_CAPBSET_READ, mid, 0, 0, 0) >= 0) {
      known = mid;
    } else {
      unknown = mid;
    }
  }
  return known;
}

// Prefixes an error with the route it concerns, keeping its errno.
Error ForRoute(const SuperviseRoute& route, const Error& error) {
  return {error.err(), "route " + route.text + ": " + error.op(), error.subject()};
}

Status CheckCapSetsEmpty() {
  security::CapSets sets;
  if (int err = security::ReadCapSets(&sets); err != 0) {
    return Error(err, "Can't read capabilities");
  }
  if (sets.permitted != 0 || sets.effective != 0 || sets.inheritable != 0) {
    return Error(EPERM, "Capabilities still held after dropping them");
  }
  const int last_cap = KernelLastCap();
  for (int cap = 0; cap <= last_cap; ++cap) {
    if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, cap, 0, 0) == 1) {
      return Error(EPERM, "Ambient capability still set after dropping it:", std::to_string(cap));
    }
  }
  return {};
}

// The route socket is bind-mounted into the sandbox for this one handoff; once it is done
// the agent must not reach the host relay's Unix socket at all (every connection there
// would only be refused, and recorded). Detached, the path shows the empty mount point
// left on the tunnel tmpfs, and without CAP_SYS_ADMIN the agent cannot mount it again. A
// path that is no mount point (the supervisor run outside `run`) has nothing to remove;
// under bwrap the mount belongs to bwrap's namespace (EPERM) and stays. Either way the
// host relay closes its end of the socket once it adopted the listener (relay/relay.h),
// so the path leads nowhere: this is the second of two locks.
Status UnmountRouteSocket(const relay::Endpoint& target) {
  if (!target.is_unix()) return {};
  if (::umount2(target.unix_path().c_str(), MNT_DETACH | UMOUNT_NOFOLLOW) == 0) return {};
  if (errno == EINVAL || errno == EPERM) return {};
  return ErrnoError("Can't unmount the route socket", target.unix_path());
}

}  // namespace

Status EnterPrivateNetwork() {
  if (::unshare(CLONE_NEWNET) != 0) return ErrnoError("Can't unshare", "the network namespace");
  if (auto owned = netns::CheckNetnsOwnedByOwnUserns(); !owned) return owned.error();
  if (auto failure = netns::BringUpLoopback()) return netns::ToError(*failure);
  return {};
}

Status HandOverRouteListeners(const SuperviseConfig& config) {
  std::vector<UniqueFd> listeners(config.routes.size());
  // Every listener is bound before the first channel: a bind failure is a local problem and
  // should be reported without first waiting on a slow relay.
  for (size_t i = 0; i < config.routes.size(); ++i) {
    auto fd = relay::Endpoint::Tcp(config.routes[i].listen).Listen();
    if (!fd) return ForRoute(config.routes[i], fd.error());
    // Accepted sockets inherit TCP_NODELAY from the listener, on the host relay's side too.
    relay::SetNoDelay(fd->get());
    listeners[i] = std::move(*fd);
  }
  for (size_t i = 0; i < config.routes.size(); ++i) {
    auto channel = config.routes[i].target.Connect(config.probe_timeout);
    if (!channel) return ForRoute(config.routes[i], channel.error());
    // The channel is empty and the message one byte: this cannot find the buffer full.
    auto sent = relay::SendSocket(channel->get(), listeners[i].get());
    if (!sent) return ForRoute(config.routes[i], sent.error());
    // Ours closes here: the relay's is then the only reference, so nobody can change the
    // listener's flags under it, and if the relay goes, the agent's connects are refused.
    listeners[i].reset();
    if (auto gone = UnmountRouteSocket(config.routes[i].target); !gone) {
      return ForRoute(config.routes[i], gone.error());
    }
  }
  return {};
}

Status DropAllPrivileges() {
  // Ambient first, explicitly: it is what exec would hand to the agent.
  if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0) {
    return ErrnoError("Can't clear the ambient capabilities");
  }
  // The bounding set can only shrink while CAP_SETPCAP is still effective: before capset.
  if (int err = security::DropBoundingSet(0, KernelLastCap()); err != 0) {
    return Error(err, "Can't drop the capability bounding set");
  }
  if (int err = security::ClearAllCaps(/*tolerate_eperm=*/false); err != 0) {
    return Error(err, "Can't drop capabilities");
  }
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return ErrnoError("Can't set no_new_privs");
  // Non-dumpable: /proc/1/mem and ptrace need CAP_SYS_PTRACE over our user namespace, which
  // the agent never has. Reset by exec, so the agent itself stays dumpable.
  if (::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0)
    return ErrnoError("Can't make the process non-dumpable");
  return CheckCapSetsEmpty();
}

}  // namespace sbx::supervise
