// SandboxSpec: what the user asked for, as plain data. The bwrap command-line parser
// (cli/bwrap_parser) and the `run` command both produce one; nothing else does. It holds
// no decisions that depend on the host: those are made by the plan compiler.
//
// Filesystem and hostname requests are kept as an ordered list of SpecOps, exactly in
// command-line order, because bwrap executes them in that order and later ops see the
// results of earlier ones.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "base/error.h"
#include "security/capabilities.h"

namespace sbx::runtime {

struct HostFacts;

// --bind/--ro-bind/--dev-bind and their -try forms.
struct BindOp {
  std::string source;  // host path, as given (relative = relative to the caller's cwd)
  std::string dest;    // sandbox path
  bool read_only = false;
  bool allow_devices = false;  // --dev-bind: do not add nodev
  bool skip_missing = false;   // -try: ENOENT on the source skips the op
};
// --bind-fd/--ro-bind-fd: source is an inherited O_PATH or directory fd.
struct BindFdOp {
  int fd = -1;
  std::string dest;
  bool read_only = false;
};
struct RemountRoOp {
  std::string dest;
};
struct ProcOp {
  std::string dest;
};
struct DevOp {
  std::string dest;
  // `run` only (bwrap's --dev has no size): the /dev tmpfs's size= and nr_inodes=.
  std::optional<uint64_t> size = std::nullopt;
  std::optional<uint64_t> nr_inodes = std::nullopt;
};
struct TmpfsOp {
  std::string dest;
  std::optional<mode_t> perms = std::nullopt;   // --perms; default 0755
  std::optional<uint64_t> size = std::nullopt;  // --size in bytes; default: the kernel's
  // `run` only (bwrap has no option for it): the tmpfs's nr_inodes=.
  std::optional<uint64_t> nr_inodes = std::nullopt;
};
struct MqueueOp {
  std::string dest;
};
struct DirOp {
  std::string dest;
  std::optional<mode_t> perms = std::nullopt;  // default 0755; an existing directory keeps its mode
};
// --file FD DEST: create DEST and copy FD's content into it.
struct FileOp {
  int fd = -1;
  std::string dest;
  std::optional<mode_t> perms = std::nullopt;  // default 0666
};
// --bind-data/--ro-bind-data FD DEST.
struct BindDataOp {
  int fd = -1;
  std::string dest;
  bool read_only = false;
  std::optional<mode_t> perms = std::nullopt;  // default 0600
};
struct SymlinkOp {
  std::string target;  // not resolved
  std::string dest;
};
struct ChmodOp {
  std::string path;
  mode_t mode = 0;
};
struct SetHostnameOp {
  std::string hostname;
};
// --overlay/--tmp-overlay/--ro-overlay with the --overlay-src layers queued before it.
struct OverlayOp {
  enum class Mode { kReadWrite, kTemporary, kReadOnly };
  Mode mode = Mode::kReadWrite;
  std::vector<std::string> lower_sources;  // in command-line order: first = bottom layer
  std::string upper = {};                  // kReadWrite only (host path)
  std::string work = {};                   // kReadWrite only (host path)
  std::string dest;
};

// `run` only (the bwrap face never sets them): limits the sandbox puts on itself, in its
// own (innermost) user namespace, after setup and before its capabilities are dropped.
// Per-user-namespace sysctls bound what the sandbox can charge to its creator's kernel
// quotas (inotify, namespaces); rlimits are inherited by everything the sandbox runs.
struct SysctlSetting {
  std::string name;  // under /proc/sys, e.g. "user/max_user_namespaces"
  uint64_t value = 0;
};
struct RlimitCeiling {
  int resource = 0;    // RLIMIT_*
  uint64_t value = 0;  // soft and hard limits are lowered to at most this, never raised
};
struct SelfLimits {
  std::vector<SysctlSetting> sysctls;
  std::vector<RlimitCeiling> rlimits;
  [[nodiscard]] bool empty() const { return sysctls.empty() && rlimits.empty(); }
};

using SpecOp = std::variant<BindOp, BindFdOp, RemountRoOp, ProcOp, DevOp, TmpfsOp, MqueueOp, DirOp,
                            FileOp, BindDataOp, SymlinkOp, ChmodOp, SetHostnameOp, OverlayOp>;

struct SandboxSpec {
  // Namespaces, as the final state of bwrap's order-sensitive flags.
  bool unshare_user = false;
  bool unshare_user_try = false;
  bool unshare_ipc = false;
  bool unshare_pid = false;
  bool unshare_net = false;
  bool unshare_uts = false;
  bool unshare_cgroup = false;
  bool unshare_cgroup_try = false;
  std::optional<int> userns_fd;   // --userns
  std::optional<int> userns2_fd;  // --userns2
  std::optional<int> pidns_fd;    // --pidns
  bool disable_userns = false;
  bool assert_userns_disabled = false;

  std::optional<uid_t> uid;
  std::optional<gid_t> gid;
  // Root callers only (`run`): the sandbox's ids map onto these unprivileged host ids
  // instead of the caller's, so nothing inside ever acts as host uid 0.
  struct HostIds {
    uid_t uid = 0;
    gid_t gid = 0;
  };
  std::optional<HostIds> run_as;

  std::vector<SpecOp> ops;  // command-line order

  std::optional<std::string> chdir;
  // The command's final environment ("NAME=VALUE"), after --setenv/--unsetenv/--clearenv
  // were applied in order to the caller's environment. PWD is added at exec time.
  std::vector<std::string> env;

  std::vector<security::CapChange> cap_changes;  // command-line order

  bool new_session = false;
  bool die_with_parent = false;
  // With die_with_parent: only the sandbox dies with the process that launched it; that
  // process (ateam-sandbox run) does not arm a death signal of its own, so it outlives
  // its caller and still records the sandbox's end.
  bool launcher_outlives_parent = false;
  bool as_pid_1 = false;

  std::optional<int> info_fd;
  std::optional<int> json_status_fd;
  std::optional<int> sync_fd;
  std::optional<int> block_fd;
  std::optional<int> userns_block_fd;
  std::optional<int> seccomp_fd;  // --seccomp: read in the child after setup
  // --add-seccomp-fd programs, read at parse time (raw struct sock_filter arrays).
  std::vector<std::vector<uint8_t>> seccomp_programs;
  std::vector<std::string> lock_files;  // sandbox paths

  // `run`: the command gets stdin, stdout and stderr only, nothing else the caller had
  // open (bwrap passes every inherited fd through).
  bool close_inherited_fds = false;

  SelfLimits self_limits;  // `run` only
  // `run` only: open cgroup.procs files (borrowed, close-on-exec) the monitor writes the
  // sandbox's first process into before it releases it, so nothing runs outside them.
  std::vector<int> cgroup_procs_fds;

  std::optional<std::string> argv0;
  std::vector<std::string> command;  // command[0] is looked up in env's PATH
};

// The order-dependent cross-option checks bwrap makes after parsing (docs/bwrap-behaviour.md,
// "Checks after parsing"), with bwrap's messages. Returns Error::Usage() when no COMMAND was given.
base::Status ValidateSpec(const SandboxSpec& spec, const HostFacts& host);

}  // namespace sbx::runtime
