// A forked child that becomes the sandbox's ids before it does anything: the way a root
// caller works inside directories that belong to those ids (the clone, a given --out).
// Files it creates are born with the right owner, and nothing there is done as root. The
// child reports a failed step on a base::ChildReport: the switch's own, or one of its body's.
#pragma once

#include <sys/types.h>

#include <functional>
#include <optional>

#include "base/child_process.h"
#include "base/error.h"
#include "runtime/spec.h"

namespace sbx::dispatch {

// The child's exit status when it could not become `ids` (the switch's error is returned
// instead) or its parent went away meanwhile.
inline constexpr int kChildCantSwitchIds = 120;

// How a child ended: its wait status, and the step its body reported as failed (numbered
// by the caller from 1, with its errno), when it did.
struct ChildRun {
  int status = 0;
  std::optional<base::ChildFailure> failure;
};

// Forks. The child dies with us (PDEATHSIG), restores the default signal mask, and with
// `ids` set drops supplementary groups, then setresgid and setresuid to them (which clears
// every capability set: no SECBIT_KEEP_CAPS), then sets no_new_privs and points HOME away
// from the caller's (at /nonexistent); then it runs `body` and _exits with what it returns (`body`
// may exec instead, which closes the report, or report a failed step on it). `while_running`, when
// given, runs in the parent with the child's pid before it waits (to drain a pipe the child writes,
// or to stop it); it must return once the child is gone. Returns how the child ended, or the
// switch's error with its errno.
base::Result<ChildRun> RunChildAs(const std::optional<runtime::SandboxSpec::HostIds>& ids,
                                  const std::function<int(const base::ChildReport&)>& body,
                                  const std::function<void(pid_t)>& while_running = {});

// The same for a body that reports nothing but its exit code: the wait status.
base::Result<int> RunInChildAs(const std::optional<runtime::SandboxSpec::HostIds>& ids,
                               const std::function<int()>& body,
                               const std::function<void(pid_t)>& while_running = {});

// In the child: the switch itself (base::SwitchToIds, then no_new_privs; exposed for
// tests). 0 or an errno.
int SwitchToIds(const runtime::SandboxSpec::HostIds& ids);

}  // namespace sbx::dispatch
