// CompilePlan: SandboxSpec + HostFacts -> Plan. The only place that branches on the
// caller's privilege mode.
#pragma once

#include "base/error.h"
#include "runtime/host_facts.h"
#include "runtime/plan.h"
#include "runtime/spec.h"

namespace sbx::runtime {

// `spec` must have passed ValidateSpec. Pure: no system calls.
base::Result<Plan> CompilePlan(const SandboxSpec& spec, const HostFacts& host);

}  // namespace sbx::runtime
