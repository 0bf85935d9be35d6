#include "security/landlock.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include <fmt/format.h>

namespace sbx::security {
namespace {

// uapi linux/landlock.h. Debian 12's header has only handled_access_fs; the kernel accepts a
// longer struct as long as the fields it does not know are zero, so one layout serves every
// ABI (create_ruleset copies it with copy_struct_from_user).
struct RulesetAttr {
  uint64_t handled_access_fs;
  uint64_t handled_access_net;  // ABI 4
  uint64_t scoped;              // ABI 6
};

struct PathBeneathAttr {
  uint64_t allowed_access;
  int32_t parent_fd;
} __attribute__((packed));

struct NetPortAttr {  // ABI 4
  uint64_t allowed_access;
  uint64_t port;
};

constexpr uint32_t kCreateRulesetVersion = 1U << 0;
constexpr int kRulePathBeneath = 1;
constexpr int kRuleNetPort = 2;  // ABI 4

constexpr uint64_t kDeviceRights = kLandlockFsWriteFile | kLandlockFsTruncate | kLandlockFsIoctlDev;
// Writable directories get every write right but creating device nodes (CAP_MKNOD is gone
// anyway; this layer does not rely on it) and device ioctls (binds are nodev).
constexpr uint64_t kNotForDirectories =
    kLandlockFsMakeChar | kLandlockFsMakeBlock | kLandlockFsIoctlDev;

// The write side of the filesystem rights up to `abi`. Reads and execution stay with the
// mount layer: the sandbox only shows what the agent may read.
uint64_t HandledFs(int abi) {
  if (abi < 2) return 0;
  uint64_t access = kLandlockFsWriteFile | kLandlockFsRemoveDir | kLandlockFsRemoveFile |
                    kLandlockFsMakeChar | kLandlockFsMakeDir | kLandlockFsMakeReg |
                    kLandlockFsMakeSock | kLandlockFsMakeFifo | kLandlockFsMakeBlock |
                    kLandlockFsMakeSym | kLandlockFsRefer;
  if (abi >= 3) access |= kLandlockFsTruncate;
  if (abi >= 5) access |= kLandlockFsIoctlDev;
  return access;
}

std::string JoinComma(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

}  // namespace

int LandlockAbi() {
  const long abi = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, kCreateRulesetVersion);
  return abi > 0 ? static_cast<int>(abi) : 0;
}

LandlockRuleset BuildLandlockRuleset(const LandlockPolicy& policy, int abi) {
  LandlockRuleset r;
  r.abi = abi;
  if (policy.fs) r.handled_fs = HandledFs(abi);
  if (policy.net && abi >= 4) r.handled_net = kLandlockNetBindTcp | kLandlockNetConnectTcp;
  if (policy.scope && abi >= 6) r.scoped = kLandlockScopeAbstractUnixSocket | kLandlockScopeSignal;
  if (r.handled_fs != 0) {
    for (const std::string& path : policy.writable) {
      r.paths.push_back({path, r.handled_fs & ~kNotForDirectories});
    }
    for (const std::string& path : policy.devices) {
      r.paths.push_back({path, r.handled_fs & kDeviceRights});
    }
    for (int fd : policy.stdio_fds) r.fds.push_back({fd, r.handled_fs & kDeviceRights});
  }
  if (r.handled_net != 0) {
    r.connect_ports = policy.connect_ports;
    std::sort(r.connect_ports.begin(), r.connect_ports.end());
    r.connect_ports.erase(std::unique(r.connect_ports.begin(), r.connect_ports.end()),
                          r.connect_ports.end());
  }
  return r;
}

std::vector<std::string> LandlockParts(const LandlockRuleset& ruleset) {
  std::vector<std::string> parts;
  if (ruleset.handled_fs != 0) parts.emplace_back("fs");
  if (ruleset.handled_net != 0) parts.emplace_back("net");
  if (ruleset.scoped != 0) parts.emplace_back("scope");
  return parts;
}

std::vector<std::string> DescribeLandlock(const LandlockRuleset& ruleset) {
  if (ruleset.abi == 0) return {"landlock: not available on this kernel, not applied"};
  std::vector<std::string> lines;
  lines.push_back(fmt::format("landlock: ABI {}, enforced: {}", ruleset.abi,
                              ruleset.Empty() ? "nothing" : JoinComma(LandlockParts(ruleset))));
  if (ruleset.handled_fs != 0) {
    std::vector<std::string> where;
    for (const LandlockPathRule& rule : ruleset.paths) where.push_back(rule.path);
    if (!ruleset.fds.empty()) where.emplace_back("the agent's stdio files");
    lines.push_back("landlock: fs: writes only to " + JoinComma(where));
  }
  if (ruleset.handled_net != 0) {
    std::vector<std::string> ports;
    for (uint16_t port : ruleset.connect_ports) ports.push_back(std::to_string(port));
    lines.push_back(fmt::format("landlock: net: TCP connect only to port{} {}, bind nowhere",
                                ports.size() == 1 ? "" : "s",
                                ports.empty() ? "(none)" : JoinComma(ports)));
  }
  if (ruleset.scoped != 0) {
    lines.emplace_back(
        "landlock: scope: abstract Unix sockets and signals only within the agent's processes");
  }
  return lines;
}

base::Result<base::UniqueFd> CreateLandlockRuleset(const LandlockRuleset& ruleset) {
  if (ruleset.Empty()) return base::UniqueFd();
  const RulesetAttr attr{ruleset.handled_fs, ruleset.handled_net, ruleset.scoped};
  base::UniqueFd fd(static_cast<int>(
      ::syscall(SYS_landlock_create_ruleset, &attr, sizeof(attr), 0)));  // close-on-exec
  if (!fd) return base::ErrnoError("Can't create the Landlock ruleset");
  auto add_fs_rule = [&](int parent, uint64_t access, const std::string& what) -> base::Status {
    struct stat st {};
    if (::fstat(parent, &st) != 0) return base::ErrnoError("Can't stat", what);
    if (!S_ISDIR(st.st_mode)) access &= kLandlockFileRights;
    if (!S_ISCHR(st.st_mode) && !S_ISBLK(st.st_mode)) access &= ~kLandlockFsIoctlDev;
    if (access == 0) return {};
    const PathBeneathAttr rule{access, parent};
    if (::syscall(SYS_landlock_add_rule, fd.get(), kRulePathBeneath, &rule, 0) != 0) {
      return base::ErrnoError("Can't add a Landlock rule for", what);
    }
    return {};
  };
  for (const LandlockPathRule& rule : ruleset.paths) {
    base::UniqueFd path(::open(rule.path.c_str(), O_PATH | O_CLOEXEC));
    // Missing: nothing to allow there (its parent's rules decide whether it may be made).
    if (!path && errno == ENOENT) continue;
    if (!path) return base::ErrnoError("Can't open", rule.path);
    if (auto ok = add_fs_rule(path.get(), rule.access, rule.path); !ok) return ok.error();
  }
  for (const LandlockFdRule& rule : ruleset.fds) {
    // Only what the fd already allows: a file open for writing, reopened through
    // /dev/stdout or /proc/self/fd (pipes and sockets need no rule, Landlock ignores them).
    const int flags = ::fcntl(rule.fd, F_GETFL);
    struct stat st {};
    if (flags < 0 || (flags & O_ACCMODE) == O_RDONLY || ::fstat(rule.fd, &st) != 0) continue;
    if (!S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode)) continue;
    if (auto ok = add_fs_rule(rule.fd, rule.access, "fd " + std::to_string(rule.fd)); !ok) {
      return ok.error();
    }
  }
  for (uint16_t port : ruleset.connect_ports) {
    const NetPortAttr rule{kLandlockNetConnectTcp, port};
    if (::syscall(SYS_landlock_add_rule, fd.get(), kRuleNetPort, &rule, 0) != 0) {
      return base::ErrnoError("Can't add a Landlock rule for TCP port", std::to_string(port));
    }
  }
  return fd;
}

int RestrictSelfWithLandlock(int ruleset_fd) noexcept {
  // Landlock requires no_new_privs (or CAP_SYS_ADMIN); the sandbox has it already.
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return errno;
  if (::syscall(SYS_landlock_restrict_self, ruleset_fd, 0) != 0) return errno;
  return 0;
}

}  // namespace sbx::security
