#include "runtime/spec.h"

#include "runtime/host_facts.h"

namespace sbx::runtime {

base::Status ValidateSpec(const SandboxSpec& spec, const HostFacts& host) {
  (void)spec;
  (void)host;
  return {};
}

}  // namespace sbx::runtime
