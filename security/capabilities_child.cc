// Child side of capabilities: raw prctl/capset calls, no allocation, no libcap (whose
// cap_t API allocates). See capabilities.h for the contract.
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

#include "security/capabilities.h"

namespace sbx::security {
namespace {

constexpr bool Has(CapBits bits, int cap) { return ((bits >> cap) & 1U) != 0; }

// The prctl loops stop at 63: CapBits cannot name more.
constexpr int LoopEnd(int last_cap) { return last_cap < 63 ? last_cap : 63; }

}  // namespace

int DropBoundingSet(CapBits keep, int last_cap) noexcept {
  for (int cap = 0; cap <= LoopEnd(last_cap); ++cap) {
    if (Has(keep, cap)) continue;
    // EINVAL: the kernel does not know the cap; EPERM: no CAP_SETPCAP in this namespace.
    // bwrap ignores both and relies on no_new_privs.
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL && errno != EPERM) {
      return errno;
    }
  }
  return 0;
}

int SetCapSets(CapBits permitted, CapBits effective, CapBits inheritable,
               bool tolerate_eperm) noexcept {
  __user_cap_header_struct header{};
  header.version = _LINUX_CAPABILITY_VERSION_3;
  header.pid = 0;
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  data[0].permitted = static_cast<uint32_t>(permitted);
  data[0].effective = static_cast<uint32_t>(effective);
  data[0].inheritable = static_cast<uint32_t>(inheritable);
  data[1].permitted = static_cast<uint32_t>(permitted >> 32);
  data[1].effective = static_cast<uint32_t>(effective >> 32);
  data[1].inheritable = static_cast<uint32_t>(inheritable >> 32);
  if (syscall(SYS_capset, &header, data) != 0) {
    const int err = errno;
    if (err == EPERM && tolerate_eperm) return 0;
    return err;
  }
  return 0;
}

int ReadCapSets(CapSets* sets) noexcept {
  __user_cap_header_struct header{};
  header.version = _LINUX_CAPABILITY_VERSION_3;
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (syscall(SYS_capget, &header, data) != 0) return errno;
  auto join = [](uint32_t low, uint32_t high) { return (CapBits{high} << 32) | low; };
  sets->permitted = join(data[0].permitted, data[1].permitted);
  sets->effective = join(data[0].effective, data[1].effective);
  sets->inheritable = join(data[0].inheritable, data[1].inheritable);
  return 0;
}

int RaiseAmbientCaps(CapBits caps, int last_cap) noexcept {
  // The kernel raises an ambient cap only when it is both permitted and inheritable; one
  // capget spares the raises that must fail (all of them for a root caller, whose
  // inheritable set is empty), the outcome being the same.
  if (CapSets sets; ReadCapSets(&sets) == 0) caps &= sets.permitted & sets.inheritable;
  for (int cap = 0; cap <= LoopEnd(last_cap); ++cap) {
    if (!Has(caps, cap)) continue;
    // EPERM: the cap is not in both permitted and inheritable (for instance after a
    // tolerated capset failure); bwrap ignores it, and so does the kernel model.
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cap, 0, 0) != 0 && errno != EINVAL &&
        errno != EPERM) {
      return errno;
    }
  }
  return 0;
}

int SetKeepCaps(bool keep) noexcept {
  return prctl(PR_SET_KEEPCAPS, keep ? 1 : 0, 0, 0, 0) == 0 ? 0 : errno;
}

int ClearAllCaps(bool tolerate_eperm) noexcept {
  // Lowering permitted and inheritable to nothing also empties the ambient set.
  return SetCapSets(0, 0, 0, tolerate_eperm);
}

int ApplyCapPlanBounding(const CapPlan& plan) noexcept {
  if (!plan.bounding.has_value()) return 0;
  return DropBoundingSet(*plan.bounding, plan.last_cap);
}

int ApplyCapPlanSets(const CapPlan& plan) noexcept {
  if (plan.skip_capset) return 0;
  return SetCapSets(plan.permitted, plan.effective, plan.inheritable, plan.tolerate_capset_eperm);
}

int ApplyCapPlanAmbient(const CapPlan& plan) noexcept {
  return RaiseAmbientCaps(plan.ambient, plan.last_cap);
}

}  // namespace sbx::security
