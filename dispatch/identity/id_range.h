// The block of host ids a root caller's dispatches lease their uid and gid from
// (dispatch/identity/lease.h). Where it comes from, first match wins:
//   1. ATEAM_SANDBOX_ID_RANGE=UID:GID:COUNT (or FIRST:COUNT for the same uid and gid block)
//   2. the subordinate ranges of the system user `ateam-sandbox` in /etc/subuid and
//      /etc/subgid (the .deb creates both, as container engines do for their users)
//   3. the built-in block kBuiltinFirst .. kBuiltinFirst + kBuiltinCount - 1
// The block is checked here (no id 0, no overflow, inside 32 bits), never trusted from its
// source; which single ids in it are free is the lease's business.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"

namespace sbx::dispatch {

// Far above regular users (1000-60000), systemd's dynamic users (61184-65519), the usual
// /etc/subuid blocks (100000 + 65536 per user) and systemd-nspawn's container ranges
// (524288-1879048191); below systemd's foreign range and the signed-32-bit boundary.
inline constexpr uint32_t kBuiltinFirst = 1879048192;  // 0x70000000
inline constexpr uint32_t kBuiltinCount = 65536;
inline constexpr const char* kIdUser = "ateam-sandbox";
inline constexpr const char* kBuiltinSource = "built-in block";
inline constexpr const char* kIdRangeEnv = "ATEAM_SANDBOX_ID_RANGE";

struct LeaseIdRange {
  uint32_t first_uid = 0;
  uint32_t first_gid = 0;
  uint32_t count = 0;
  std::string source;  // where it came from, for `doctor` and error messages
};

struct SubordinateRange {
  uint32_t first = 0;
  uint32_t count = 0;
};

// The ranges of `user` (by name, or by `uid` in decimal when given) in the text of an
// /etc/subuid or /etc/subgid file ("name:first:count" per line). Lines that are malformed,
// comments, or for other users are skipped; a matching line with a malformed number or a
// count of 0 is an error (a misconfigured range is refused, never half-used).
base::Result<std::vector<SubordinateRange>> ParseSubordinateRanges(std::string_view text,
                                                                   std::string_view user,
                                                                   std::optional<uid_t> uid);

// ATEAM_SANDBOX_ID_RANGE's value parsed and checked.
base::Result<LeaseIdRange> ParseIdRangeValue(std::string_view value);

// An id block made to pass the checks every source must pass: count >= 1, the first id
// above 0, the last one below 2^32 - 1 (-1 is "no id").
base::Status CheckIdRange(const LeaseIdRange& range);

// Where the files and the environment lead (the order above). `subuid`/`subgid` are the
// files' paths (parameters for tests).
base::Result<LeaseIdRange> ResolveIdRange(const char* env_value,
                                          const std::string& subuid = "/etc/subuid",
                                          const std::string& subgid = "/etc/subgid");

}  // namespace sbx::dispatch
