// Value parsing for the bwrap command-line parser: numbers, capability names, the
// environment edits and the fd reads that bwrap performs while it walks argv. Internal to
// cli/bwrap_*; every function reproduces one bwrap 0.11.1 rule exactly, including its
// quirks (see docs/bwrap-behaviour.md, "Command-line model"), because callers compare our behaviour
// with bwrap's.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"

namespace sbx::cli::internal {

// An fd argument: decimal strtol over the whole string, stored into an int, then
// rejected if negative. Like bwrap, values beyond int range wrap (4294967299 -> 3) and
// strtol's leading blanks and sign are accepted ("+3", " 3", "-0").
std::optional<int> ParseBwrapFd(const std::string& text);

// --uid/--gid: the same rule as fds (bwrap parses both with strtol into an int).
std::optional<uint32_t> ParseBwrapId(const std::string& text);

// --perms/--chmod: strtoul base 8 over the whole string, at most 07777.
std::optional<mode_t> ParseBwrapOctal(const std::string& text);

// --size: strtoull with base auto-detection; must start with a digit, be non-zero and at
// most SIZE_MAX / 2. The error carries bwrap's message (no errno).
base::Result<uint64_t> ParseBwrapSize(const std::string& text);

// --cap-add/--cap-drop: "ALL" in any case is nullopt (every capability); anything else
// goes through libcap's cap_from_name ("CAP_KILL", "cap_kill", "5"). Error: "unknown cap".
base::Result<std::optional<int>> ParseBwrapCap(const std::string& text);

// glibc setenv(name, value, 1) / unsetenv(name) applied to a NAME=VALUE list: setenv
// replaces the first entry for `name` or appends one; unsetenv removes every entry. Both
// return false (and change nothing) for an empty name or one containing '=', where
// glibc fails with EINVAL and bwrap dies with "setenv failed" / "unsetenv failed".
bool SetEnv(std::vector<std::string>& env, const std::string& name, const std::string& value);
bool UnsetEnv(std::vector<std::string>& env, const std::string& name);

// Reads `fd` to EOF (retrying EINTR) and closes it. The fd is consumed in every case, as
// bwrap consumes --args and --add-seccomp-fd fds. Errors carry errno and `what`
// ("Can't read --args data: Bad file descriptor").
base::Result<std::string> ReadFdToEndAndClose(int fd, std::string what);

// --args data: NUL-separated elements; a final element without a trailing NUL still
// counts, a trailing NUL does not start another element ("a\0\0" is {"a", ""}).
std::vector<std::string> SplitNulSeparated(std::string_view data);

}  // namespace sbx::cli::internal
