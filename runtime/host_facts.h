// HostFacts: what the host allows and who the caller is, probed once before anything is
// decided. Plain data, so tests inject it to get golden plans for root and unprivileged
// callers without being either.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"

namespace sbx::runtime {

// One line of /proc/self/uid_map or gid_map: `count` ids from `first`, as seen inside the
// caller's user namespace.
struct IdRange {
  uint32_t first = 0;
  uint32_t count = 0;
};

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
  // The ids that exist in the caller's user namespace (all of them on a host; one or a
  // range in a rootless container). Only these can own files or run a sandbox.
  std::vector<IdRange> uid_map{{0, 4294967295U}};
  std::vector<IdRange> gid_map{{0, 4294967295U}};
  // uid 0 that acts as an unprivileged caller: set by `run` for the root of a user
  // namespace that maps no other id to hand the sandbox to (docs/usage.md).
  bool root_acts_unprivileged = false;

  [[nodiscard]] bool IsRoot() const { return uid == 0 && !root_acts_unprivileged; }
  [[nodiscard]] bool MapsUid(uid_t id) const;
  [[nodiscard]] bool MapsGid(gid_t id) const;
};

// The ranges of a uid_map/gid_map text ("inside outside count" lines); malformed lines are
// skipped.
std::vector<IdRange> ParseIdMap(std::string_view text);

// Probes the running host and process. Fails only when /proc is unusable.
base::Result<HostFacts> ProbeHostFacts();

}  // namespace sbx::runtime
