// Plan: everything decided before clone. The plan compiler (plan_compiler.h) is the only
// producer; the native child executor and the bwrap backend renderer are its consumers,
// and the plan printer turns it into the text golden tests compare.
//
// All strings and vectors the child needs are built here, in the parent, so the child
// after clone only reads the plan (no formatting, no growing containers).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/spec.h"
#include "security/capabilities.h"

namespace sbx::runtime {

// Who the caller is decides how the sandbox is built (see the comment block at the top of
// plan_compiler.cc). Decided once, from HostFacts, which `run` reads too (its dispatch asks
// ResolvedRequest::host, never geteuid(), whether its caller is root). Elsewhere geteuid()
// names the caller's own uid as an owner to compare a file's with, and `dispatches` (list,
// gc), which resolves no request, asks it which places are root's.
enum class PrivilegeMode {
  kRoot,          // caller is uid 0 (not setuid): keeps its capabilities unless dropped
  kUnprivileged,  // caller is any other uid: a user namespace is always created
};

// One uid_map/gid_map line: `inside outside 1`.
struct IdMapping {
  uint32_t inside = 0;
  uint32_t outside = 0;
};

// The user namespace layout. `first` is written right after clone by the child itself
// (with setgroups "deny" first); `second`, when present, is a nested user namespace
// created after the mounts (bwrap does this for --dev with a non-root sandbox uid, so
// devpts sees a mapped root during setup, and for --disable-userns).
struct UserNamespacePlan {
  IdMapping uid;
  IdMapping gid;
  std::optional<IdMapping> second_uid;
  std::optional<IdMapping> second_gid;
  bool limit_nested_userns = false;  // --disable-userns: max_user_namespaces=1 first
  // The monitor writes the maps (a root caller mapping an unprivileged host uid, which
  // only a process outside the namespace may do); the child then switches to the
  // sandbox ids itself after setup.
  bool written_by_parent = false;
};

// Existing namespaces the caller hands over as inherited fds (--userns, --userns2,
// --pidns), joined where bwrap 0.11.1 joins them. The fds stay the caller's: the runtime
// never closes them, and the command inherits them like any other caller fd.
struct JoinedNamespaces {
  // --userns: the monitor setns()es into it before clone, so every namespace the clone
  // creates is owned by it (no CLONE_NEWUSER then).
  std::optional<int> userns_fd;
  // --userns2: the monitor joins it before releasing the child; the child joins it right
  // after the pivot (before a nested user namespace, if the plan has one).
  std::optional<int> userns2_fd;
  // --pidns: the child setns()es into it and forks, so its child is in that namespace;
  // with --unshare-pid it then creates a new pid namespace below it and forks again. The
  // final process reports its pid to the monitor over a socket (SCM_CREDENTIALS).
  std::optional<int> pidns_fd;
  bool new_pidns_below = false;  // --pidns with --unshare-pid
  // --userns: ids the child switches to inside the joined namespace, set only when they
  // differ from the caller's (bwrap: setuid first, then setgid).
  std::optional<uid_t> switch_uid;
  std::optional<gid_t> switch_gid;

  [[nodiscard]] bool any() const { return userns_fd || userns2_fd || pidns_fd; }
};

// A SpecOp with every default filled in and every host path made absolute.
using PlanOp = SpecOp;

struct Plan {
  PrivilegeMode mode = PrivilegeMode::kUnprivileged;
  uint64_t clone_flags = 0;  // CLONE_NEW* for clone3 (CLONE_NEWNS always)
  std::optional<UserNamespacePlan> userns;
  JoinedNamespaces joined;
  uid_t sandbox_uid = 0;
  gid_t sandbox_gid = 0;
  std::optional<std::string> hostname;  // last --hostname, for the printed plan only

  std::vector<PlanOp> ops;
  bool fresh_proc = false;  // --proc mounts a new procfs (new pid namespace) vs binds /proc
  bool configure_loopback = false;
  bool assert_userns_disabled = false;  // try unshare(CLONE_NEWUSER) after setup: must fail

  security::CapPlan caps;
  std::vector<std::vector<uint8_t>> seccomp_programs;  // installed in order before exec
  std::optional<int> seccomp_fd;                       // --seccomp, read after setup

  bool new_session = false;
  bool die_with_parent = false;
  bool launcher_outlives_parent = false;  // spec.h
  bool reaper = false;                    // fork a pid-1 reaper that waits for the command
  bool as_pid_1 = false;

  std::optional<int> info_fd;
  std::optional<int> json_status_fd;
  std::optional<int> sync_fd;
  std::optional<int> block_fd;
  std::optional<int> userns_block_fd;
  std::vector<std::string> lock_files;

  // Working directory candidates tried in order after the pivot; PWD is set to the first
  // that works. With --chdir there is exactly one and failing it is fatal.
  std::vector<std::string> cwd_candidates;
  bool chdir_is_explicit = false;

  bool close_inherited_fds = false;   // mark every fd above 2 close-on-exec before exec
  SelfLimits self_limits;             // applied by the child before the capability sets
  std::vector<int> cgroup_procs_fds;  // the monitor moves the child in before releasing it

  std::string exec_file;                  // looked up in PATH of `env` when it has no '/'
  std::vector<std::string> argv;          // argv[0] is --argv0 when given
  std::vector<std::string> env;           // without PWD; the child appends PWD=<cwd>
  std::optional<std::string> stdout_tty;  // --dev binds it as /dev/console
};

}  // namespace sbx::runtime
