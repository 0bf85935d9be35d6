// Warnings about places the agent is given to write but cannot: a --rw path, or a given
// --workspace whose top-level entries, that the sandbox's uid cannot write. The check is
// made by that uid itself (dispatch/sys/run_as_child.h, access(2) with the effective ids), so
// ACLs, read-only mounts and group rights count as they will inside. Nothing is changed:
// `run` never gives a user's files to another owner; it says so, one line each, and the
// dispatch goes on (reading those places still works).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "dispatch/git/workspace.h"
#include "dispatch/host/prepare.h"
#include "dispatch/request/request.h"

namespace sbx::dispatch {

// The warnings, each one line without the "ateam-sandbox run: " prefix; empty when every
// place is writable. `dirs.given_workspace` must still be open (its top lent to `run_as`).
std::vector<std::string> UnwritablePlaces(const DispatchRequest& request, const DispatchDirs& dirs,
                                          const RunAsIds& run_as);

// UnwritablePlaces, printed on stderr.
void WarnUnwritablePlaces(const DispatchRequest& request, const DispatchDirs& dirs,
                          const RunAsIds& run_as);

}  // namespace sbx::dispatch
