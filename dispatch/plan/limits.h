// The resource limits of a dispatch: sizes and counts every sandbox gets whatever the host
// (tmpfs size= and nr_inodes=, the sandbox's own user-namespace sysctls, rlimits, the
// nested-user-namespace rule), and what `run` asks of a cgroup (dispatch/host/cgroup.h).
// Plain data and pure functions; nothing here touches the system.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "dispatch/request/human_units.h"
#include "dispatch/request/request.h"
#include "runtime/spec.h"

namespace sbx::dispatch {

inline constexpr uint64_t kMiB = uint64_t{1} << 20;
inline constexpr uint64_t kGiB = uint64_t{1} << 30;

// Defaults, chosen so that a real agent run (Claude Code, OpenCode, a build and its tests)
// fits: docs/usage.md lists them.
inline constexpr uint64_t kDefaultTmpfsSize = 2 * kGiB;  // home and /tmp, each
inline constexpr uint64_t kDefaultMemory = 8 * kGiB;
inline constexpr uint64_t kDefaultPids = 4096;
// --pids: enough for a shell and a few tools; at most the kernel's own ceiling (PID_MAX_LIMIT).
inline constexpr uint64_t kMinPids = 16;
inline constexpr uint64_t kMaxPids = uint64_t{4} << 20;
inline constexpr uint64_t kShmSize = 64 * kMiB;        // /dev/shm
inline constexpr uint64_t kNestedUserNamespaces = 16;  // with --allow-nested-userns
inline constexpr uint64_t kInotifyInstances = 64;      // half the kernel's per-user default
inline constexpr uint64_t kInotifyWatches = 65536;
inline constexpr uint64_t kOpenFiles = 65536;  // RLIMIT_NOFILE ceiling
// What the agent may add to the host's disk, the workspace and the out dir together
// (dispatch/host/disk_watch.h): bytes of allocated blocks, and names (files, directories,
// links; each hard link counts).
inline constexpr uint64_t kDefaultDisk = 16 * kGiB;
inline constexpr uint64_t kDefaultInodes = 500000;

struct DispatchLimits {
  uint64_t tmpfs_size = kDefaultTmpfsSize;
  uint64_t memory = kDefaultMemory;
  uint64_t pids = kDefaultPids;
  std::optional<double> cpus;
  bool nested_userns = false;
  uint64_t disk = kDefaultDisk;      // --disk; also every sandbox process's RLIMIT_FSIZE
  uint64_t inodes = kDefaultInodes;  // --inodes
};

// A size flag's value (dispatch/request/human_units.h: ParseSize, no range of its own).
inline base::Result<uint64_t> ParseByteSize(std::string_view text, std::string_view flag) {
  return ParseSize(text, flag);
}

// The request's flags with every default filled in and checked.
base::Result<DispatchLimits> ResolveLimits(const DispatchRequest& request);

// tmpfs nr_inodes for a tmpfs of `size` bytes: one inode per 16 KiB, at least 1024.
uint64_t InodesForSize(uint64_t size);

// Sizes every tmpfs of the dispatch layout (home, /tmp, /dev, /dev/shm, the tunnel dir)
// and sets the spec's SelfLimits.
void ApplyLimitsToSpec(const DispatchLimits& limits, runtime::SandboxSpec* spec);

// The sysctls and rlimits the sandbox sets for itself (runtime::SelfLimits).
runtime::SelfLimits SelfLimitsFor(const DispatchLimits& limits);

// What this dispatch enforces and how, for the status document and the dry run.
struct LimitsReport {
  std::vector<std::string> enforced;      // "tmpfs: ...", "pids: ...", ...
  std::vector<std::string> not_enforced;  // each with the reason
  // Each limit and what enforces it, or "not enforced" (dispatch/plan/limit_check.h).
  std::vector<std::pair<std::string, std::string>> by;
};
// `backend_bwrap`: the bwrap backend cannot apply the sandbox's own sysctls nor the
// nr_inodes and /dev sizes; `cgroup`: "" when no cgroup is used, else its description;
// `cgroup_missing`: why there is none.
LimitsReport ReportLimits(const DispatchLimits& limits, bool backend_bwrap,
                          const std::string& cgroup, const std::string& cgroup_missing);
std::string RenderLimitsJson(const DispatchLimits& limits, const LimitsReport& report);

}  // namespace sbx::dispatch
