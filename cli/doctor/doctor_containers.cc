// Container and LSM layers around the doctor's process: see doctor_containers.h.
#include "cli/doctor/doctor_containers.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <fmt/format.h>

#include "cli/doctor/doctor_probes.h"

namespace sbx::cli::doctor {

namespace {

constexpr const char* kSeccompFix =
    "a seccomp filter refuses unshare/clone with CLONE_NEWUSER: Docker/Podman: "
    "--security-opt seccomp=unconfined, or a seccomp profile that allows unshare, clone and "
    "clone3 with namespace flags; Kubernetes: securityContext.seccompProfile.type: Unconfined, "
    "or a Localhost profile that allows them (RuntimeDefault does not); containerd/runc: no "
    "linux.seccomp in the OCI spec (ctr run without --seccomp), or a profile that allows them";

constexpr const char* kAppArmorInstallFix =
    "install the package's profile /etc/apparmor.d/ateam-sandbox and load it: sudo "
    "apparmor_parser -r /etc/apparmor.d/ateam-sandbox (or, for every program: sudo sysctl -w "
    "kernel.apparmor_restrict_unprivileged_userns=0)";

constexpr const char* kProcFix =
    "Docker/Podman: --security-opt systempaths=unconfined; Kubernetes: "
    "securityContext.procMount: Unmasked (with hostUsers: false); containerd/runc: empty "
    "linux.maskedPaths and linux.readonlyPaths in the OCI spec";

std::optional<std::string> ReadWhole(const char* path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// "docker-default (enforce)\n" -> "docker-default (enforce)".
std::string Trim(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\0' || text.back() == ' ')) {
    text.pop_back();
  }
  return text;
}

bool IsSelinuxLabel(const std::string& label) { return label.find(':') != std::string::npos; }

// The profiles container runtimes confine their processes with by default; all of them
// refuse mount(2).
bool IsContainerAppArmorProfile(const std::string& label) {
  for (const char* name : {"docker-default", "containers-default", "cri-containerd", "crio-"}) {
    if (label.starts_with(name)) return true;
  }
  return false;
}

void UnshareProbe(int32_t* results, int /*count*/, const void* /*arg*/) noexcept {
  results[0] = ::unshare(0) == 0 ? 0 : errno;
  results[1] = ::unshare(CLONE_NEWUSER) == 0 ? 0 : errno;
}

// Whether a uid_map text maps `id` inside.
bool MapsId(const std::string& map, unsigned long id) {
  std::istringstream in(map);
  unsigned long inside = 0;
  unsigned long outside = 0;
  unsigned long count = 0;
  while (in >> inside >> outside >> count) {
    if (id >= inside && id - inside < count) return true;
  }
  return false;
}

}  // namespace

void ParseProcStatus(std::string_view status, ContainerFacts* facts) {
  std::istringstream in{std::string(status)};
  std::string line;
  while (std::getline(in, line)) {
    unsigned long long caps = 0;
    if (std::sscanf(line.c_str(), "Seccomp: %d", &facts->seccomp_mode) == 1) continue;
    if (std::sscanf(line.c_str(), "Seccomp_filters: %d", &facts->seccomp_filters) == 1) continue;
    if (std::sscanf(line.c_str(), "CapEff: %llx", &caps) == 1) facts->cap_effective = caps;
  }
}

ContainerFacts ProbeContainerFacts() {
  ContainerFacts facts;
  if (auto status = ReadWhole("/proc/self/status")) ParseProcStatus(*status, &facts);
  // The AppArmor-specific file exists since 5.1 and is right when several LSMs stack;
  // attr/current is the older shared one (SELinux labels show there too).
  facts.apparmor_label = ReadWhole("/proc/self/attr/apparmor/current");
  if (!facts.apparmor_label || facts.apparmor_label->empty()) {
    facts.apparmor_label = ReadWhole("/proc/self/attr/current");
  }
  if (facts.apparmor_label) facts.apparmor_label = Trim(*facts.apparmor_label);
  if (facts.apparmor_label && facts.apparmor_label->empty()) facts.apparmor_label.reset();
  facts.apparmor_profiles = ReadWhole("/sys/kernel/security/apparmor/profiles");
  facts.mountinfo = ReadWhole("/proc/self/mountinfo").value_or("");
  facts.uid_map = ReadWhole("/proc/self/uid_map").value_or("");
  int32_t r[2] = {0, 0};
  if (RunProbeChild(UnshareProbe, nullptr, r, 2)) {
    facts.unshare_errno = r[0];
    facts.userns_errno = r[1];
  }
  return facts;
}

bool ProfileLoaded(std::string_view profiles, std::string_view name) {
  std::istringstream in{std::string(profiles)};
  std::string line;
  while (std::getline(in, line)) {
    if (line == name ||
        (line.starts_with(name) && line.size() > name.size() && line[name.size()] == ' ')) {
      return true;
    }
  }
  return false;
}

ProcMasking ParseProcMasking(std::string_view mountinfo) {
  ProcMasking masking;
  std::istringstream in{std::string(mountinfo)};
  std::string line;
  while (std::getline(in, line)) {
    // "36 25 0:32 / /proc/kcore rw,nosuid - tmpfs tmpfs rw": field 5 is the mount point,
    // field 6 the per-mount options.
    std::istringstream fields(line);
    std::string id, parent, dev, root, point, options;
    if (!(fields >> id >> parent >> dev >> root >> point >> options)) continue;
    if (!point.starts_with("/proc/")) continue;
    // binfmt_misc sits on a permanently empty procfs directory, which the kernel accepts.
    if (point == "/proc/sys/fs/binfmt_misc") continue;
    const bool read_only = options == "ro" || options.starts_with("ro,");
    if (point == "/proc/sys" && read_only) {
      masking.sys_read_only = true;
    } else if (std::find(masking.masked.begin(), masking.masked.end(), point) ==
               masking.masked.end()) {
      masking.masked.push_back(point);
    }
  }
  return masking;
}

bool SeccompBlocksUserNamespaces(const Caller& caller, const ContainerFacts& facts) {
  if (facts.seccomp_mode != 2) return false;
  if (facts.unshare_errno == EPERM) return true;  // unshare refused whatever the flags
  if (facts.userns_errno != EPERM) return false;
  // EPERM also comes from kernel.unprivileged_userns_clone=0 for unprivileged callers.
  return caller.IsRoot() || caller.unprivileged_userns_clone != 0L;
}

std::string UserNamespaceBlocker(const Caller& caller, const ContainerFacts& facts, int err) {
  if (err == 0) return "";
  if (err == ENOSPC) {
    if (caller.max_user_namespaces == 0L) {
      return "user.max_user_namespaces is 0 in this user namespace: sysctl -w "
             "user.max_user_namespaces=15000 there (persist it in /etc/sysctl.d/), or ask "
             "whoever set it (a container runtime or an outer sandbox)";
    }
    // The count limit of this or an enclosing user namespace, or the nesting depth (32).
    return "a user-namespace limit is reached: raise user.max_user_namespaces, or do not run "
           "inside a sandbox that forbids nesting (e.g. bwrap --disable-userns)";
  }
  if (SeccompBlocksUserNamespaces(caller, facts)) return kSeccompFix;
  if (caller.max_user_namespaces == 0L) {
    return "sysctl -w user.max_user_namespaces=15000 (persist it in /etc/sysctl.d/)";
  }
  if (err == EINVAL) return "a kernel built with CONFIG_USER_NS=y";
  if (caller.unprivileged_userns_clone == 0L && !caller.IsRoot()) {
    return "sysctl -w kernel.unprivileged_userns_clone=1 (persist it in /etc/sysctl.d/)";
  }
  if (caller.apparmor_restrict_userns == 1L && !caller.IsRoot()) return kAppArmorInstallFix;
  return "a container runtime or LSM blocks unshare(CLONE_NEWUSER): run on the host, or allow "
         "it (e.g. docker --security-opt seccomp=unconfined --security-opt apparmor=unconfined)";
}

std::string MountBlockerFix(const Caller& caller, const ContainerFacts& facts) {
  if (caller.apparmor_restrict_userns == 1L && !caller.IsRoot()) return kAppArmorInstallFix;
  const std::string label = facts.apparmor_label.value_or("");
  if (IsContainerAppArmorProfile(label)) {
    return fmt::format(
        "the AppArmor profile {} refuses mounts: Docker/Podman: --security-opt "
        "apparmor=unconfined; Kubernetes: securityContext.appArmorProfile.type: Unconfined",
        label);
  }
  return "mounts are denied inside a user namespace by a container runtime or LSM: run on "
         "the host or allow them; see `dmesg` for LSM denials";
}

Check AppArmorCheck(const Caller& caller, const ContainerFacts& facts) {
  const std::string label = facts.apparmor_label.value_or("");
  const bool apparmor_label = !label.empty() && !IsSelinuxLabel(label);
  Check check{"apparmor", CheckStatus::kInfo, "", ""};
  if (!caller.apparmor_restrict_userns && !apparmor_label) {
    check.detail = label.empty() ? "not active for this process"
                                 : fmt::format("not active (SELinux label {})", label);
    return check;
  }
  const std::string runs_as =
      apparmor_label ? fmt::format("this process runs as '{}'", label) : "no label";
  if (caller.apparmor_restrict_userns.value_or(0) != 1) {
    check.status = CheckStatus::kOk;
    check.detail = fmt::format("kernel.apparmor_restrict_unprivileged_userns={}; {}",
                               caller.apparmor_restrict_userns.value_or(0), runs_as);
    if (IsContainerAppArmorProfile(label)) {
      check.status = CheckStatus::kInfo;
      check.fix = MountBlockerFix(caller, facts);
    }
    return check;
  }
  const bool loaded =
      facts.apparmor_profiles && ProfileLoaded(*facts.apparmor_profiles, kAppArmorProfile);
  const bool confined = label.starts_with(kAppArmorProfile);
  check.detail = fmt::format(
      "kernel.apparmor_restrict_unprivileged_userns=1; profile {} {}; {}", kAppArmorProfile,
      loaded                    ? "is loaded"
      : facts.apparmor_profiles ? "is not loaded"
                                : "unknown (the profile list is readable by root only)",
      runs_as);
  if (confined) {
    check.status = CheckStatus::kOk;
  } else if (caller.IsRoot()) {
    // Root's user namespaces keep their capabilities; only nested sandboxes are limited.
    check.detail += " (limits unprivileged callers and nested sandboxes, not root)";
  } else {
    check.status = CheckStatus::kFail;
    check.fix = loaded ? "the profile attaches to the installed /usr/bin/ateam-sandbox: run that "
                         "one, not a copy elsewhere"
                       : kAppArmorInstallFix;
  }
  return check;
}

Check SeccompFilterCheck(const Caller& caller, const ContainerFacts& facts) {
  Check check{"seccomp-filter", CheckStatus::kOk, "this process runs under no seccomp filter", ""};
  if (facts.seccomp_mode == 1) {
    check.status = CheckStatus::kFail;
    check.detail = "this process runs in strict seccomp mode";
    check.fix = "run outside the strict-mode sandbox";
    return check;
  }
  if (facts.seccomp_mode != 2) return check;
  const std::string filters = facts.seccomp_filters > 0
                                  ? fmt::format("{} seccomp filter(s)", facts.seccomp_filters)
                                  : std::string("a seccomp filter");
  if (SeccompBlocksUserNamespaces(caller, facts)) {
    check.status = CheckStatus::kFail;
    check.detail = fmt::format(
        "this process runs under {} and it refuses {} with EPERM: seccomp blocks the sandbox",
        filters, facts.unshare_errno == EPERM ? "unshare" : "unshare(CLONE_NEWUSER)");
    check.fix = kSeccompFix;
    return check;
  }
  check.status = CheckStatus::kInfo;
  check.detail = fmt::format(
      "this process runs under {} (a container or an outer sandbox); unshare(CLONE_NEWUSER) {}",
      filters, facts.userns_errno == 0 ? "passes it" : "fails for another reason, see above");
  return check;
}

Check ProcMaskingCheck(const ContainerFacts& facts) {
  const ProcMasking masking = ParseProcMasking(facts.mountinfo);
  if (masking.masked.empty() && !masking.sys_read_only) {
    return {"proc", CheckStatus::kOk, "nothing below /proc is masked: a fresh /proc can be mounted",
            ""};
  }
  std::string what;
  for (size_t i = 0; i < masking.masked.size() && i < 4; ++i) {
    what += (i == 0 ? "" : ", ") + masking.masked[i];
  }
  if (masking.masked.size() > 4) what += fmt::format(" and {} more", masking.masked.size() - 4);
  if (masking.sys_read_only) what += what.empty() ? "/proc/sys read-only" : "; /proc/sys read-only";
  return {"proc", CheckStatus::kFail,
          fmt::format("masked /proc ({}): the kernel refuses the sandbox a fresh /proc, and run "
                      "does not go without one",
                      what),
          kProcFix};
}

std::optional<Check> RootCapabilitiesCheck(const Caller& caller, const ContainerFacts& facts) {
  if (!caller.IsRoot()) return std::nullopt;
  // Root of a user namespace that maps only itself runs sandboxes as itself (docs/usage.md).
  if (!facts.uid_map.empty() && !MapsId(facts.uid_map, 65534)) {
    return Check{"root-capabilities", CheckStatus::kInfo,
                 "uid 0 of a user namespace that maps no other id: run runs the sandbox as "
                 "this id, as an unprivileged caller would",
                 ""};
  }
  struct Needed {
    int bit;
    const char* name;
  };
  constexpr Needed kNeeded[] = {{0, "CAP_CHOWN"},
                                {1, "CAP_DAC_OVERRIDE"},
                                {3, "CAP_FOWNER"},
                                {6, "CAP_SETGID"},
                                {7, "CAP_SETUID"}};
  std::string missing;
  const uint64_t caps = facts.cap_effective.value_or(~0ULL);
  for (const Needed& n : kNeeded) {
    if ((caps & (1ULL << n.bit)) == 0)
      missing += fmt::format("{}{}", missing.empty() ? "" : ", ", n.name);
  }
  if (missing.empty()) {
    return Check{"root-capabilities", CheckStatus::kOk,
                 "root keeps what run needs to hand the sandbox to another id", ""};
  }
  return Check{"root-capabilities", CheckStatus::kFail,
               fmt::format("root without {}: run cannot hand the workspace and the sandbox to "
                           "the run-as ids",
                           missing),
               "Docker/Podman: do not --cap-drop them (the defaults keep them); Kubernetes: "
               "securityContext.capabilities.add them; or run as a non-root user"};
}

std::vector<Check> ContainerChecks(const Caller& caller, const ContainerFacts& facts) {
  std::vector<Check> checks{AppArmorCheck(caller, facts), SeccompFilterCheck(caller, facts),
                            ProcMaskingCheck(facts)};
  if (auto caps = RootCapabilitiesCheck(caller, facts)) checks.push_back(std::move(*caps));
  return checks;
}

}  // namespace sbx::cli::doctor
