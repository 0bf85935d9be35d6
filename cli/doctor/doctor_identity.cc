// doctor's identity lines: the id range a root caller's dispatches lease their host uid
// and gid from, and the leases in use (dispatch/identity/lease.h).
#include <unistd.h>

#include <fmt/format.h>

#include "cli/doctor/doctor_probes.h"
#include "dispatch/identity/lease.h"
#include "dispatch/identity/subordinate.h"

namespace sbx::cli::doctor {

namespace {

struct LeasesInUse {
  size_t count = 0;
  std::string shown;  // the first eight: host uid, dispatch, why it is held
};

// The leases in use; a lease's uid plus `to_host` is its host uid.
LeasesInUse InUse(const std::vector<dispatch::LeaseInfo>& leases, int64_t to_host) {
  LeasesInUse used;
  for (const auto& lease : leases) {
    if (!lease.in_use) continue;
    if (++used.count > 8) continue;
    used.shown +=
        fmt::format("{}{} ({}, {})", used.shown.empty() ? "" : "; ", int64_t{lease.uid} + to_host,
                    lease.dispatch_id, lease.running ? "running" : "its directory exists");
  }
  return used;
}

// What `run --identity subuid` would lease from, and the leases of it in use.
void SubordinateChecks(std::vector<Check>& checks) {
  auto ids = dispatch::ResolveCallerSubordinateIds();
  if (!ids) {
    checks.push_back({"identity subuid", CheckStatus::kInfo,
                      "run --identity subuid is not available: " + ids.error().Render(), ""});
    return;
  }
  checks.push_back(
      {"identity subuid", CheckStatus::kInfo,
       fmt::format("run --identity subuid leases a host uid and gid per dispatch from {}'s "
                   "subordinate ids: uids {}-{}, gids {}-{} (through {} and {})",
                   ids->user, ids->first_uid, uint64_t{ids->first_uid} + ids->count - 1,
                   ids->first_gid, uint64_t{ids->first_gid} + ids->count - 1, ids->newuidmap,
                   ids->newgidmap),
       ""});
  auto dir = dispatch::SubordinateLeaseDir();
  if (!dir) return;
  auto leases = dispatch::ListLeases(*dir, ::getuid());
  if (!leases) {
    checks.push_back({"identity subuid leases", CheckStatus::kInfo, leases.error().Render(),
                      "remove what does not belong in " + *dir});
    return;
  }
  // Recorded as ids of the namespace, where 1 is the range's first id.
  const LeasesInUse used = InUse(*leases, int64_t{ids->first_uid} - 1);
  checks.push_back({"identity subuid leases", CheckStatus::kInfo,
                    fmt::format("{} in use in {}{}{}", used.count, *dir,
                                used.shown.empty() ? "" : ": ", used.shown),
                    ""});
}

}  // namespace

std::vector<Check> IdentityChecks() {
  std::vector<Check> checks;
  if (::geteuid() != 0) {
    checks.push_back({"identity", CheckStatus::kInfo,
                      "an unprivileged caller's sandbox runs as the caller's own uid by default",
                      ""});
    SubordinateChecks(checks);
    return checks;
  }
  auto options = dispatch::HostLeaseOptions(65534, 65534);
  if (!options) {
    checks.push_back({"identity", CheckStatus::kInfo, options.error().Render(),
                      "fix the range, or give every run --run-as"});
    return checks;
  }
  const auto& range = options->range;
  checks.push_back(
      {"identity", CheckStatus::kInfo,
       fmt::format("root's dispatches lease host ids from {}: uids {}-{}, gids {}-{}", range.source,
                   range.first_uid, uint64_t{range.first_uid} + range.count - 1, range.first_gid,
                   uint64_t{range.first_gid} + range.count - 1),
       ""});
  auto leases = dispatch::ListLeases(options->dir, options->owner);
  if (!leases) {
    checks.push_back({"identity leases", CheckStatus::kInfo, leases.error().Render(),
                      "remove what does not belong in " + options->dir});
    return checks;
  }
  const LeasesInUse used = InUse(*leases, 0);
  checks.push_back({"identity leases", CheckStatus::kInfo,
                    fmt::format("{} of {} in use{}{}", used.count, range.count,
                                used.shown.empty() ? "" : ": ", used.shown),
                    ""});
  return checks;
}

}  // namespace sbx::cli::doctor
