// The harvest's sandboxes as data: the two runs of git that read the agent's workspace (its
// base commit before the agent starts, the patch after it ended), compiled from the same
// host facts as the dispatch's own sandbox. Pure: it reads nothing and creates nothing, so
// `run` compiles it into its DispatchPlan, `ateam-sandbox harvest` from facts it resolved
// once, and the golden tests from injected facts.
//
// Git reads hostile objects, an index and attributes the agent wrote, so it runs inside a
// small sandbox of ours (no network, the workspace read-only, the host system read-only,
// a throwaway /tmp, no capabilities, the default seccomp policy, as the sandbox's own ids)
// and with a hardened environment: no system or global config, no hooks, no fsmonitor, no
// pager, no external diff or textconv, no filter driver of the workspace's config
// (filter.<name>.clean/smudge/process are emptied), and a git directory holding anything
// but regular files and directories refused (a FIFO at .git/index would block git).
//
// Its bounds, whatever the workspace holds: kHarvestMemory of address space, a patch (and
// any file in its /tmp) of at most kHarvestPatchBytes, a /tmp of kHarvestTmpBytes; the
// patch runs in the dispatch's cgroup when there is one. Its time, kHarvestSeconds, is
// kept by the caller that waits for it (dispatch/git/harvest.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "runtime/host_facts.h"
#include "runtime/plan.h"
#include "runtime/spec.h"

namespace sbx::dispatch {

using RunAsIds = std::optional<runtime::SandboxSpec::HostIds>;

inline constexpr int kHarvestSeconds = 600;
inline constexpr uint64_t kHarvestMemory = 2ULL << 30;
inline constexpr uint64_t kHarvestPatchBytes = 1ULL << 30;
inline constexpr uint64_t kHarvestTmpBytes = 2ULL << 30;

// The script's exit status for a git directory it refuses (not only regular files and
// directories, or no directory at all): the prelude's `exit 86`.
inline constexpr int kHarvestNotRegularExit = 86;

// What the harvest's sandboxes are compiled from beside the host's facts.
struct HarvestFacts {
  std::string workspace;  // absolute
  RunAsIds run_as;        // the host ids git runs as (nullopt: the caller's own)
  // The patch's cgroup (the dispatch's, when it has one); the base read runs before the
  // agent, outside it.
  std::vector<int> patch_cgroup_procs_fds = {};
  // Object stores the workspace borrows from (its object cache, --object-cache): bound
  // read-only at the same path, so git finds what objects/info/alternates names.
  std::vector<std::string> borrowed_stores = {};
};

struct HarvestPlan {
  // Prints the commit HEAD names (40 or 64 hex digits; nothing for an unborn branch).
  runtime::Plan base_read;
  // Reads the base commit (one line, empty for none) on its stdin, the one input not known
  // when the plan is compiled, and prints the patch of everything done since: `git
  // format-patch` of the commits, then, when the workspace has uncommitted or untracked
  // changes, one more mail message holding them as a binary-safe diff against HEAD.
  runtime::Plan patch;
};

base::Result<HarvestPlan> CompileHarvestPlan(const HarvestFacts& facts,
                                             const runtime::HostFacts& host);

// The revision read's exit status for a revision that names no commit.
inline constexpr int kHarvestNoSuchCommitExit = 87;

// For `harvest --base REV`: the run, in the same sandbox and with the same settings, that
// reads a revision on its stdin and prints the commit it names (exit
// kHarvestNoSuchCommitExit when it names none).
base::Result<runtime::Plan> CompileRevisionRead(const HarvestFacts& facts,
                                                const runtime::HostFacts& host);

}  // namespace sbx::dispatch
