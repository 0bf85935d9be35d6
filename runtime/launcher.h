// Launch: the parent side of a native sandbox. Clones the child with the plan's
// namespaces, feeds it, watches it, and turns how it ended into an exit code.
//
// Parent-side contract: must be called from a single-threaded process (checked), because
// the child after clone uses malloc (libnl, libcap) and exec-time state.
#pragma once

#include "runtime/base/error.h"
#include "runtime/plan.h"

namespace sbx::runtime {

// Runs the plan. Returns the exit code bwrap would: the command's status, 128+signal, or
// an Error (setup or exec failure, rendered as bwrap's message) for which bwrap exits 1.
base::Result<int> Launch(const Plan& plan);

}  // namespace sbx::runtime
