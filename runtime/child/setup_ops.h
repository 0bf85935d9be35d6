// The filesystem op executor: carries out one PlanOp inside the future root. Runs in the
// child after clone, in its own mount namespace, before the pivot.
//
// Host sources are opened first, for every op at once (OpenSources), as detached clones
// of the host trees: after that no host path is looked up again, and the setup root that
// is later mounted on /tmp can never appear inside a bind of "/" or "/tmp".
#pragma once

#include <cstddef>

#include "runtime/child/failure.h"
#include "runtime/plan.h"

namespace sbx::runtime::child {

// Up to this many pre-opened host objects per op (--dev needs six nodes and a console;
// an overlay needs its upper and work directories and every lower layer).
inline constexpr int kMaxSourcesPerOp = 32;

struct OpSources {
  OpSources() {
    for (int& fd : fds) fd = -1;
  }
  int fds[kMaxSourcesPerOp];
};

// The host device nodes --dev binds, in OpSources order; the console comes last.
inline constexpr const char* kDevNodes[] = {"null", "zero", "full", "random", "urandom", "tty"};
inline constexpr int kDevNodeCount = 6;

struct SetupContext {
  const Plan* plan = nullptr;
  OpSources* sources = nullptr;  // one per plan op, allocated by the parent before clone
  int root_fd = -1;              // O_PATH fd of the future root
  int setup_fd = -1;             // directory fd of the setup tmpfs (outside the root)
  char* failure_text = nullptr;  // PATH_MAX bytes: raw text shipped with a failure (the
                                 // existing target of a conflicting --symlink)
};

// Opens every op's host objects. A -try op whose source is missing gets no fd and is
// skipped later. Returns the failing op's StepResult (detail = op index).
StepResult OpenSources(const SetupContext& ctx) noexcept;

// Executes op `index` of ctx.plan->ops.
// NOLINTNEXTLINE(bugprone-exception-escape): see the definition.
StepResult ExecuteOp(const SetupContext& ctx, size_t index) noexcept;

}  // namespace sbx::runtime::child
