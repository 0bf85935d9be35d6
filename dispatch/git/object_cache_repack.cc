#include "dispatch/git/object_cache_repack.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "base/safe_path.h"
#include "dispatch/git/host_git.h"
#include "dispatch/git/object_cache_manifest.h"
#include "dispatch/git/pack_index.h"
#include "dispatch/sys/at_file.h"

namespace sbx::dispatch {
namespace {

// The names of the pack files (.pack and .idx) in `pack_fd`.
std::set<std::string> PackFiles(int pack_fd) {
  std::set<std::string> files;
  if (auto names = ListDirAt(pack_fd)) {
    for (auto& name : *names) {
      if (IsPackFileName(name)) files.insert(std::move(name));
    }
  }
  return files;
}

size_t CountPacks(int pack_fd) {
  auto files = PackFiles(pack_fd);
  return static_cast<size_t>(std::count_if(files.begin(), files.end(),
                                           [](const auto& f) { return f.ends_with(".pack"); }));
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

// The caller's own ids run the dispatch: the cache and everything in it are theirs, so git
// repacks it in place, reading no configuration but host_git.h's.
base::Result<HostGitRun> RepackInPlace(int cache_fd, int stop_fd) {
  HostGitOptions options;
  options.stop_fd = stop_fd;
  auto run = RunHostGit(
      std::nullopt, cache_fd,
      {"-c", "repack.writeBitmaps=false", "-c", "pack.writeReverseIndex=false", "-c",
       "repack.updateServerInfo=false", "repack", "-a", "-d", "-n", "-q", "--keep-unreachable"},
      options);
  if (!run) return run.error().WithContext("--object-cache: git repack");
  if (run->exit_code != 0) run->errors = "git repack: " + GitComplaintLine(run->errors);
  return run;
}

// The dispatch's user writes one pack of every object of the cache (`cache`, its path) in
// the scratch `scratch_fd`, which borrows the cache's objects (see the header). The run of
// the last step git made: a stop or a failure ends the steps, its `errors` then one line.
base::Result<HostGitRun> PackAsUser(const std::string& cache, int scratch_fd, const RunAsIds& ids,
                                    int stop_fd) {
  base::UniqueFd listing(::memfd_create("ateam-cache-objects", MFD_CLOEXEC));
  if (!listing) return base::ErrnoError("Can't make a memfd for", "the cache's objects");
  struct Step {
    const char* what;
    std::vector<std::string> args;
    int stdout_fd = -1;
    int stdin_fd = -1;
  };
  // The object list goes from cat-file to pack-objects through the memfd.
  const Step steps[] = {
      {.what = "clone",
       .args = {"clone", "--bare", "--shared", "--quiet", "--template=", "--", cache, "."}},
      {.what = "cat-file",
       .args = {"cat-file", "--batch-all-objects", "--batch-check=%(objectname)"},
       .stdout_fd = listing.get()},
      {.what = "pack-objects",
       .args = {"-c", "pack.writeReverseIndex=false", "pack-objects", "--quiet",
                "--delta-base-offset", "objects/pack/pack"},
       .stdin_fd = listing.get()}};
  HostGitOptions options;
  options.stop_fd = stop_fd;
  options.safe_directories = {cache};
  HostGitRun run;
  for (const auto& step : steps) {
    options.stdout_fd = step.stdout_fd;
    options.stdin_fd = step.stdin_fd;
    if (step.stdin_fd >= 0 && ::lseek(step.stdin_fd, 0, SEEK_SET) != 0) {
      return base::ErrnoError("Can't rewind", "the cache's object list");
    }
    auto ran = RunHostGit(ids, scratch_fd, step.args, options);
    if (!ran) return ran.error().WithContext(fmt::format("--object-cache: git {}", step.what));
    run = std::move(*ran);
    if (run.stopped_by != 0 || run.exit_code != 0) {
      run.errors = fmt::format("git {}: {}", step.what, GitComplaintLine(run.errors));
      return run;
    }
  }
  return run;
}

// The one .pack (and its .idx) the scratch's objects/pack holds, by name.
base::Result<std::string> OnlyPackOf(int scratch_pack_fd) {
  auto names = ListDirAt(scratch_pack_fd);
  if (!names) return names.error();
  std::string pack;
  for (const auto& name : *names) {
    if (!IsPackFileName(name) || !pack.empty()) {
      return base::Error::Message("--object-cache: the repack left other files than one pack");
    }
    if (name.ends_with(".pack")) pack = name.substr(0, name.size() - 5);
  }
  if (pack.empty() || names->size() != 2 ||
      std::find(names->begin(), names->end(), pack + ".idx") == names->end()) {
    return base::Error::Message("--object-cache: the repack left no pack with its index");
  }
  return pack;
}

base::Result<PackIndex> ReadCachedIndex(int pack_fd, const std::string& name) {
  auto fd = base::OpenBeneath(pack_fd, name, O_RDONLY | O_NOFOLLOW);
  if (!fd) return fd.error();
  return ReadPackIndex(fd->get(), name);
}

// Whether the cache's copy of the new pack `pack` (.pack and .idx, root's now) holds every
// object each of `old` (the cache's pack files before) names: its index lists them all,
// and the pack starts with the index's object count and ends with its checksum.
base::Status CheckNewPack(int pack_fd, const std::string& pack, const std::set<std::string>& old) {
  auto index = ReadCachedIndex(pack_fd, pack + ".idx");
  if (!index) return index.error();
  auto data = base::OpenBeneath(pack_fd, pack + ".pack", O_RDONLY | O_NOFOLLOW);
  if (!data) return data.error();
  struct stat st {};
  char head[12];
  char tail[kPackIndexNameBytes];
  if (::fstat(data->get(), &st) != 0 || !S_ISREG(st.st_mode) ||
      st.st_size < static_cast<off_t>(sizeof(head) + sizeof(tail)) ||
      ::pread(data->get(), head, sizeof(head), 0) != static_cast<ssize_t>(sizeof(head)) ||
      ::pread(data->get(), tail, sizeof(tail), st.st_size - static_cast<off_t>(sizeof(tail))) !=
          static_cast<ssize_t>(sizeof(tail))) {
    return base::ErrnoError("Can't read", pack + ".pack");
  }
  const auto count = (static_cast<uint32_t>(static_cast<uint8_t>(head[8])) << 24) |
                     (static_cast<uint32_t>(static_cast<uint8_t>(head[9])) << 16) |
                     (static_cast<uint32_t>(static_cast<uint8_t>(head[10])) << 8) |
                     static_cast<uint32_t>(static_cast<uint8_t>(head[11]));
  if (std::string_view(head, 4) != "PACK" || count != index->count ||
      std::string_view(tail, sizeof(tail)) != index->pack_checksum) {
    return base::Error::Message(pack + ".pack is not the pack its index describes");
  }
  for (const auto& name : old) {
    if (!name.ends_with(".idx") || name == pack + ".idx") continue;
    auto before = ReadCachedIndex(pack_fd, name);
    if (!before) return before.error();
    for (size_t i = 0; i < before->count; ++i) {
      std::string_view id =
          std::string_view(before->names).substr(i * kPackIndexNameBytes, kPackIndexNameBytes);
      if (!PackIndexHasName(index->names, id)) {
        return base::Error::Message(fmt::format("the new pack lacks objects of {}", name));
      }
    }
  }
  return {};
}

// Root's part: the user's pack copied into the cache, checked, and the old packs removed
// (each index before its pack: git stops looking into a pack before its data goes).
base::Status InstallRepacked(const CacheRoot& root, int pack_fd, int scratch_fd, uid_t owner) {
  auto scratch_pack = OpenDirBeneath(scratch_fd, "objects/pack");
  if (!scratch_pack) return scratch_pack.error();
  auto pack = OnlyPackOf(scratch_pack->get());
  if (!pack) return pack.error();
  const std::set<std::string> old = PackFiles(pack_fd);
  const bool had = old.contains(*pack + ".pack");
  for (const char* suffix : {".pack", ".idx"}) {
    auto copied =
        CopyPackIntoCache(scratch_pack->get(), pack_fd, *pack + suffix, owner, CacheFileMode(root));
    if (!copied) return copied.error();
  }
  if (auto checked = CheckNewPack(pack_fd, *pack, old); !checked) {
    if (!had) {
      (void)::unlinkat(pack_fd, (*pack + ".idx").c_str(), 0);
      (void)::unlinkat(pack_fd, (*pack + ".pack").c_str(), 0);
    }
    return checked.error();
  }
  for (const char* suffix : {".idx", ".pack"}) {
    for (const auto& name : old) {
      if (!name.ends_with(suffix) || name.starts_with(*pack + ".")) continue;
      if (::unlinkat(pack_fd, name.c_str(), 0) != 0 && errno != ENOENT) {
        return base::ErrnoError("Can't remove from the object cache", name);
      }
    }
  }
  return {};
}

}  // namespace

base::Result<RepackOutcome> RepackCacheIfCrowded(const CacheRoot& root, const std::string& name,
                                                 const std::string& source, int stop_fd,
                                                 const RepackRunner& runner, size_t max_packs) {
  auto cache = base::OpenBeneath(root.fd.get(), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  if (!cache) return cache.error().WithContext("--object-cache");
  auto pack_dir = OpenDirBeneath(cache->get(), "objects/pack");
  if (!pack_dir) return pack_dir.error().WithContext("--object-cache");
  RepackOutcome outcome;
  if (CountPacks(pack_dir->get()) <= max_packs) return outcome;
  int scratch_fd = -1;
  auto run = [&]() -> base::Result<HostGitRun> {
    if (!runner.ids) return RepackInPlace(cache->get(), stop_fd);
    auto made = runner.make_scratch();
    if (!made) return made.error().WithContext("--object-cache: the repack's scratch");
    scratch_fd = *made;
    return PackAsUser(root.path + "/" + name, scratch_fd, runner.ids, stop_fd);
  }();
  if (!run) return run.error();
  base::Status installed;
  if (runner.ids && run->stopped_by == 0 && run->exit_code == 0) {
    installed = InstallRepacked(root, pack_dir->get(), scratch_fd, runner.ids->uid);
  }
  if (auto st = Settle(root, cache->get(), pack_dir->get(), source); !st) {
    return st.error().WithContext("--object-cache: after the repack");
  }
  if (!installed) return installed.error().WithContext("--object-cache: the repacked cache");
  outcome.stopped_by = run->stopped_by;
  if (run->stopped_by == 0 && run->exit_code != 0) {
    return base::Error::Message("--object-cache: the repack of the cache failed: " + run->errors);
  }
  outcome.repacked = run->stopped_by == 0;
  return outcome;
}

}  // namespace sbx::dispatch
