// How a `run` re-executed by `run --identity subuid` (dispatch/identity/subordinate.h) knows
// where it is: uid 0 of a user namespace whose uid 0 is the caller and whose ids 1..COUNT
// are the caller's subordinate ids. The outer `run` says so in kSubordinateEnv
// ("CALLER_UID:COUNT"); it changes only where the root caller's path keeps its own files
// (the lease directory, the relay's state directory, the default workspace root), all of
// them the caller's, never host root's.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>

namespace sbx::dispatch {

inline constexpr const char* kSubordinateEnv = "ATEAM_SANDBOX_SUBORDINATE";

struct SubordinateNamespace {
  uid_t caller_uid = 0;  // the caller's uid on the host (uid 0 here)
  uint32_t count = 0;    // ids 1..count here are the caller's subordinate ids
};

// Set when kSubordinateEnv is well-formed, this process is uid 0, and /proc/self/uid_map
// maps uid 0 to the caller alone and 1..COUNT to one block; nullopt otherwise.
std::optional<SubordinateNamespace> InSubordinateNamespace();

}  // namespace sbx::dispatch
