// The printed plan: what --dry-run shows and what golden tests compare. One line per
// fact, stable across runs (no pids, no fds of this process, no timings).
#pragma once

#include <string>

#include "runtime/plan.h"

namespace sbx::runtime {

// One line describing `op` ("bind /usr -> /usr (ro)").
std::string Describe(const PlanOp& op);

std::string PrintPlan(const Plan& plan);

}  // namespace sbx::runtime
