// Bringing up `lo` in a fresh network namespace, as bwrap does (network.c): add
// 127.0.0.1/8 (scope host, permanent) to lo, then set IFF_UP, each request waiting for the
// kernel's ACK. IPv6 ::1 is not added explicitly; the kernel adds it when lo comes up
// (unless IPv6 is disabled).
//
// Who calls it: the sandbox child right after clone, in its new user + network namespace
// (before or after its id map is written: the capability check only needs CAP_NET_ADMIN
// in the user namespace owning the netns), and the tunnel supervisor after
// unshare(CLONE_NEWNET).
//
// Resources: one NETLINK_ROUTE socket, created SOCK_CLOEXEC and closed before returning,
// whatever the outcome. No output, no exit, no formatting.
#pragma once

#include <cstdint>
#include <optional>
#include <type_traits>

#include "base/error.h"

namespace sbx::netns {

// The failing step, in the order the steps run; each maps to one of bwrap's messages.
enum class LoopbackStep : uint8_t {
  kCreateSocket,  // "loopback: Failed to create NETLINK_ROUTE socket"
  kBindSocket,    // "loopback: Failed to bind NETLINK_ROUTE socket"
  kLookUpLo,      // "loopback: Failed to look up lo"
  kNewAddr,       // "loopback: Failed RTM_NEWADDR"
  kNewLink,       // "loopback: Failed RTM_NEWLINK"
};

// Plain data so a child can send it whole over its error pipe.
struct LoopbackFailure {
  LoopbackStep step;
  int32_t err;  // positive errno
};
static_assert(std::is_trivially_copyable_v<LoopbackFailure>);

// bwrap's message for `step`, without the strerror part; a string literal.
const char* LoopbackStepMessage(LoopbackStep step) noexcept;

// Error{failure.err, LoopbackStepMessage(failure.step)}: renders as
// "loopback: Failed RTM_NEWADDR: Operation not permitted".
base::Error ToError(const LoopbackFailure& failure);

// Adds 127.0.0.1/8 to lo and sets it up. Success (nullopt) also when the address is already
// there (EEXIST) and, as systemd's loopback-setup does, when a request is refused with
// EPERM/EACCES while lo is already up: an unprivileged caller in a configured namespace
// has nothing left to do. Addresses lo by its fixed index 1: two requests in the common case,
// the RTM_GETLINK lookup only after a refusal (which then fails as "Failed to look up lo").
[[nodiscard]] std::optional<LoopbackFailure> BringUpLoopback() noexcept;

}  // namespace sbx::netns
