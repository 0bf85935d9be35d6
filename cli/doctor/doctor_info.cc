// Informational probes (cgroup layout, Landlock, TIOCSTI, io_uring) and the bwrap binary
// used by --backend bwrap. None of these decides the exit code.
#include <linux/landlock.h>
#include <linux/magic.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/unique_fd.h"
#include "cli/doctor/doctor_probes.h"
#include "security/landlock.h"

extern char** environ;

namespace sbx::cli::doctor {

namespace {

constexpr const char* kCgroupRoot = "/sys/fs/cgroup";

bool IsFsType(const char* path, long magic) {
  struct statfs fs {};
  return ::statfs(path, &fs) == 0 && static_cast<long>(fs.f_type) == magic;
}

// The caller's cgroup v2 path from /proc/self/cgroup ("0::/user.slice/..."), or "".
std::string UnifiedCgroupPath() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("0::", 0) == 0) return line.substr(3);
  }
  return "";
}

Check CgroupCheck() {
  Check check{"cgroup", CheckStatus::kInfo, "", ""};
  std::string layout;
  std::string unified_root;
  if (IsFsType(kCgroupRoot, CGROUP2_SUPER_MAGIC)) {
    layout = "v2 (unified)";
    unified_root = kCgroupRoot;
  } else if (IsFsType("/sys/fs/cgroup/unified", CGROUP2_SUPER_MAGIC)) {
    layout = "hybrid (v1 controllers, v2 at /sys/fs/cgroup/unified)";
    unified_root = "/sys/fs/cgroup/unified";
  } else if (IsFsType(kCgroupRoot, TMPFS_MAGIC)) {
    layout = "v1 (legacy)";
  } else {
    check.detail = "no cgroup file system at /sys/fs/cgroup";
    return check;
  }
  const std::string path = UnifiedCgroupPath();
  if (unified_root.empty() || path.empty()) {
    check.detail = layout + "; no cgroup.kill, sandboxes are ended through their pid namespace";
    return check;
  }
  const std::string kill_file = unified_root + (path == "/" ? "" : path) + "/cgroup.kill";
  // The root cgroup never has cgroup.kill; elsewhere its absence means a kernel < 5.14.
  const char* kill_state =
      ::access(kill_file.c_str(), F_OK) != 0
          ? (path == "/" ? "absent (the root cgroup has none)" : "absent (kernel < 5.14)")
      : ::access(kill_file.c_str(), W_OK) == 0 ? "present and writable"
                                               : "present, not writable by this caller";
  check.detail = fmt::format("{}; caller's cgroup {}; cgroup.kill {}", layout, path, kill_state);
  return check;
}

Check LandlockCheck() {
  const long abi =
      ::syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  const int err = errno;
  if (abi > 0) {
    // What `run` applies to its agent with this ABI (security/landlock.h).
    const auto parts = security::LandlockParts(
        security::BuildLandlockRuleset(security::LandlockPolicy{}, static_cast<int>(abi)));
    std::string applied;
    for (const std::string& part : parts) applied += (applied.empty() ? "" : ", ") + part;
    return {"landlock", CheckStatus::kInfo,
            fmt::format("ABI {}; `run` restricts the agent with: {}", abi,
                        applied.empty() ? "nothing (ABI 2 needed)" : applied),
            ""};
  }
  const std::string skipped =
      "; `run` applies no Landlock layer (mounts, seccomp and the network namespace still hold)";
  if (err == EOPNOTSUPP) {
    return {"landlock", CheckStatus::kInfo, "built in but not enabled" + skipped,
            "add landlock to the kernel's lsm= boot parameter"};
  }
  return {"landlock", CheckStatus::kInfo, "not available: " + ErrnoText(err) + skipped, ""};
}

Check TiocstiCheck() {
  auto value = ReadSysctl("/proc/sys/dev/tty/legacy_tiocsti");
  if (!value) return {"tiocsti", CheckStatus::kInfo, "dev.tty.legacy_tiocsti not present", ""};
  return {"tiocsti", CheckStatus::kInfo,
          *value == 0 ? "dev.tty.legacy_tiocsti=0: TIOCSTI injection is disabled host-wide"
                      : "dev.tty.legacy_tiocsti=1: TIOCSTI works; the sandbox never gets the "
                        "host's controlling tty (new session)",
          ""};
}

Check IoUringCheck() {
  auto value = ReadSysctl("/proc/sys/kernel/io_uring_disabled");
  if (!value) return {"io_uring", CheckStatus::kInfo, "kernel.io_uring_disabled not present", ""};
  return {"io_uring", CheckStatus::kInfo,
          fmt::format("kernel.io_uring_disabled={} ({}); the sandbox's seccomp policy denies "
                      "io_uring regardless",
                      *value,
                      *value == 0   ? "enabled"
                      : *value == 1 ? "restricted"
                                    : "disabled"),
          ""};
}

// Runs `path --version` and returns its first output line ("" on failure).
std::string BwrapVersion(const std::string& path) {
  auto pipe = base::MakePipe();
  if (!pipe) return "";
  posix_spawn_file_actions_t actions;
  ::posix_spawn_file_actions_init(&actions);
  ::posix_spawn_file_actions_adddup2(&actions, pipe->write_end.get(), STDOUT_FILENO);
  ::posix_spawn_file_actions_adddup2(&actions, pipe->write_end.get(), STDERR_FILENO);
  std::string arg0 = path;
  std::string arg1 = "--version";
  char* argv[] = {arg0.data(), arg1.data(), nullptr};
  pid_t pid = -1;
  const int err = ::posix_spawn(&pid, path.c_str(), &actions, nullptr, argv, environ);
  ::posix_spawn_file_actions_destroy(&actions);
  pipe->write_end.reset();
  if (err != 0) return "";
  std::string out;
  char buf[256];
  ssize_t n = 0;
  while ((n = ::read(pipe->read_end.get(), buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR)) {
    if (n > 0 && out.size() < 4096) out.append(buf, static_cast<size_t>(n));
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return "";
  return out.substr(0, out.find('\n'));
}

}  // namespace

std::vector<Check> InformationalChecks() {
  return {CgroupCheck(), LandlockCheck(), TiocstiCheck(), IoUringCheck()};
}

Check BwrapCheck() {
  const char* env = std::getenv("ATEAM_SANDBOX_BWRAP");
  const std::string path = env != nullptr && *env != '\0' ? env : "/usr/bin/bwrap";
  const std::string fix = "apt install bubblewrap, or set ATEAM_SANDBOX_BWRAP to a bwrap binary";
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return {"bwrap", CheckStatus::kInfo,
            fmt::format("{}: {}; --backend bwrap is unavailable", path, ErrnoText(errno)), fix};
  }
  const std::string version = BwrapVersion(path);
  if (version.empty()) {
    return {"bwrap", CheckStatus::kInfo,
            fmt::format("`{} --version` failed; --backend bwrap is unavailable", path), fix};
  }
  // A setuid bwrap runs privileged: the bwrap backend then differs from the native one.
  const char* setuid = (st.st_mode & S_ISUID) != 0 ? ", setuid" : "";
  return {"bwrap", CheckStatus::kOk,
          fmt::format("{} at {}{}: --backend bwrap available", version, path, setuid), ""};
}

}  // namespace sbx::cli::doctor
