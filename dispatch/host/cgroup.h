// DispatchCgroup: the one cgroup of a dispatch, which bounds the memory (without swap),
// the number of processes and optionally the CPU time of the whole sandbox.
//
// Which cgroup, in this order:
//  * cgroup v2, when the caller's own cgroup offers the memory and pids controllers and
//    its directory is the caller's to write (a delegated subtree: a systemd unit or scope
//    with Delegate=yes). The caller's cgroup must hold no other process, since v2 allows
//    controllers only for cgroups without processes of their own: `run` moves itself into
//    a leaf `ateam-sandbox-run-ID` there and the sandbox gets a sibling.
//  * cgroup v1 (legacy or hybrid hosts), for a root caller: a child of its own cgroup in
//    the memory and pids hierarchies (and cpu, with --cpus).
// Otherwise there is none, and Create says why; the always-on limits still hold.
//
// The sandbox is placed in it before it runs anything (runtime::Plan::cgroup_procs_fds);
// Remove() (and the state janitor after a SIGKILL of `run`) removes it at the end.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"

namespace sbx::dispatch {

struct CgroupLimits {
  uint64_t memory = 0;  // bytes, swap not allowed beyond it
  uint64_t pids = 0;
  std::optional<double> cpus;
};

class DispatchCgroup {
 public:
  // Creates and configures the cgroup. The error says why none can be used here. Only a
  // `root_caller` (runtime::HostFacts) may use cgroup v1.
  static base::Result<DispatchCgroup> Create(const std::string& id, const CgroupLimits& limits,
                                             bool root_caller);
  // Without creating anything: where Create would make the cgroup for this caller
  // ("v2 under PATH", "v1 under PATH, PATH"), or why it cannot (for `doctor`).
  static base::Result<std::string> Probe(bool root_caller);

  DispatchCgroup(DispatchCgroup&&) = default;
  DispatchCgroup& operator=(DispatchCgroup&&) = default;
  DispatchCgroup(const DispatchCgroup&) = delete;
  DispatchCgroup& operator=(const DispatchCgroup&) = delete;
  ~DispatchCgroup();

  // The open cgroup.procs files (close-on-exec) to write the sandbox's first pid into
  // ("0" moves the writer itself).
  [[nodiscard]] std::vector<int> ProcsFds() const;
  // The directories, innermost hierarchy first; what RemoveCgroupDirs takes.
  [[nodiscard]] const std::vector<std::string>& dirs() const { return dirs_; }
  // "v2 /sys/fs/cgroup/..." or "v1 /sys/fs/cgroup/memory/..., /sys/fs/cgroup/pids/...".
  [[nodiscard]] std::string Describe() const;
  // How many processes the kernel's OOM killer ended in it (memory.events oom_kill, or
  // v1 memory.oom_control oom_kill).
  [[nodiscard]] uint64_t OomKills() const;
  // Kills what is left and removes the directories (retrying while processes exit).
  void Remove();

 private:
  DispatchCgroup() = default;
  static base::Result<DispatchCgroup> CreateV2(const std::string& parent, const std::string& name,
                                               const CgroupLimits& limits, bool cpu);
  static base::Result<DispatchCgroup> CreateV1(const std::map<std::string, std::string>& own,
                                               const std::string& name, const CgroupLimits& limits);
  bool v2_ = false;
  std::vector<std::string> dirs_;  // v2: one; v1: memory, pids[, cpu]
  std::vector<base::UniqueFd> procs_;
};

// Kills every process left in `dirs` and removes them, retrying for up to `seconds` while
// the processes exit. For the janitor too: no allocation-heavy work, no exceptions.
void RemoveCgroupDirs(const std::vector<std::string>& dirs, int seconds);

}  // namespace sbx::dispatch
