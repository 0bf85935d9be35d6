// The `bwrap` face: `ateam-sandbox bwrap ARGS...`, and the `bwrap` executable.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace sbx::cli {

// How the sandbox is built; chosen with leading options of `ateam-sandbox bwrap` only
// (the `bwrap` name takes bwrap's options and nothing else).
struct BwrapFaceOptions {
  enum class Backend { kNative, kBwrap };
  Backend backend = Backend::kNative;
  std::string bwrap_path = "/usr/bin/bwrap";  // --bwrap-path or $ATEAM_SANDBOX_BWRAP
  bool dry_run = false;                       // print the plan and the bwrap command line
};

// Splits `ateam-sandbox bwrap [--backend native|bwrap] [--bwrap-path P] [--dry-run] ARGS`:
// returns the number of leading words consumed, or -1 after printing an error.
int ParseBwrapFaceOptions(std::span<const std::string> args, BwrapFaceOptions* options);

// Behaves exactly like bwrap 0.11.1 given `args` (argv without argv[0]); returns the exit
// status. `argv0` is what usage text names.
int RunBwrapCommand(std::string_view argv0, std::span<const std::string> args,
                    const BwrapFaceOptions& options = {});

}  // namespace sbx::cli
