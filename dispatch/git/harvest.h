// The harvest: the agent's work as one patch file people can review and apply, made
// without trusting the workspace. Git runs in the sandboxes of a HarvestPlan
// (dispatch/plan/harvest_plan.h, compiled with the dispatch's plan); this runs them.
//
// The patch is `git format-patch` of the commits since the base, then, when the
// workspace has uncommitted or untracked changes, one more mail message holding them as
// a binary-safe diff against HEAD: `git am FILE` applies it all.
//
// Each run is stopped after kHarvestSeconds whatever the workspace holds; in `run`, also
// by the dispatch's deadline and stop signals.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/output_file.h"
#include "dispatch/plan/harvest_plan.h"

namespace sbx::dispatch {

// What `run` adds to the harvest's own bounds.
struct HarvestBounds {
  int stop_fd = -1;    // the dispatch's signalfd (stop_signals.h); -1: none
  int stopped_by = 0;  // out: the signal (SIGALRM: the deadline) that ended it
};

// The commit HEAD names in the plan's workspace (40 or 64 hex digits); "" for an unborn
// branch.
base::Result<std::string> ReadBaseCommit(const HarvestPlan& plan, HarvestBounds* bounds = nullptr);

// The longest revision ResolveCommit takes.
inline constexpr size_t kMaxRevisionLength = 256;

// The commit id `rev` names: any revision git takes (a branch, a tag, HEAD~1, an
// abbreviated or full id), resolved by `revision_read` (CompileRevisionRead). A revision
// that starts with '-' or holds a blank, a control character or a byte outside ASCII is
// refused first; one that names no commit is a one-line error.
base::Result<std::string> ResolveCommit(const runtime::Plan& revision_read, const std::string& rev);

// Writes the patch of everything done in the plan's workspace since `base` to `out_fd`.
base::Status WriteHarvestPatch(const HarvestPlan& plan, const std::string& base, int out_fd,
                               HarvestBounds* bounds = nullptr);

// Checks --patch FILE (or harvest's -o, named by `flag`) before the sandbox starts, so a
// bad path fails early: it must not be inside the workspace or the out dir (the agent
// could have left a symlink there), and what base/output_file.h refuses is refused. No
// path: nullopt.
base::Result<std::optional<base::OutputFile>> PreparePatchFile(
    const std::string& flag, const std::optional<std::string>& path, const std::string& workspace,
    const std::string& out);

// WriteHarvestPatch into a temporary file beside `file`'s name, renamed into place when the
// whole patch is written; a failed harvest leaves no file (and an old one as it was).
base::Status WritePatchFile(base::OutputFile& file, const HarvestPlan& plan,
                            const std::string& base, HarvestBounds* bounds = nullptr);

}  // namespace sbx::dispatch
