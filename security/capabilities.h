// Capabilities: the parent decides a CapPlan before clone, the child applies it.
//
// The goal is to leave the command with exactly the capabilities bwrap 0.8.0 (non-setuid)
// leaves it with. Measured on Debian 12, kernel 6.18, cap_last_cap 40, with
// `bwrap --ro-bind / / --proc /proc ARGS grep Cap /proc/self/status` (the root caller was
// missing CAP_SYS_RESOURCE, which is what makes C differ from F):
//   C = the root caller's effective set, 000001fffeffffff (all but CAP_SYS_RESOURCE)
//   F = every capability 0..40, 000001ffffffffff      N = CAP_NET_ADMIN, 0000000000001000
//   S = C without CAP_SYS_ADMIN, 000001fffedfffff     U = F without CAP_SYS_ADMIN
//
//   caller  bwrap options                                     Inh Prm Eff Bnd Amb
//   root    (none)                                              0   C   C   C   0
//   root    --unshare-user [--uid 0]                            0   C   C   C   0
//   root    --unshare-user --uid 1000                           0   0   0   C   0
//   root    --cap-drop ALL                                      0   0   0   C   0
//   root    --cap-drop CAP_SYS_ADMIN                            S   S   S   C   S
//   root    --cap-add CAP_NET_ADMIN                             C   C   C   C   C
//   root    --cap-drop ALL --cap-add CAP_NET_ADMIN              N   N   N   C   N
//   root    --cap-add ALL, or --cap-add CAP_SYS_RESOURCE  (1)   0   C   C   C   0
//   root    --unshare-user --cap-add CAP_NET_ADMIN [--uid 1000] C   C   C   C   C
//   root    --unshare-user --cap-drop ALL --cap-add CAP_NET_ADMIN [--uid 1000]
//                                                               N   N   N   N   N
//   root    --unshare-user --cap-drop ALL                       0   0   0   0   0
//   root    --unshare-user --cap-drop CAP_SYS_ADMIN [--uid 1000]
//                                                               S   S   S   S   S
//   root    --unshare-user --cap-add ALL [--uid 1000]           F   F   F   F   F
//   user    (none), --cap-drop ALL, --cap-drop X [--uid 0|1000] 0   0   0   0   0
//   user    --cap-add CAP_NET_ADMIN [--uid 0|1000]              N   N   N   N   N
//   user    --cap-add ALL [--uid 0|1000]                        F   F   F   F   F
//   user    --cap-add ALL --cap-drop CAP_SYS_ADMIN              U   U   U   U   U
//   user    --dev /dev --uid 1000 --cap-add CAP_NET_ADMIN (2)   N   N   N   N   N
//   (--unshare-pid changes nothing: the command, pid 2, sees the same sets.)
//   (1) capset asks for a capability the root caller lacks: EPERM, which bwrap ignores for
//       a root caller, so nothing changes; every ambient raise then fails (EPERM, ignored).
//   (2) the second user namespace resets the bounding set; it is dropped again there.
// tests/security/cap_apply_test.cc re-runs most rows against /usr/bin/bwrap and our child.
//
// How bwrap gets there (and so how a CapPlan is applied), in child order:
//   1. only in a user namespace it created: PR_CAPBSET_DROP of every cap not kept;
//   2. capset(P = E = I = kept), skipped for a root caller without --cap-add/--cap-drop;
//      EPERM ignored for a root caller;
//   3. just before exec: PR_CAP_AMBIENT_RAISE of every kept cap, EINVAL/EPERM ignored;
//   4. exec under no_new_privs: a non-root uid keeps only the ambient set in P and E;
//      uid 0 gets (bounding | inheritable) capped by its permitted set.
// The sandbox uid therefore never changes what is applied, only what exec leaves
// (PredictCapsAfterExec models it). A pid-1 reaper clears everything (ClearAllCaps).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"

namespace sbx::security {

// Bit N = capability N, as /proc/self/status prints them.
// --cap-add/--cap-drop, applied in order to the default set (resolved by ResolveCapabilities).
struct CapChange {
  enum class Kind { kAdd, kDrop };
  Kind kind = Kind::kAdd;
  std::optional<int> cap;  // nullopt means ALL
};

using CapBits = uint64_t;

// Every capability 0..last_cap (last_cap = /proc/sys/kernel/cap_last_cap).
constexpr CapBits AllCaps(int last_cap) {
  if (last_cap >= 63) return ~CapBits{0};
  if (last_cap < 0) return 0;
  return (CapBits{1} << (last_cap + 1)) - 1;
}

// Applies --cap-add/--cap-drop in command-line order to `initial` (bwrap: the caller's
// effective set when the caller is uid 0, else empty). ALL means every capability up to
// last_cap. A capability above last_cap is dropped from the result, as the kernel masks
// it; a number outside 0..63 is an Error.
base::Result<CapBits> ResolveCapabilities(CapBits initial, std::span<const CapChange> changes,
                                          int last_cap);

struct CapDecisionInput {
  bool caller_is_root = false;      // real uid 0 (setuid mode is refused)
  bool new_user_namespace = false;  // the sandbox runs in a user namespace we create
  bool cap_options_used = false;    // any --cap-add / --cap-drop
  CapBits resolved = 0;             // ResolveCapabilities(...)
  int last_cap = 40;
};

// What the child does to its capabilities; plain data stored in the plan.
struct CapPlan {
  int last_cap = 40;
  // Bounding set to keep, or nullopt to leave it alone (without a new user namespace
  // bwrap never touches the caller's bounding set).
  std::optional<CapBits> bounding;
  // A root caller without cap options keeps its sets: capset is never called (some
  // seccomp policies, systemd-nspawn's for one, deny capset).
  bool skip_capset = false;
  CapBits permitted = 0;
  CapBits effective = 0;
  CapBits inheritable = 0;
  // Raised one at a time just before exec; EINVAL/EPERM ignored, as bwrap does.
  CapBits ambient = 0;
  // bwrap ignores EPERM from capset when the caller is root (see note 1 above).
  bool tolerate_capset_eperm = false;

  bool operator==(const CapPlan&) const = default;
};

CapPlan DecideCapabilities(const CapDecisionInput& input);

// The five sets of /proc/self/status.
struct CapState {
  CapBits inheritable = 0;
  CapBits permitted = 0;
  CapBits effective = 0;
  CapBits bounding = 0;
  CapBits ambient = 0;

  bool operator==(const CapState&) const = default;
};

// The state a process has right after creating a user namespace: everything in P, E and
// the bounding set, nothing inheritable or ambient.
CapState FreshUserNamespaceCaps(int last_cap);

// Models the kernel: applies `plan` to `before` (the child's state when it applies the
// plan) and execs a plain binary (no file capabilities, not set-id) under no_new_privs as
// `sandbox_uid` of the sandbox's user namespace. nullopt when the child would fail
// (capset EPERM that is not tolerated).
std::optional<CapState> PredictCapsAfterExec(const CapPlan& plan, const CapState& before,
                                             uid_t sandbox_uid);

// Reads the Cap* lines of a /proc/<pid>/status text.
base::Result<CapState> ParseCapStatus(std::string_view proc_status);

// "none", "all" (every cap up to last_cap) or "cap_chown,cap_net_admin".
std::string CapBitsToString(CapBits bits, int last_cap);
// A few lines for the printed plan.
std::vector<std::string> DescribeCapPlan(const CapPlan& plan);

// ---- Child side --------------------------------------------------------------------------
// Called in the forked/cloned child, which is single-threaded. noexcept, no allocation, no
// formatting; each returns 0 or an errno and never exits. Irreversible for the process.

// PR_CAPBSET_DROP, one call per cap 0..last_cap not in `keep`. EINVAL (cap unknown to the
// kernel) and EPERM (no CAP_SETPCAP) are ignored, as bwrap does.
int DropBoundingSet(CapBits keep, int last_cap) noexcept;
// capset(2) of the three sets. EPERM is reported as success when `tolerate_eperm`.
int SetCapSets(CapBits permitted, CapBits effective, CapBits inheritable,
               bool tolerate_eperm) noexcept;
// capget(2) of this process's three sets; 0 or an errno. The reading twin of SetCapSets.
struct CapSets {
  CapBits permitted = 0;
  CapBits effective = 0;
  CapBits inheritable = 0;
};
int ReadCapSets(CapSets* sets) noexcept;
// PR_CAP_AMBIENT_RAISE per cap in `caps` (0..last_cap); EINVAL/EPERM ignored.
int RaiseAmbientCaps(CapBits caps, int last_cap) noexcept;
// PR_SET_KEEPCAPS: keep the permitted set across a later setuid() away from uid 0.
int SetKeepCaps(bool keep) noexcept;
// capset to all-empty (the pid-1 reaper); clears ambient too.
int ClearAllCaps(bool tolerate_eperm) noexcept;

// The plan's three steps, at bwrap's points: bounding right after the child starts in its
// new user namespace (again after a second one), sets after setup, ambient just before exec.
int ApplyCapPlanBounding(const CapPlan& plan) noexcept;
int ApplyCapPlanSets(const CapPlan& plan) noexcept;
int ApplyCapPlanAmbient(const CapPlan& plan) noexcept;

}  // namespace sbx::security
