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
#pragma once

#include <optional>
#include <string>

#include "base/error.h"
#include "base/unique_fd.h"
#include "runtime/spec.h"

namespace sbx::dispatch {

using RunAsIds = std::optional<runtime::SandboxSpec::HostIds>;

// The commit HEAD names in `workspace` (40 or 64 hex digits); "" for an unborn branch.
base::Result<std::string> ReadBaseCommit(const std::string& workspace, const RunAsIds& run_as);

// Writes the patch of everything done in `workspace` since `base` to `out_fd`.
base::Status WriteHarvestPatch(const std::string& workspace, const std::string& base, int out_fd,
                               const RunAsIds& run_as);

// Opens --patch FILE for writing before the sandbox starts, so a bad path fails early: it
// must not be inside the workspace or the out dir (the agent could have left a symlink
// there), and its last component is never followed. No path: an empty fd.
base::Result<base::UniqueFd> OpenPatchFile(const std::optional<std::string>& path,
                                           const std::string& workspace, const std::string& out);

}  // namespace sbx::dispatch
