// Renders the child's SetupFailure as bwrap's one-line message, from the parent's copy of
// the plan. The text is bwrap's without the "bwrap: " prefix (the caller adds it).
#pragma once

#include <string>

#include "base/error.h"
#include "runtime/child/failure.h"
#include "runtime/plan.h"

namespace sbx::runtime {

// `text` is the raw text shipped after the failure (the existing --symlink target).
std::string RenderFailure(const Plan& plan, const SetupFailure& failure, const std::string& text);

// bwrap's error for creating a namespace that failed with `err`, beyond the user-namespace
// cases of clone: ENOSPC (a nesting or max_*_namespaces limit) has its own text. Used for
// the clone and for the network namespace made by the helper (runtime/child/netns_helper.h).
base::Error NamespaceCreationError(int err);

}  // namespace sbx::runtime
