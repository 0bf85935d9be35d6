// HostFacts: what the host allows and who the caller is, probed once before anything is
// decided. Plain data, so tests inject it to get golden plans for root and unprivileged
// callers without being either.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

#include "base/error.h"

namespace sbx::runtime {

struct HostFacts {
  uid_t uid = 0;  // real ids of the caller
  gid_t gid = 0;
  uid_t euid = 0;
  uint64_t effective_caps = 0;  // bit N = capability N
  uint64_t permitted_caps = 0;
  int cap_last_cap = 40;
  uid_t overflow_uid = 65534;
  gid_t overflow_gid = 65534;
  bool user_namespaces = true;            // a new user namespace can be created
  bool cgroup_namespaces = true;          // the kernel has cgroup namespaces
  std::string cwd;                        // the caller's working directory ("" if unknown)
  std::optional<std::string> stdout_tty;  // device path when stdout is a terminal

  [[nodiscard]] bool IsRoot() const { return uid == 0; }
};

// Probes the running host and process. Fails only when /proc is unusable.
base::Result<HostFacts> ProbeHostFacts();

}  // namespace sbx::runtime
