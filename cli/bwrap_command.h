// The `bwrap` face: `ateam-sandbox bwrap ARGS...`, or the binary invoked as `bwrap`.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace sbx::cli {

// Behaves exactly like bwrap 0.11.1 given `args` (argv without argv[0]); returns the exit
// status. `argv0` is what usage text names.
int RunBwrapCommand(std::string_view argv0, std::span<const std::string> args);

}  // namespace sbx::cli
