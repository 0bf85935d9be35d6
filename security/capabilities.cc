// Parent side of capabilities: resolve, decide, predict, describe. The child side is in
// capabilities_child.cc (it needs <linux/capability.h>, which clashes with libcap's header).
#include <sys/capability.h>

#include <charconv>
#include <string>

#include "base/c_handle.h"
#include "security/capabilities.h"

namespace sbx::security {
namespace {

constexpr CapBits Bit(int cap) { return CapBits{1} << cap; }

bool IsSubset(CapBits inner, CapBits outer) { return (inner & ~outer) == 0; }

// capset(2) as the kernel checks it (security/commoncap.c cap_capset): new sets may not
// exceed the old permitted set, effective must be within permitted, and inheritable may
// only grow from permitted (or from the bounding set with CAP_SETPCAP).
bool CapsetAllowed(const CapState& old, CapBits p, CapBits e, CapBits i) {
  if (!IsSubset(p, old.permitted) || !IsSubset(e, p)) return false;
  if (!IsSubset(i, old.inheritable | old.bounding)) return false;
  const bool has_setpcap = (old.effective & Bit(CAP_SETPCAP)) != 0;
  return has_setpcap || IsSubset(i, old.inheritable | old.permitted);
}

// execve of a binary without file capabilities, not set-id, under no_new_privs
// (security/commoncap.c cap_bprm_creds_from_file).
CapState Exec(const CapState& s, uid_t uid) {
  CapState out = s;
  if (uid == 0) {
    // Root gets bounding | inheritable; no_new_privs caps anything gained at the old set.
    out.permitted = ((s.bounding | s.inheritable) & s.permitted) | s.ambient;
    out.effective = out.permitted;
  } else {
    out.permitted = s.ambient;
    out.effective = s.ambient;
  }
  return out;
}

}  // namespace

base::Result<CapBits> ResolveCapabilities(CapBits initial, std::span<const CapChange> changes,
                                          int last_cap) {
  const CapBits all = AllCaps(last_cap);
  CapBits caps = initial;
  for (const CapChange& change : changes) {
    CapBits bits = all;
    if (change.cap.has_value()) {
      const int cap = *change.cap;
      if (cap < 0 || cap > 63) {
        return base::Error::Message("unknown cap: " + std::to_string(cap));
      }
      bits = Bit(cap);
    }
    if (change.kind == CapChange::Kind::kAdd) {
      caps |= bits;
    } else {
      caps &= ~bits;
    }
  }
  return caps & all;
}

CapPlan DecideCapabilities(const CapDecisionInput& input) {
  CapPlan plan;
  plan.last_cap = input.last_cap;
  // A new user namespace starts with a full bounding set: trim it to what is kept.
  if (input.new_user_namespace) plan.bounding = input.resolved;
  plan.skip_capset = input.caller_is_root && !input.cap_options_used;
  if (!plan.skip_capset) {
    plan.permitted = input.resolved;
    plan.effective = input.resolved;
    plan.inheritable = input.resolved;
  }
  // bwrap raises the kept set even when capset was skipped; without inheritable bits
  // every raise fails with EPERM, which is ignored, so the result is still exact.
  plan.ambient = input.resolved;
  plan.tolerate_capset_eperm = input.caller_is_root;
  return plan;
}

CapState FreshUserNamespaceCaps(int last_cap) {
  const CapBits all = AllCaps(last_cap);
  return CapState{
      .inheritable = 0, .permitted = all, .effective = all, .bounding = all, .ambient = 0};
}

std::optional<CapState> PredictCapsAfterExec(const CapPlan& plan, const CapState& before,
                                             uid_t sandbox_uid) {
  const CapBits valid = AllCaps(plan.last_cap);
  CapState s = before;
  // PR_CAPBSET_DROP needs CAP_SETPCAP; without it every drop fails with EPERM (ignored).
  if (plan.bounding.has_value() && (s.effective & Bit(CAP_SETPCAP)) != 0) {
    s.bounding &= *plan.bounding;
  }
  if (!plan.skip_capset) {
    const CapBits p = plan.permitted & valid;
    const CapBits e = plan.effective & valid;
    const CapBits i = plan.inheritable & valid;
    if (CapsetAllowed(s, p, e, i)) {
      s.permitted = p;
      s.effective = e;
      s.inheritable = i;
      s.ambient &= p & i;
    } else if (!plan.tolerate_capset_eperm) {
      return std::nullopt;
    }
  }
  // An ambient raise needs the cap in both permitted and inheritable.
  s.ambient |= plan.ambient & valid & s.permitted & s.inheritable;
  return Exec(s, sandbox_uid);
}

base::Result<CapState> ParseCapStatus(std::string_view proc_status) {
  struct Field {
    std::string_view key;
    CapBits CapState::*member;
  };
  static constexpr Field kFields[] = {
      {"CapInh:", &CapState::inheritable}, {"CapPrm:", &CapState::permitted},
      {"CapEff:", &CapState::effective},   {"CapBnd:", &CapState::bounding},
      {"CapAmb:", &CapState::ambient},
  };
  CapState state;
  for (const Field& field : kFields) {
    const size_t at = proc_status.find(field.key);
    if (at == std::string_view::npos || (at != 0 && proc_status[at - 1] != '\n')) {
      return base::Error::Message("no " + std::string(field.key) + " line in status");
    }
    size_t pos = at + field.key.size();
    while (pos < proc_status.size() && (proc_status[pos] == '\t' || proc_status[pos] == ' ')) {
      ++pos;
    }
    const char* first = proc_status.data() + pos;
    const char* last = proc_status.data() + proc_status.size();
    auto [end, ec] = std::from_chars(first, last, state.*field.member, 16);
    if (ec != std::errc() || end == first) {
      return base::Error::Message("bad " + std::string(field.key) + " line in status");
    }
  }
  return state;
}

std::string CapBitsToString(CapBits bits, int last_cap) {
  const CapBits all = AllCaps(last_cap);
  if ((bits & all) == 0) return "none";
  if ((bits & all) == all) return "all";
  std::string out;
  for (int cap = 0; cap <= last_cap && cap < 64; ++cap) {
    if ((bits & Bit(cap)) == 0) continue;
    if (!out.empty()) out += ',';
    // cap_to_name allocates; this runs in the parent only.
    base::CHandle<char, cap_free> name(cap_to_name(cap));
    out += name ? std::string(name.get()) : std::to_string(cap);
  }
  return out;
}

std::vector<std::string> DescribeCapPlan(const CapPlan& plan) {
  const int last = plan.last_cap;
  std::vector<std::string> lines;
  if (plan.bounding.has_value()) {
    lines.push_back("capabilities: bounding set keeps " + CapBitsToString(*plan.bounding, last));
  } else {
    lines.emplace_back("capabilities: bounding set unchanged (no new user namespace)");
  }
  if (plan.skip_capset) {
    lines.emplace_back(
        "capabilities: caller's sets kept, capset skipped (root caller, no --cap-add/--cap-drop)");
  } else {
    std::string line =
        "capabilities: permitted=effective=inheritable " + CapBitsToString(plan.permitted, last);
    if (plan.tolerate_capset_eperm) line += " (capset EPERM ignored: root caller)";
    lines.push_back(std::move(line));
  }
  lines.push_back("capabilities: ambient raise " + CapBitsToString(plan.ambient, last) +
                  " before exec");
  return lines;
}

}  // namespace sbx::security
