// RunDoctorChecks() and the shared helpers of the probes: caller facts, sysctls, the probe
// child runner and the kernel/sysctl checks.
#include "cli/doctor/doctor.h"

#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/child_process.h"
#include "cli/doctor/doctor_probes.h"

namespace sbx::cli {

namespace doctor {

namespace {

constexpr const char* kMaxUserNs = "/proc/sys/user/max_user_namespaces";
constexpr const char* kUsernsClone = "/proc/sys/kernel/unprivileged_userns_clone";
constexpr const char* kAppArmorUserns = "/proc/sys/kernel/apparmor_restrict_unprivileged_userns";

// "6.18.0-1-amd64" -> {6, 18}; {0, 0} when unparsable.
std::pair<int, int> KernelVersion(const char* release) {
  int major = 0;
  int minor = 0;
  if (std::sscanf(release, "%d.%d", &major, &minor) != 2) return {0, 0};
  return {major, minor};
}

Check KernelCheck() {
  utsname uts{};
  ::uname(&uts);
  auto [major, minor] = KernelVersion(uts.release);
  Check check{"kernel", CheckStatus::kOk, fmt::format("Linux {}", uts.release), ""};
  // 5.12 is the newest floor of the calls the native backend makes (mount_setattr); the
  // namespace probes below show what actually works.
  if (major < 5 || (major == 5 && minor < 12)) {
    check.status = CheckStatus::kFail;
    check.detail += " (5.12 or newer needed: mount_setattr 5.12, openat2 5.6, clone3 5.3)";
    check.fix = "upgrade the kernel, or use --backend bwrap";
  }
  return check;
}

// One userns sysctl; `bad` says its value blocks unprivileged user namespaces.
Check SysctlCheck(const Caller& caller, const char* name, std::optional<long> value, bool bad,
                  std::string fix) {
  Check check{name, CheckStatus::kOk, fmt::format("{}", value.value_or(0)), ""};
  if (!bad) return check;
  if (caller.IsRoot()) {
    // Root creates the outer user namespace with CAP_SYS_ADMIN, so only nested sandboxes
    // (an agent's own bwrap) are affected; the nested-user-namespace probe decides.
    check.status = CheckStatus::kInfo;
    check.detail += " (limits unprivileged callers and nested sandboxes, not root)";
  } else {
    check.status = CheckStatus::kFail;
    check.detail += " (unprivileged user namespaces are blocked)";
  }
  check.fix = std::move(fix);
  return check;
}

}  // namespace

std::string ErrnoText(int err) { return std::strerror(err); }

std::optional<long> ReadSysctl(const std::string& path) {
  std::ifstream in(path);
  long value = 0;
  if (!(in >> value)) return std::nullopt;
  return value;
}

Caller ProbeCaller() {
  Caller caller;
  caller.euid = ::geteuid();
  caller.egid = ::getegid();
  caller.max_user_namespaces = ReadSysctl(kMaxUserNs);
  caller.unprivileged_userns_clone = ReadSysctl(kUsernsClone);
  caller.apparmor_restrict_userns = ReadSysctl(kAppArmorUserns);
  caller.container = ProbeContainerFacts();
  return caller;
}

std::string UserNamespaceFix(const Caller& caller, int err) {
  return UserNamespaceBlocker(caller, caller.container, err);
}

std::vector<Check> KernelAndSysctlChecks(const Caller& caller) {
  std::vector<Check> checks{KernelCheck()};
  if (caller.max_user_namespaces && *caller.max_user_namespaces <= 0) {
    // A count limit of 0 refuses root too: no caller gets a user namespace here.
    checks.push_back({"max_user_namespaces", CheckStatus::kFail,
                      fmt::format("{} (no user namespace can be created in this one)",
                                  *caller.max_user_namespaces),
                      "sysctl -w user.max_user_namespaces=15000 in the namespace that set it"});
  } else if (caller.max_user_namespaces) {
    checks.push_back(
        SysctlCheck(caller, "max_user_namespaces", caller.max_user_namespaces, false, ""));
  } else {
    checks.push_back({"max_user_namespaces", CheckStatus::kFail,
                      fmt::format("{} is missing (kernel without user namespaces?)", kMaxUserNs),
                      "use a kernel built with CONFIG_USER_NS=y"});
  }
  if (caller.unprivileged_userns_clone) {
    checks.push_back(SysctlCheck(
        caller, "unprivileged_userns_clone", caller.unprivileged_userns_clone,
        *caller.unprivileged_userns_clone != 1, "sysctl -w kernel.unprivileged_userns_clone=1"));
  }
  // kernel.apparmor_restrict_unprivileged_userns is reported by the apparmor check, with
  // whether our profile is loaded.
  return checks;
}

bool RunProbeChild(ProbeFn fn, const void* arg, int32_t* results, int count) {
  auto report = base::ChildReport::Open();
  if (!report) return false;
  // Fork, not clone: a probe may format (snprintf) before its system calls.
  auto child = base::ForkWithPidfd("a doctor probe");
  if (!child) return false;
  const auto size = static_cast<size_t>(count) * sizeof(int32_t);
  if (child->pid == 0) {
    report->CloseReadEnd();
    fn(results, count, arg);
    // The probe's outcome is its data, not a failure of the child: the record only frames
    // the values (every step's errno) that follow it, and the child exits 0.
    report->Fail(base::ChildFailure{.detail = static_cast<uint32_t>(size)},
                 reinterpret_cast<const char*>(results), size, 0);
  }
  report->CloseWriteEnd();
  auto record = report->Read();
  std::string values = record && *record ? report->ReadText((*record)->detail) : std::string();
  int status = 0;
  while (::waitpid(child->pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (values.size() != size) return false;
  std::memcpy(results, values.data(), size);
  return true;
}

}  // namespace doctor

std::vector<Check> RunDoctorChecks() {
  const doctor::Caller caller = doctor::ProbeCaller();
  std::vector<Check> checks = doctor::KernelAndSysctlChecks(caller);
  auto append = [&checks](std::vector<Check> more) {
    for (Check& c : more) checks.push_back(std::move(c));
  };
  append(doctor::NamespaceChecks(caller));
  append(doctor::ContainerChecks(caller, caller.container));
  append(doctor::SyscallChecks());
  checks.push_back(doctor::SeccompCheck());
  append(doctor::InformationalChecks());
  append(doctor::LimitChecks());
  append(doctor::IdentityChecks());
  checks.push_back(doctor::BwrapCheck());
  return checks;
}

}  // namespace sbx::cli
