// Renders the child's SetupFailure as bwrap's one-line message, from the parent's copy of
// the plan. The text is bwrap's without the "bwrap: " prefix (the caller adds it).
#pragma once

#include <string>

#include "runtime/child/failure.h"
#include "runtime/plan.h"

namespace sbx::runtime {

// `text` is the raw text shipped after the failure (the existing --symlink target).
std::string RenderFailure(const Plan& plan, const SetupFailure& failure, const std::string& text);

}  // namespace sbx::runtime
