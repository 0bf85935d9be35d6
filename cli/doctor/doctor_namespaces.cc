// The namespace probe: one forked child creates a user namespace and tries, inside it,
// each namespace and mount operation the native backend uses. The child records an errno
// per step (0 = worked, kNotTried = skipped because an earlier step failed) and the parent
// turns the record into checks. Nothing here touches the caller's own namespaces.
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/doctor/doctor_probes.h"

namespace sbx::cli::doctor {

namespace {

enum Step : int {
  kUserNs,        // unshare(CLONE_NEWUSER)
  kIdMap,         // setgroups deny + uid_map + gid_map
  kMountNs,       // unshare(CLONE_NEWNS) + make / a slave tree
  kFsMount,       // fsopen("tmpfs") + fsconfig(CREATE) + fsmount
  kMoveMount,     // move_mount of that tmpfs onto /tmp
  kOpenTree,      // open_tree(OPEN_TREE_CLONE) of /usr + mount_setattr(RDONLY)
  kOverlay,       // overlay with userxattr on tmpfs directories
  kNetNs,         // unshare(CLONE_NEWNET)
  kOtherNs,       // unshare(pid | ipc | uts | cgroup)
  kSetHostname,   // sethostname in that uts namespace, as the sandbox names itself
  kNestedUserNs,  // a user namespace inside ours (an agent's own bwrap)
  kStepCount,
};
constexpr int32_t kNotTried = -1;

int32_t Errno(bool ok) noexcept { return ok ? 0 : errno; }

int32_t WriteProcFile(const char* path, const char* text) noexcept {
  const int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  const auto len = static_cast<ssize_t>(std::strlen(text));
  const int32_t err = Errno(::write(fd, text, static_cast<size_t>(len)) == len);
  ::close(fd);
  return err;
}

// Maps uid/gid 0 inside to the caller's own ids: the one mapping any process may write for
// itself, and the same one the rootless runtime writes. setgroups must be denied first.
int32_t WriteIdMaps(const Caller& caller) noexcept {
  int32_t err = WriteProcFile("/proc/self/setgroups", "deny");
  if (err != 0 && err != ENOENT) return err;
  char map[64];
  std::snprintf(map, sizeof(map), "0 %u 1\n", caller.euid);
  if ((err = WriteProcFile("/proc/self/uid_map", map)) != 0) return err;
  std::snprintf(map, sizeof(map), "0 %u 1\n", caller.egid);
  return WriteProcFile("/proc/self/gid_map", map);
}

// Returns the detached tmpfs mount fd (or -1), recording the step's errno.
int NewMountApiTmpfs(int32_t* results) noexcept {
  const int fs = ::fsopen("tmpfs", FSOPEN_CLOEXEC);
  int mnt = -1;
  if (fs >= 0 && ::fsconfig(fs, FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) == 0) {
    mnt = ::fsmount(fs, FSMOUNT_CLOEXEC, 0);
  }
  results[kFsMount] = Errno(mnt >= 0);
  if (fs >= 0) ::close(fs);
  return mnt;
}

void TryMounts(int32_t* results) noexcept {
  const int mnt = NewMountApiTmpfs(results);
  if (mnt >= 0) {
    results[kMoveMount] =
        Errno(::move_mount(mnt, "", AT_FDCWD, "/tmp", MOVE_MOUNT_F_EMPTY_PATH) == 0);
    ::close(mnt);
  }
  const int tree =
      ::open_tree(AT_FDCWD, "/usr", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
  mount_attr attr{};
  attr.attr_set = MOUNT_ATTR_RDONLY;
  results[kOpenTree] = Errno(tree >= 0 && ::mount_setattr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE,
                                                          &attr, sizeof(attr)) == 0);
  if (tree >= 0) ::close(tree);
  // Overlay needs a writable upper directory; use the classic API when move_mount failed
  // so this result does not depend on the previous one.
  if (results[kMoveMount] != 0 && ::mount("tmpfs", "/tmp", "tmpfs", 0, nullptr) != 0) {
    results[kOverlay] = errno;
    return;
  }
  for (const char* dir : {"/tmp/l", "/tmp/u", "/tmp/w", "/tmp/m"}) ::mkdir(dir, 0700);
  results[kOverlay] =
      Errno(::mount("overlay", "/tmp/m", "overlay", 0,
                    "lowerdir=/tmp/l,upperdir=/tmp/u,workdir=/tmp/w,userxattr") == 0);
}

void NamespaceProbe(int32_t* results, int count, const void* arg) noexcept {
  const auto& caller = *static_cast<const Caller*>(arg);
  for (int i = 0; i < count; ++i) results[i] = kNotTried;
  if ((results[kUserNs] = Errno(::unshare(CLONE_NEWUSER) == 0)) != 0) return;
  if ((results[kIdMap] = WriteIdMaps(caller)) != 0) return;
  // MS_SLAVE keeps our test mounts from propagating anywhere, as the runtime does first.
  results[kMountNs] = Errno(::unshare(CLONE_NEWNS) == 0 &&
                            ::mount(nullptr, "/", nullptr, MS_SLAVE | MS_REC, nullptr) == 0);
  if (results[kMountNs] == 0) TryMounts(results);
  results[kNetNs] = Errno(::unshare(CLONE_NEWNET) == 0);
  results[kOtherNs] =
      Errno(::unshare(CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP) == 0);
  // Both backends name the sandbox's host; a seccomp profile that gates sethostname on
  // CAP_SYS_ADMIN in the container (Podman's default) refuses it even in our own namespace.
  if (results[kOtherNs] == 0) {
    static constexpr char kName[] = "ateam-sandbox";
    results[kSetHostname] = Errno(::sethostname(kName, sizeof(kName) - 1) == 0);
  }
  // Last: after this the child has no capabilities in the namespaces above.
  results[kNestedUserNs] = Errno(::unshare(CLONE_NEWUSER) == 0);
}

struct StepInfo {
  const char* name;
  const char* what;  // the operation, for the detail line
};

constexpr StepInfo kSteps[kStepCount] = {
    {"user-namespace", "unshare(CLONE_NEWUSER)"},
    {"user-namespace", "writing uid_map/gid_map"},
    {"mount-namespace", "unshare(CLONE_NEWNS) in the user namespace"},
    {"new-mount-api", "fsopen(\"tmpfs\") + fsmount"},
    {"new-mount-api", "move_mount"},
    {"new-mount-api", "open_tree(OPEN_TREE_CLONE) + mount_setattr(MOUNT_ATTR_RDONLY)"},
    {"overlayfs", "overlay mount with userxattr in the user namespace"},
    {"network-namespace", "unshare(CLONE_NEWNET) in the user namespace"},
    {"pid-ipc-uts-cgroup-namespaces", "unshare(CLONE_NEWPID|NEWIPC|NEWUTS|NEWCGROUP)"},
    {"sethostname", "sethostname in the sandbox's uts namespace"},
    {"nested-user-namespace", "unshare(CLONE_NEWUSER) inside the sandbox's user namespace"},
};

// A FAIL naming the first failed step among [first, last], or ok with `ok_detail`.
Check StepsCheck(const int32_t* r, int first, int last, std::string ok_detail, std::string fix) {
  Check check{kSteps[first].name, CheckStatus::kOk, std::move(ok_detail), ""};
  for (int i = first; i <= last; ++i) {
    if (r[i] == 0) continue;
    check.status = CheckStatus::kFail;
    if (r[i] == kNotTried) {
      check.detail = fmt::format("{}: not tried, an earlier step failed", kSteps[i].what);
      check.fix = "fix the first FAIL above";
    } else {
      check.detail = fmt::format("{}: {}", kSteps[i].what, ErrnoText(r[i]));
      check.fix = std::move(fix);
    }
    break;
  }
  return check;
}

}  // namespace

std::vector<Check> NamespaceChecks(const Caller& caller) {
  int32_t r[kStepCount];
  if (!RunProbeChild(NamespaceProbe, &caller, r, kStepCount)) {
    return {{"user-namespace", CheckStatus::kFail, "the probe child died before reporting",
             "run `ateam-sandbox doctor` under strace -f to see what killed it"}};
  }
  std::vector<Check> checks;
  checks.push_back(StepsCheck(
      r, kUserNs, kIdMap,
      fmt::format("unshare(CLONE_NEWUSER) + id maps (0 -> host {}:{})", caller.euid, caller.egid),
      UserNamespaceFix(caller, r[kUserNs] > 0 ? r[kUserNs] : r[kIdMap])));
  checks.push_back(StepsCheck(r, kMountNs, kMountNs, "unshare(CLONE_NEWNS), / made MS_SLAVE",
                              MountBlockerFix(caller, caller.container)));
  checks.push_back(StepsCheck(r, kFsMount, kOpenTree,
                              "fsopen/fsmount/move_mount/open_tree/mount_setattr work",
                              "kernel 5.12 or newer with the new mount API, or --backend bwrap"));
  Check overlay =
      StepsCheck(r, kOverlay, kOverlay, "overlay with userxattr mounts (kernel >= 5.11)",
                 "kernel 5.11 or newer with CONFIG_OVERLAY_FS");
  // No part of the dispatch sandbox uses overlayfs yet: report, do not fail.
  if (overlay.status == CheckStatus::kFail) overlay.status = CheckStatus::kInfo;
  checks.push_back(std::move(overlay));
  checks.push_back(StepsCheck(
      r, kNetNs, kNetNs, "unshare(CLONE_NEWNET) works",
      "unshare(CLONE_NEWNET) is denied inside a user namespace by a container runtime or "
      "LSM: run on the host or allow it; see `dmesg` for LSM denials"));
  checks.push_back(
      StepsCheck(r, kOtherNs, kOtherNs, "unshare(CLONE_NEWPID|NEWIPC|NEWUTS|NEWCGROUP) works",
                 "a kernel with CONFIG_PID_NS, IPC_NS, UTS_NS and CGROUPS namespaces"));
  checks.push_back(StepsCheck(
      r, kSetHostname, kSetHostname, "the sandbox can name its host",
      "a seccomp filter refuses sethostname (Podman's default profile allows it only with "
      "CAP_SYS_ADMIN): Docker/Podman: --security-opt seccomp=unconfined, or a seccomp "
      "profile that allows sethostname; Kubernetes: securityContext.seccompProfile.type: "
      "Unconfined, or a Localhost profile that allows it"));
  checks.push_back(StepsCheck(r, kNestedUserNs, kNestedUserNs,
                              "works (an agent can run its own bwrap inside)",
                              UserNamespaceFix(caller, r[kNestedUserNs])));
  return checks;
}

}  // namespace sbx::cli::doctor
