#include "dispatch/git/object_cache_repack.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include "base/safe_path.h"
#include "dispatch/git/host_git.h"
#include "dispatch/git/object_cache_manifest.h"
#include "dispatch/sys/at_file.h"

namespace sbx::dispatch {
namespace {

size_t CountPacks(int pack_fd) {
  auto names = ListDirAt(pack_fd);
  if (!names) return 0;
  size_t packs = 0;
  for (const auto& name : *names) {
    if (IsPackFileName(name) && name.ends_with(".pack")) ++packs;
  }
  return packs;
}

// After git: what it left in objects/pack that is no pack file (its temporary files, from
// a run that was stopped) removed, every pack file given the cache's mode (git makes them
// 0444 less the umask), and the manifest written for what is there now.
base::Status Settle(const CacheRoot& root, int cache_fd, int pack_fd, const std::string& source) {
  auto names = ListDirAt(pack_fd);
  if (!names) return names.error();
  for (const auto& name : *names) {
    auto st = StatAt(pack_fd, name);
    if (!st) continue;
    if (!IsPackFileName(name) || !S_ISREG(st->st_mode)) {
      if (auto removed = RemoveTreeAt(pack_fd, name); !removed) return removed.error();
      continue;
    }
    if (::fchmodat(pack_fd, name.c_str(), CacheFileMode(root), AT_SYMLINK_NOFOLLOW) != 0 &&
        errno != ENOTSUP) {
      return base::ErrnoError("Can't chmod in the object cache", name);
    }
  }
  return WriteCacheManifest(root, cache_fd, source);
}

}  // namespace

base::Result<RepackOutcome> RepackCacheIfCrowded(const CacheRoot& root, const std::string& name,
                                                 const std::string& source, int stop_fd,
                                                 size_t max_packs) {
  auto cache = base::OpenBeneath(root.fd.get(), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  if (!cache) return cache.error().WithContext("--object-cache");
  auto pack_dir = OpenDirBeneath(cache->get(), "objects/pack");
  if (!pack_dir) return pack_dir.error().WithContext("--object-cache");
  RepackOutcome outcome;
  if (CountPacks(pack_dir->get()) <= max_packs) return outcome;
  // The caller's own ids: the cache and everything in it are the caller's (a root caller's
  // cache is root's), and git reads no configuration but host_git.h's.
  HostGitOptions options;
  options.stop_fd = stop_fd;
  auto run = RunHostGit(
      std::nullopt, cache->get(),
      {"-c", "repack.writeBitmaps=false", "-c", "pack.writeReverseIndex=false", "-c",
       "repack.updateServerInfo=false", "repack", "-a", "-d", "-n", "-q", "--keep-unreachable"},
      options);
  if (!run) return run.error().WithContext("--object-cache: git repack");
  if (auto st = Settle(root, cache->get(), pack_dir->get(), source); !st) {
    return st.error().WithContext("--object-cache: after git repack");
  }
  outcome.stopped_by = run->stopped_by;
  if (run->stopped_by == 0 && run->exit_code != 0) {
    return base::Error::Message("--object-cache: git repack of the cache failed: " +
                                GitComplaintLine(run->errors));
  }
  outcome.repacked = run->stopped_by == 0;
  return outcome;
}

}  // namespace sbx::dispatch
