// Child-side steps used by the spine in child_main.cc. Same contract: noexcept, no
// formatting; failures are reported with Fail() and end the process.
#pragma once

#include <cstdint>

#include "runtime/child/child_main.h"
#include "runtime/child/failure.h"
#include "runtime/plan.h"

namespace sbx::runtime::child {

// Reports {step, stage, errno} to the parent and _exit(1)s.
[[noreturn]] void Fail(const ChildLaunch& launch, uint32_t step, StepResult r) noexcept;
inline void Check(const ChildLaunch& launch, Phase phase, StepResult r) noexcept {
  if (r.failed()) Fail(launch, static_cast<uint32_t>(phase), r);
}
inline void Check(const ChildLaunch& launch, Phase phase, int err) noexcept {
  if (err != 0) Fail(launch, static_cast<uint32_t>(phase), {err, Stage::kNone});
}

// Writes uid_map, then "deny" to setgroups (when asked; required before an unprivileged
// gid_map, CVE-2014-8989), then gid_map, through `proc_fd` (an O_PATH fd of /proc).
// detail: a UsernsStep.
StepResult WriteIdMaps(int proc_fd, IdMapping uid, IdMapping gid, bool deny_setgroups) noexcept;

// Adds 127.0.0.1/8 to lo and brings it up in the new network namespace.
StepResult ConfigureLoopback() noexcept;

// After the pivot: the nested user namespace of UserNamespacePlan::second_*.
StepResult EnterSecondUserNamespace(const Plan& plan, int proc_fd) noexcept;

// With parent-written maps: drops supplementary groups and switches to the sandbox's
// uid/gid, keeping the capabilities (the namespace's uid 0 is not mapped, so the kernel's
// "leaving root" rule does not apply).
int SwitchToSandboxIds(const Plan& plan) noexcept;

// --pidns, first thing after clone: setns() into plan.joined.pidns_fd, fork (the parent
// exits, the child is in that namespace), with new_pidns_below unshare(CLONE_NEWPID) and
// fork again, then send this final process's pid to the monitor over `pid_socket`
// (SCM_CREDENTIALS, which the kernel translates into the monitor's pid namespace) and
// close it. Every intermediate process _exit(0)s; the monitor is their subreaper.
StepResult JoinPidNamespace(const JoinedNamespaces& joined, int pid_socket) noexcept;

// --userns, right after the go signal: setuid, then setgid, to the ids that differ from
// the caller's (bwrap's order; without KEEPCAPS a non-zero uid loses the capabilities,
// exactly as with bwrap). detail: a JoinedIdsStep.
StepResult SwitchToJoinedIds(const JoinedNamespaces& joined) noexcept;

// `run`: the SelfLimits sysctls (written through `proc_fd`, an O_PATH fd of /proc) and
// rlimits, in this process's current user namespace. detail: the index of the failed
// setting, sysctls first, then rlimits.
StepResult ApplySelfLimits(const SelfLimits& limits, int proc_fd) noexcept;

// Capabilities, --block-fd, --seccomp, chdir, setsid, the reaper fork and exec.
[[noreturn]] void RunCommandPhases(const ChildLaunch& launch) noexcept;

// The pid-1 reaper: waits for `command_pid`, reports its status on `status_fd`, keeps
// reaping until no child is left, then exits with the command's status.
[[noreturn]] void ReaperMain(const Plan& plan, pid_t command_pid, int status_fd) noexcept;

}  // namespace sbx::runtime::child
