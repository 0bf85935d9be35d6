// BwrapWalker: the state machine behind ParseBwrapArgs. It walks one argument list left to
// right, applying each option to a SandboxSpec immediately (flags, ids, fds, environment)
// or queueing it as a SpecOp, exactly in bwrap's order, and records the stderr lines bwrap
// would print. `--args FD` data is walked recursively by the same walker, so modifiers
// (--perms, --size, --overlay-src) and --level-prefix carry across the boundary as in
// bwrap. Internal to cli/bwrap_*.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/spec.h"

namespace sbx::cli::internal {

// Option table flags.
inline constexpr uint32_t kReadOnly = 1U << 0;         // --ro-* variants
inline constexpr uint32_t kAllowDevices = 1U << 1;     // --dev-bind*
inline constexpr uint32_t kSkipMissing = 1U << 2;      // *-try variants
inline constexpr uint32_t kSetuidForbidden = 1U << 3;  // refused before the argument check
inline constexpr uint32_t kNotInArgsFile = 1U << 4;    // --args: refused inside --args data
inline constexpr uint32_t kSaysOneArgument = 1U << 5;  // "takes one argument" wording
inline constexpr uint32_t kNoArityCheck = 1U << 6;     // --overlay-src: bwrap never checks

// How a walk ended.
enum class Stop {
  kNone,     // keep going (handlers only)
  kEnd,      // arguments ran out, or a COMMAND was found
  kHelp,     // --help
  kVersion,  // --version
  kFatal,    // an error line was recorded
};

class BwrapWalker {
 public:
  BwrapWalker(std::vector<std::string> environment, bool setuid_mode);

  // Walks the top-level argv (without argv[0]); on kEnd, spec().command holds the words
  // after the options (possibly none).
  Stop WalkTopLevel(std::span<const std::string> args);

  // Records an error line with the current level prefix; returns kFatal.
  Stop Fail(std::string_view text);

  runtime::SandboxSpec& spec() { return spec_; }
  [[nodiscard]] bool level_prefix() const { return level_prefix_; }
  std::vector<std::string>& diagnostics() { return diagnostics_; }

 private:
  struct Option;
  using Handler = Stop (BwrapWalker::*)(const Option&, std::span<const std::string>);
  // One row of the option table (bwrap_options.cc).
  struct Option {
    std::string_view name;
    size_t arity = 0;  // words the option consumes
    Handler handler = nullptr;
    uint32_t flags = 0;                                      // kReadOnly, kSetuidForbidden, ...
    bool runtime::SandboxSpec::*flag = nullptr;              // for boolean options
    std::optional<int> runtime::SandboxSpec::*fd = nullptr;  // for single-fd options
  };
  struct WalkEnd {
    Stop stop;
    size_t command_index;  // valid when stop == kEnd
  };

  static const Option kOptions[];  // bwrap_options.cc
  static const Option* FindOption(std::string_view name);
  static std::string MissingArgumentsMessage(const Option& option);

  WalkEnd Walk(std::span<const std::string> args);
  Stop RunOption(const Option& option, std::span<const std::string> rest);
  Stop CheckModifiersConsumed(std::string_view arg);
  Stop FailTooManyArguments();
  void WarnOnlyLast(std::string_view option_name);

  // Option handlers (bwrap_options.cc); `words` holds exactly the option's arguments,
  // except for --overlay-src at the end of argv, where it is empty.
  Stop OnArgs(const Option& option, std::span<const std::string> words);
  Stop OnArgv0(const Option& option, std::span<const std::string> words);
  Stop OnLevelPrefix(const Option& option, std::span<const std::string> words);
  Stop OnUnshareAll(const Option& option, std::span<const std::string> words);
  Stop OnSetFlag(const Option& option, std::span<const std::string> words);
  Stop OnShareNet(const Option& option, std::span<const std::string> words);
  Stop OnChdir(const Option& option, std::span<const std::string> words);
  Stop OnBind(const Option& option, std::span<const std::string> words);
  Stop OnBindFd(const Option& option, std::span<const std::string> words);
  Stop OnOverlaySrc(const Option& option, std::span<const std::string> words);
  Stop OnOverlay(const Option& option, std::span<const std::string> words);
  Stop OnDestOp(const Option& option, std::span<const std::string> words);
  Stop OnLabel(const Option& option, std::span<const std::string> words);
  Stop OnTmpfs(const Option& option, std::span<const std::string> words);
  Stop OnDir(const Option& option, std::span<const std::string> words);
  Stop OnFileFromFd(const Option& option, std::span<const std::string> words);
  Stop OnSymlink(const Option& option, std::span<const std::string> words);
  Stop OnLockFile(const Option& option, std::span<const std::string> words);
  Stop OnFdOption(const Option& option, std::span<const std::string> words);
  Stop OnSeccomp(const Option& option, std::span<const std::string> words);
  Stop OnAddSeccompFd(const Option& option, std::span<const std::string> words);
  Stop OnClearenv(const Option& option, std::span<const std::string> words);
  Stop OnSetenv(const Option& option, std::span<const std::string> words);
  Stop OnUnsetenv(const Option& option, std::span<const std::string> words);
  Stop OnId(const Option& option, std::span<const std::string> words);
  Stop OnHostname(const Option& option, std::span<const std::string> words);
  Stop OnCap(const Option& option, std::span<const std::string> words);
  Stop OnPerms(const Option& option, std::span<const std::string> words);
  Stop OnSize(const Option& option, std::span<const std::string> words);
  Stop OnChmod(const Option& option, std::span<const std::string> words);

  runtime::SandboxSpec spec_;
  bool setuid_mode_;
  bool level_prefix_ = false;
  bool in_args_file_ = false;
  bool hostname_seen_ = false;  // bwrap warns on every --hostname after the first
  size_t total_args_ = 0;       // counted against kBwrapMaxArgs
  // Modifiers waiting for the option that consumes them.
  std::optional<mode_t> pending_perms_;
  std::optional<uint64_t> pending_size_;
  std::vector<std::string> pending_overlay_sources_;
  std::vector<std::string> diagnostics_;
};

}  // namespace sbx::cli::internal
