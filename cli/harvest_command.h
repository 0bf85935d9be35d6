// `ateam-sandbox harvest WORKSPACE [--base REV] -o FILE`: the patch of a finished
// workspace (dispatch/git/harvest.h), as `run --patch` writes it.
#pragma once

#include <span>
#include <string>

namespace sbx::cli {

int RunHarvestCommand(std::span<const std::string> args);

}  // namespace sbx::cli
