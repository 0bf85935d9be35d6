// What a container or a restricted host puts around this process, and which of those layers
// blocks the sandbox: the seccomp filter, the AppArmor label and profiles, masked /proc
// paths, the capabilities of a root caller. The parsing and the verdicts are pure functions
// of ContainerFacts, so tests feed them any container's /proc texts.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/doctor/doctor.h"

namespace sbx::cli::doctor {

struct Caller;

struct ContainerFacts {
  int seccomp_mode = 0;     // "Seccomp:" of /proc/self/status: 0 none, 1 strict, 2 filter
  int seccomp_filters = 0;  // "Seccomp_filters:" (kernel 5.9+), 0 when absent
  std::optional<uint64_t> cap_effective;         // "CapEff:"
  std::optional<std::string> apparmor_label;     // /proc/self/attr/apparmor/current
  std::optional<std::string> apparmor_profiles;  // /sys/kernel/security/apparmor/profiles
  std::string mountinfo;                         // /proc/self/mountinfo
  std::string uid_map;                           // /proc/self/uid_map ("" when unreadable)
  int userns_errno = 0;   // unshare(CLONE_NEWUSER) in a forked child; 0 when it worked
  int unshare_errno = 0;  // unshare(0): a filter that refuses unshare whatever the flags
};

// Reads this process's facts; forks two short children (single-threaded callers only).
ContainerFacts ProbeContainerFacts();

// Fills the seccomp and capability fields from the text of /proc/self/status.
void ParseProcStatus(std::string_view status, ContainerFacts* facts);

// The name of our AppArmor profile, as installed in /etc/apparmor.d/.
inline constexpr std::string_view kAppArmorProfile = "ateam-sandbox";

// True when the `profiles` text lists a profile named `name` ("name (enforce)" lines).
bool ProfileLoaded(std::string_view profiles, std::string_view name);

struct ProcMasking {
  bool sys_read_only = false;       // /proc/sys is a read-only mount
  std::vector<std::string> masked;  // other mounts over paths below /proc
};
// The mounts over /proc paths in a /proc/self/mountinfo text.
ProcMasking ParseProcMasking(std::string_view mountinfo);

// Why unshare(CLONE_NEWUSER) failed with `err` and the smallest change that fixes it, as a
// fix text; "" when `err` is 0.
std::string UserNamespaceBlocker(const Caller& caller, const ContainerFacts& facts, int err);

// True when the facts make a seccomp filter the likeliest reason user namespaces fail.
bool SeccompBlocksUserNamespaces(const Caller& caller, const ContainerFacts& facts);

// The fix for mounts refused inside the user namespace, naming the AppArmor label if any.
std::string MountBlockerFix(const Caller& caller, const ContainerFacts& facts);

Check AppArmorCheck(const Caller& caller, const ContainerFacts& facts);
Check SeccompFilterCheck(const Caller& caller, const ContainerFacts& facts);
Check ProcMaskingCheck(const ContainerFacts& facts);
// Root callers only (nullopt otherwise): the capabilities `run` uses to hand the sandbox
// to another id (CAP_SETUID, CAP_SETGID, CAP_CHOWN, CAP_FOWNER, CAP_DAC_OVERRIDE).
std::optional<Check> RootCapabilitiesCheck(const Caller& caller, const ContainerFacts& facts);

std::vector<Check> ContainerChecks(const Caller& caller, const ContainerFacts& facts);

}  // namespace sbx::cli::doctor
