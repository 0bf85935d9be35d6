// The sandbox's network namespace, made beside its filesystem setup instead of by clone.
//
// Creating a network namespace is the largest single kernel cost of a sandbox's start-up
// (copy_net_ns, about 1 ms here), and clone3 pays it in the monitor before the child even
// exists. When nothing can observe the child's namespaces before it runs, the monitor
// clones without CLONE_NEWNET, and the child's first act is to fork a helper: a copy of
// itself, already in the sandbox's user namespace with every capability there, that
// unshares a network namespace, brings lo up and sends the namespace's fd back. The child
// builds its mounts meanwhile and setns()es into the namespace right after the pivot,
// before anything of the command runs. On two idle cores the two halves overlap.
//
// The child forks the helper, not the monitor: the child is certain to be running right
// after clone, while a monitor that forks next can be left waiting for a CPU behind its
// own child (measured: the helper then started after the mounts were done, and the child
// sat idle for its namespace).
#pragma once

#include <sys/types.h>

#include <cstdint>

#include "runtime/child/failure.h"
#include "runtime/plan.h"

namespace sbx::runtime {

// Whether `plan` gets its network namespace this way: it asks for one, and nothing looks
// at or changes the child's namespaces or ids from outside before it runs (--info-fd,
// --json-status-fd, --userns-block-fd, joined namespaces, id maps written by the monitor).
bool NetnsFromHelper(const Plan& plan);

// What the helper sends the child: its outcome, and on success the namespace fd (in
// SCM_RIGHTS). phase 0 means success; otherwise a child::Phase and its detail.
struct NetnsHelperReport {
  uint32_t phase = 0;
  uint32_t detail = 0;
  int32_t err = 0;
};

namespace child {

// Child side, first thing after clone: forks the helper. `helper_end` is the helper's end
// of a SOCK_SEQPACKET pair whose other end the child keeps; the child closes `helper_end`
// once this returns, so a helper that dies unreported reads as EOF. `proc_fd` is an O_PATH
// fd of the host's /proc, which the helper resolves its own namespace through (the child
// may pivot meanwhile, and the helper shares its mount namespace). `new_pid_namespace`:
// the child is pid 1 of a new pid namespace, where the helper takes pid 2; pids are handed
// out cyclically, so the command would be pid 3 where bwrap's is 2. The helper then rewinds
// the namespace's counter (ns_last_pid, resolved for the writer's own pid namespace) after
// its report, and the command gets pid 2 once the helper is reaped. Best effort: without
// checkpoint/restore support in the kernel the command is only pid 3. Returns the helper's
// pid, or -1 with errno set.
pid_t StartNetnsHelper(int helper_end, int proc_fd, bool new_pid_namespace) noexcept;

// Child side, after the pivot: waits for the helper's report on `channel` and joins the
// namespace. On failure returns the step that failed (*phase) and its result.
StepResult JoinHelperNetns(int channel, Phase* phase) noexcept;

// Child side, before the command is spawned (and so before the next pid is handed out):
// reaps the helper, which has exited or is about to, right after its report. Late on
// purpose: its exit overlaps with the child's work after JoinHelperNetns.
void ReapNetnsHelper(pid_t helper_pid) noexcept;

}  // namespace child
}  // namespace sbx::runtime
