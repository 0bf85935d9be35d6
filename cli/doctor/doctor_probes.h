// Internal to cli/doctor: the individual probes behind RunDoctorChecks(). Each returns
// finished Check values; none of them logs or exits. Functions that fork say so; they must
// be called from a single-threaded process.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cli/doctor/doctor.h"
#include "cli/doctor/doctor_containers.h"

namespace sbx::cli::doctor {

// Who runs the doctor and the sysctls that gate user namespaces, read once.
struct Caller {
  uid_t euid = 0;
  gid_t egid = 0;
  std::optional<long> max_user_namespaces;        // user.max_user_namespaces
  std::optional<long> unprivileged_userns_clone;  // kernel.unprivileged_userns_clone (Debian)
  std::optional<long> apparmor_restrict_userns;   // kernel.apparmor_restrict_unprivileged_userns
  ContainerFacts container;                       // seccomp, LSM label, /proc masking

  [[nodiscard]] bool IsRoot() const { return euid == 0; }
};

Caller ProbeCaller();

// The first integer in a /proc/sys file, or nullopt when it is absent or unreadable.
std::optional<long> ReadSysctl(const std::string& path);

// The fix to print when creating a user namespace failed with `err`, naming the sysctl or
// limit that blocks it.
std::string UserNamespaceFix(const Caller& caller, int err);

// Kernel release and the userns sysctls (the sysctls fail only for unprivileged callers).
std::vector<Check> KernelAndSysctlChecks(const Caller& caller);

// Forks one child that creates a user namespace, writes its id maps and then tries, inside
// it, a mount namespace, the new mount API, overlayfs, net/pid/ipc/uts/cgroup namespaces
// and a nested user namespace.
std::vector<Check> NamespaceChecks(const Caller& caller);

// openat2, clone3 with CLONE_PIDFD, pidfd_open/pidfd_send_signal. clone3 forks a child
// that exits at once.
std::vector<Check> SyscallChecks();

// no_new_privs + an allow-all seccomp filter, installed in a forked child.
Check SeccompCheck();

// Informational: cgroup layout, Landlock ABI, legacy TIOCSTI, io_uring_disabled.
std::vector<Check> InformationalChecks();

// Informational: the cgroup `run` would use for this caller, and nested user namespaces.
std::vector<Check> LimitChecks();

// bwrap (or $ATEAM_SANDBOX_BWRAP) for --backend bwrap: runs `bwrap --version`.
Check BwrapCheck();

// The id range of root's dispatches and the leases in use (doctor_identity.cc).
std::vector<Check> IdentityChecks();

// "strerror(err)" as a std::string.
std::string ErrnoText(int err);

// Runs `fn(results, count, arg)` in a forked child, which then sends the `count` values
// back whole on its base::ChildReport (the record, the values after it) and _exits.
// Returns false, leaving `results` as it was, when the child died before reporting.
// Forks: single-threaded callers only.
using ProbeFn = void (*)(int32_t* results, int count, const void* arg) noexcept;
bool RunProbeChild(ProbeFn fn, const void* arg, int32_t* results, int count);

}  // namespace sbx::cli::doctor
