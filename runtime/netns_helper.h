// The sandbox's network namespace, made beside its filesystem setup instead of by clone.
//
// Creating a network namespace is the largest single kernel cost of a sandbox's start-up
// (copy_net_ns, about 1.2 ms here), and clone3 pays it in the monitor before the child
// even exists. When nothing can observe the child's namespaces before it runs, the monitor
// clones without CLONE_NEWNET and forks a helper that joins the child's user namespace,
// unshares a network namespace, brings lo up and sends the namespace's fd to the child.
// The child builds its mounts meanwhile and setns()es into the namespace right after the
// pivot, before anything of the command runs. On two idle cores the two halves overlap.
#pragma once

#include <sys/types.h>

#include <cstdint>

#include "runtime/base/error.h"
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

// Monitor side, right after clone: forks the helper. `child_pidfd` is the clone child,
// `channel` the monitor's end of the socket pair whose other end the child holds. The
// helper shares nothing with the monitor after the fork; the caller reaps it (waitpid)
// once the child has exec'd or failed.
base::Result<pid_t> StartNetnsHelper(const Plan& plan, int child_pidfd, int channel);

namespace child {

// Child side, after the pivot: waits for the helper's report on `channel` and joins the
// namespace. On failure returns the step that failed (*phase) and its result.
StepResult JoinHelperNetns(int channel, Phase* phase) noexcept;

}  // namespace child
}  // namespace sbx::runtime
