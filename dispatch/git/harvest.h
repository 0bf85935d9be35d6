// The harvest: the agent's work as one patch file people can review and apply, made
// without trusting the workspace. Git reads hostile objects, an index and attributes the
// agent wrote, so it runs inside a small sandbox of ours (no network, the workspace
// read-only, the host system read-only, a throwaway /tmp, no capabilities, the default
// seccomp policy, as the sandbox's own ids) and with a hardened environment: no system
// or global config, no hooks, no fsmonitor, no pager, no external diff or textconv.
//
// The patch is `git format-patch` of the commits since the base, then, when the
// workspace has uncommitted or untracked changes, one more mail message holding them as
// a binary-safe diff against HEAD: `git am FILE` applies it all.
//
// Its bounds, whatever the workspace holds: at most kHarvestSeconds, kHarvestMemory of
// address space, a patch (and any file in its /tmp) of at most kHarvestPatchBytes, a /tmp
// of kHarvestTmpBytes; in `run`, inside the dispatch's cgroup and stopped by its deadline
// and stop signals too. It refuses a git directory holding anything but regular files and
// directories (a FIFO at .git/index would block git), and no filter driver of the
// workspace's config runs (filter.<name>.clean/smudge/process are emptied).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/output_file.h"
#include "base/unique_fd.h"
#include "runtime/spec.h"

namespace sbx::dispatch {

using RunAsIds = std::optional<runtime::SandboxSpec::HostIds>;

inline constexpr int kHarvestSeconds = 600;
inline constexpr uint64_t kHarvestMemory = 2ULL << 30;
inline constexpr uint64_t kHarvestPatchBytes = 1ULL << 30;
inline constexpr uint64_t kHarvestTmpBytes = 2ULL << 30;

// What `run` adds to the harvest's own bounds.
struct HarvestBounds {
  int stop_fd = -1;                        // the dispatch's signalfd (stop_signals.h); -1: none
  std::vector<int> cgroup_procs_fds = {};  // the dispatch's cgroup, when it has one
  int stopped_by = 0;                      // out: the signal (SIGALRM: the deadline) that ended it
};

// The commit HEAD names in `workspace` (40 or 64 hex digits); "" for an unborn branch.
base::Result<std::string> ReadBaseCommit(const std::string& workspace, const RunAsIds& run_as,
                                         HarvestBounds* bounds = nullptr);

// The longest revision ResolveCommit takes.
inline constexpr size_t kMaxRevisionLength = 256;

// The commit id `rev` names in `workspace`: any revision git takes (a branch, a tag,
// HEAD~1, an abbreviated or full id), resolved by git in the harvest sandbox with the
// harvest's settings (no hooks, no system or global config). A revision that starts with
// '-' or holds a blank, a control character or a byte outside ASCII is refused first; one
// that names no commit is a one-line error.
base::Result<std::string> ResolveCommit(const std::string& workspace, const std::string& rev,
                                        const RunAsIds& run_as);

// Writes the patch of everything done in `workspace` since `base` to `out_fd`.
base::Status WriteHarvestPatch(const std::string& workspace, const std::string& base, int out_fd,
                               const RunAsIds& run_as, HarvestBounds* bounds = nullptr);

// Checks --patch FILE (or harvest's -o, named by `flag`) before the sandbox starts, so a
// bad path fails early: it must not be inside the workspace or the out dir (the agent
// could have left a symlink there), and what base/output_file.h refuses is refused. No
// path: nullopt.
base::Result<std::optional<base::OutputFile>> PreparePatchFile(
    const std::string& flag, const std::optional<std::string>& path, const std::string& workspace,
    const std::string& out);

// WriteHarvestPatch into a temporary file beside `file`'s name, renamed into place when the
// whole patch is written; a failed harvest leaves no file (and an old one as it was).
base::Status WritePatchFile(base::OutputFile& file, const std::string& workspace,
                            const std::string& base, const RunAsIds& run_as,
                            HarvestBounds* bounds = nullptr);

}  // namespace sbx::dispatch
