#include "runtime/spec.h"

#include <algorithm>
#include <cstdint>
#include <variant>

#include "runtime/host_facts.h"

namespace sbx::runtime {
namespace {

using base::Error;

// bwrap's setuid mode: a real uid other than the effective uid 0.
bool IsSetuidMode(const HostFacts& host) { return host.euid == 0 && host.uid != 0; }

uint64_t ChangeBits(const security::CapChange& change) {
  if (!change.cap) return ~uint64_t{0};  // ALL
  if (*change.cap < 0 || *change.cap >= 64) return 0;
  return uint64_t{1} << *change.cap;
}

// True when --cap-add/--cap-drop, applied in order to an empty set, leave something: bwrap
// checks its requested set, not the options, so "--cap-add ALL --cap-drop ALL" passes.
bool RequestsCaps(const std::vector<security::CapChange>& changes) {
  uint64_t caps = 0;
  for (const security::CapChange& change : changes) {
    caps = change.kind == security::CapChange::Kind::kAdd ? caps | ChangeBits(change)
                                                          : caps & ~ChangeBits(change);
  }
  return caps != 0;
}

bool HasHostnameOp(const SandboxSpec& spec) {
  return std::any_of(spec.ops.begin(), spec.ops.end(),
                     [](const SpecOp& op) { return std::holds_alternative<SetHostnameOp>(op); });
}

// The checks bwrap makes before it decides on the implicit user namespace.
base::Status ValidateUserNamespaceOptions(const SandboxSpec& spec, bool setuid) {
  if (setuid && RequestsCaps(spec.cap_changes)) {
    return Error::Message("--cap-add in setuid mode can be used only by root");
  }
  if (spec.userns_block_fd && !spec.unshare_user) {
    return Error::Message("--userns-block-fd requires --unshare-user");
  }
  if (spec.userns_block_fd && !spec.info_fd) {
    return Error::Message("--userns-block-fd requires --info-fd");
  }
  if (spec.userns_fd && spec.unshare_user) {
    return Error::Message("--userns not compatible --unshare-user");
  }
  if (spec.userns_fd && spec.unshare_user_try) {
    return Error::Message("--userns not compatible --unshare-user-try");
  }
  if (spec.disable_userns && !spec.unshare_user) {
    return Error::Message("--disable-userns requires --unshare-user");
  }
  if (spec.disable_userns && spec.userns_block_fd) {
    // Two spaces: bwrap's text.
    return Error::Message("--disable-userns is not compatible with  --userns-block-fd");
  }
  if (spec.userns_fd && setuid) return Error::Message("--userns doesn't work in setuid mode");
  if (spec.userns2_fd && setuid) return Error::Message("--userns2 doesn't work in setuid mode");
  return {};
}

// Whether bwrap ends up creating a user namespace: asked for; implied for a non-root,
// non-setuid caller without --userns; or --unshare-user-try where the kernel allows it.
bool GetsUserNamespace(const SandboxSpec& spec, const HostFacts& host, bool setuid) {
  if (spec.unshare_user) return true;
  if (!setuid && host.uid != 0 && !spec.userns_fd) return true;
  return spec.unshare_user_try && host.user_namespaces;
}

}  // namespace

base::Status ValidateSpec(const SandboxSpec& spec, const HostFacts& host) {
  const bool setuid = IsSetuidMode(host);
  if (base::Status status = ValidateUserNamespaceOptions(spec, setuid); !status) return status;
  // Only now does the implicit user namespace count, so --disable-userns and
  // --userns-block-fd above need an explicit --unshare-user even from non-root callers.
  const bool user_ns = GetsUserNamespace(spec, host, setuid) || spec.userns_fd.has_value();
  if (spec.command.empty()) return Error::Usage();
  // An id equal to the caller's own is what bwrap uses by default, so it needs nothing.
  if (!user_ns && spec.uid && *spec.uid != host.uid) {
    return Error::Message("Specifying --uid requires --unshare-user or --userns");
  }
  if (!user_ns && spec.gid && *spec.gid != host.gid) {
    return Error::Message("Specifying --gid requires --unshare-user or --userns");
  }
  if (!spec.unshare_uts && HasHostnameOp(spec)) {
    return Error::Message("Specifying --hostname requires --unshare-uts");
  }
  if (spec.as_pid_1 && !spec.unshare_pid) {
    return Error::Message("Specifying --as-pid-1 requires --unshare-pid");
  }
  if (spec.as_pid_1 && !spec.lock_files.empty()) {
    return Error::Message("Specifying --as-pid-1 and --lock-file is not permitted");
  }
  return {};
}

}  // namespace sbx::runtime
