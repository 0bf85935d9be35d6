#include "dispatch/identity/dispatch_identity.h"

#include <sys/stat.h>

#include <fmt/format.h>

#include "dispatch/host/prepare.h"

namespace sbx::dispatch {

std::vector<std::string> LeaseHoldPaths(const DispatchRequest& request, const std::string& id) {
  auto dirs = PlanDispatchDirs(request, id, /*root_caller=*/true);
  if (!dirs) return {};
  // A given directory holds the lease only once it is lent (hand_back.h); a given --out
  // that does not exist yet may be made as the leased ids before that, so it holds the
  // lease from the start.
  std::vector<std::string> paths;
  if (!request.workspace) paths.push_back(dirs->workspace);
  struct stat st {};
  if (!request.out || ::lstat(dirs->out.c_str(), &st) != 0) paths.push_back(dirs->out);
  return paths;
}

bool WantsLeasedIdentity(const DispatchRequest& request, const runtime::HostFacts& host,
                         const std::optional<runtime::SandboxSpec::HostIds>& resolved) {
  return host.IsRoot() && !request.run_as && resolved.has_value();
}

namespace {

// The host's lease options, or nullopt when the range is the built-in one and this user
// namespace does not map it.
base::Result<std::optional<LeaseOptions>> MappedLeaseOptions(const runtime::HostFacts& host) {
  auto options = HostLeaseOptions(host.overflow_uid, host.overflow_gid);
  if (!options) return options.error();
  // Only ids this user namespace maps can be handed to anybody.
  if (!host.MapsUid(options->range.first_uid) || !host.MapsGid(options->range.first_gid) ||
      !host.MapsUid(options->range.first_uid + options->range.count - 1) ||
      !host.MapsGid(options->range.first_gid + options->range.count - 1)) {
    if (options->range.source == kBuiltinSource) return std::optional<LeaseOptions>{};
    return base::Error::Message(fmt::format(
        "the id range for root's dispatches ({}, uids {}+{}) is not mapped in this user "
        "namespace; set {} to a mapped block, or give --run-as",
        options->range.source, options->range.first_uid, options->range.count, kIdRangeEnv));
  }
  return std::optional<LeaseOptions>(std::move(*options));
}

}  // namespace

base::Result<std::optional<std::string>> LeaseRangeShown(const runtime::HostFacts& host) {
  auto options = MappedLeaseOptions(host);
  if (!options) return options.error();
  if (!*options) return std::optional<std::string>();
  const LeaseIdRange& range = (*options)->range;
  return std::optional<std::string>(fmt::format("uids {}-{} and gids {}-{} ({})", range.first_uid,
                                                range.first_uid + range.count - 1, range.first_gid,
                                                range.first_gid + range.count - 1, range.source));
}

base::Result<std::optional<DispatchIdentity>> LeaseDispatchIdentity(
    const runtime::HostFacts& host, const std::string& dispatch_id,
    const std::vector<std::string>& hold_paths) {
  auto options = MappedLeaseOptions(host);
  if (!options) return options.error();
  if (!*options) return std::optional<DispatchIdentity>{};
  auto lease = IdLease::Acquire(**options, dispatch_id, hold_paths);
  if (!lease) return lease.error();
  DispatchIdentity identity;
  identity.host = lease->ids();
  identity.inside = {host.overflow_uid, host.overflow_gid};
  identity.lease.emplace(std::move(*lease));
  return std::optional<DispatchIdentity>{std::move(identity)};
}

}  // namespace sbx::dispatch
