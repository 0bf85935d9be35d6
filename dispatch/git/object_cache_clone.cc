#include "dispatch/git/object_cache_clone.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "base/safe_path.h"
#include "dispatch/git/borrowing_clone.h"
#include "dispatch/git/clone_checkout.h"
#include "dispatch/git/host_git.h"
#include "dispatch/git/object_cache.h"
#include "dispatch/git/object_cache_current.h"
#include "dispatch/git/object_cache_manifest.h"
#include "dispatch/git/object_cache_repack.h"
#include "dispatch/git/source_stamp.h"
#include "dispatch/sys/at_file.h"
#include "dispatch/sys/run_as_child.h"
#include "dispatch/sys/stop_signals.h"

namespace sbx::dispatch {
namespace {

std::string Trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text;
}

// Empties the directory `fd` as `ids` (what is in it is theirs: a root caller does not
// work inside it).
base::Status EmptyDirAs(int fd, const RunAsIds& ids) {
  auto status = RunInChildAs(ids, [&]() -> int {
    auto names = ListDirAt(fd);
    if (!names) return 1;
    for (const auto& name : *names) {
      if (!RemoveTreeAt(fd, name)) return 1;
    }
    return 0;
  });
  if (!status) return status.error();
  if (!WIFEXITED(*status) || WEXITSTATUS(*status) != 0) {
    return base::Error::Message("--object-cache: can't empty a directory of the dispatch's user");
  }
  return {};
}

// <id>/cache-fill, fresh and handed to the dispatch's user, with its remover.
struct Scratch {
  int parent_fd = -1;
  std::string name;
  base::UniqueFd fd;
  RunAsIds ids;
  Scratch() = default;
  Scratch(Scratch&&) noexcept = default;
  Scratch& operator=(Scratch&&) noexcept = default;
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  ~Scratch() {
    if (!fd) return;
    try {
      (void)EmptyDirAs(fd.get(), ids);
    } catch (...) {  // NOLINT(bugprone-empty-catch): a destructor; `gc` removes what stays
    }
    fd.reset();
    (void)::unlinkat(parent_fd, name.c_str(), AT_REMOVEDIR);
  }
};

base::Result<Scratch> MakeScratch(int dispatch_fd, const std::string& name, const RunAsIds& ids) {
  Scratch scratch;
  auto made = base::MakeFreshDir(dispatch_fd, name, 0700, name);
  if (!made) return made.error();
  scratch.parent_fd = dispatch_fd;
  scratch.name = name;
  scratch.ids = ids;
  scratch.fd = base::UniqueFd(
      ::openat(dispatch_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!scratch.fd) return base::ErrnoError("Can't open", name);
  if (ids && ::fchown(scratch.fd.get(), ids->uid, ids->gid) != 0) {
    return base::ErrnoError("Can't hand over", name);
  }
  return scratch;
}

// The directories git may open as repositories although the dispatch's user does not own
// them: the source (its top, its .git, a linked worktree's git directories) and the cache.
std::vector<std::string> SafeDirectories(const CacheKey& key, const std::string& cache) {
  std::vector<std::string> dirs = {key.source, key.source + "/.git", cache};
  if (auto git = FindSourceGitDirs(key.source)) {
    dirs.push_back(git->git_dir);
    dirs.push_back(git->common_dir);
  }
  return dirs;
}

std::string CacheDirOf(const CacheRoot& root, const CacheKey& key) {
  return root.path + "/" + key.name;
}

// The scratch's refs (heads and tags) and HEAD, read with git as the dispatch's user; a
// name or id that is not one is refused.
base::Result<CacheRefs> ReadScratchRefs(int scratch_fd, const RunAsIds& ids,
                                        const HostGitOptions& options) {
  CacheRefs refs;
  auto listed = RunHostGit(
      ids, scratch_fd,
      {"for-each-ref", "--format=%(objectname) %(refname)", "refs/heads", "refs/tags"}, options);
  if (!listed) return listed.error();
  if (listed->exit_code != 0) {
    return base::Error::Message("--object-cache: git for-each-ref failed: " +
                                GitComplaintLine(listed->errors));
  }
  size_t start = 0;
  const std::string& text = listed->output;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    start = end + 1;
    auto space = line.find(' ');
    if (space == std::string::npos) continue;
    std::string id = line.substr(0, space);
    std::string name = line.substr(space + 1);
    if (!IsObjectId(id) || !IsCacheRefName(name)) {
      return base::Error::Message("--object-cache: the source has a ref the cache does not take");
    }
    refs.refs.emplace_back(id, name);
  }
  auto symbolic = RunHostGit(ids, scratch_fd, {"symbolic-ref", "--quiet", "HEAD"}, options);
  if (!symbolic) return symbolic.error();
  std::string head = Trimmed(symbolic->output);
  if (symbolic->exit_code == 0 && IsCacheRefName(head) && head.starts_with("refs/heads/")) {
    refs.head = "ref: " + head;
    return refs;
  }
  auto detached =
      RunHostGit(ids, scratch_fd, {"rev-parse", "--verify", "--quiet", "HEAD"}, options);
  if (!detached) return detached.error();
  refs.head = Trimmed(detached->output);
  if (detached->exit_code != 0 || !IsObjectId(refs.head)) {
    return base::Error::Message("--object-cache: the source's HEAD names nothing the cache takes");
  }
  return refs;
}

// A git step that a stop signal or the deadline ended: reported as the plain clone's is,
// with the signal in `stop.stopped_by`.
base::Error Interrupted(const HostGitRun& run, const Stop& stop) {
  if (stop.stopped_by != nullptr) *stop.stopped_by = run.stopped_by;
  return base::Error::Message(
      fmt::format("interrupted by {} during the clone", StopSignalName(run.stopped_by)));
}

// Step 2 of object_cache_clone.h: the source fetched by the dispatch's user into a
// scratch repository (borrowing from `reference`, the checked cache, when there is one).
struct Fetched {
  Scratch scratch;
  CacheRefs refs;
};

base::Result<Fetched> FetchSource(const std::string& source, const CacheRoot& root,
                                  const CacheKey& key, const std::optional<std::string>& reference,
                                  int dispatch_fd, const RunAsIds& ids, const Stop& stop) {
  // Its own name each time: a second fetch (the cache made anew) may follow a first.
  auto scratch = MakeScratch(dispatch_fd, reference ? "cache-fetch" : "cache-fill", ids);
  if (!scratch) return scratch.error();
  HostGitOptions options;
  options.safe_directories = SafeDirectories(key, CacheDirOf(root, key));
  std::vector<std::string> args = {"clone", "--bare", "--no-local", "--quiet"};
  if (reference) args.insert(args.end(), {"--reference", *reference});
  args.insert(args.end(), {"--", key.source, "."});
  options.stop_fd = stop.fd;
  auto fetched = RunHostGit(ids, scratch->fd.get(), args, options);
  options.stop_fd = -1;
  if (!fetched) return fetched.error();
  // The scratch goes with what was fetched into it; the cache was not touched.
  if (fetched->stopped_by != 0) return Interrupted(*fetched, stop);
  if (fetched->exit_code != 0) {
    return base::Error::Message(fmt::format("--repo {}: git clone for the object cache failed: {}",
                                            source, GitComplaintLine(fetched->errors)));
  }
  auto refs = ReadScratchRefs(scratch->fd.get(), ids, options);
  if (!refs) return refs.error();
  return Fetched{.scratch = std::move(*scratch), .refs = std::move(*refs)};
}

// The refs and HEAD the checked cache recorded (nullopt when they can't be read as such).
std::optional<CacheRefs> RecordedRefs(const CacheRoot& root, const CacheKey& key) {
  auto cache_fd = OpenDirBeneath(root.fd.get(), key.name);
  if (!cache_fd) return std::nullopt;
  auto packed = ReadFileAt(cache_fd->get(), "packed-refs", 64 << 20);
  auto head = ReadFileAt(cache_fd->get(), "HEAD", 4096);
  return packed && head ? ParseCacheRefs(*packed, *head) : std::nullopt;
}

// Step 2's shortcut (object_cache_current.h): whether the checked cache `cache` already has
// what the source shows now. The source's refs are listed by `git ls-remote` as the
// dispatch's user (upload-pack reads the source, as for the fetch), with the cache as git's
// repository so that no other repository's configuration is read. A listing git could not
// make is "no": the fetch then says what is wrong.
base::Result<bool> CacheHasSource(const CacheRoot& root, const CacheKey& key,
                                  const std::string& cache, int ws_fd, const RunAsIds& ids,
                                  const Stop& stop) {
  auto recorded = RecordedRefs(root, key);
  if (!recorded) return false;
  base::UniqueFd listing(::memfd_create("ateam-ls-remote", MFD_CLOEXEC));
  if (!listing) return base::ErrnoError("Can't make a memfd for", "the source's refs");
  HostGitOptions options;
  options.safe_directories = SafeDirectories(key, cache);
  options.stop_fd = stop.fd;
  options.stdout_fd = listing.get();
  auto listed = RunHostGit(
      ids, ws_fd, {"--git-dir=" + cache, "ls-remote", "--symref", "--", key.source}, options);
  if (!listed) return listed.error();
  if (listed->stopped_by != 0) return Interrupted(*listed, stop);
  if (listed->exit_code != 0) return false;
  auto text = ReadAllFrom(listing.get(), 64 << 20);
  auto shown = text ? ParseRemoteListing(*text) : std::nullopt;
  return shown && SameRefs(*shown, *recorded);
}

// Step 3: what was fetched, copied into the cache. Returns the cache's path.
base::Result<std::string> Install(const CacheRoot& root, const CacheKey& key,
                                  const Fetched& fetched, const RunAsIds& ids) {
  return InstallIntoCache(root, key, fetched.scratch.fd.get(), ids ? ids->uid : ::geteuid(),
                          fetched.refs);
}

// Step 4: the workspace as a clone borrowing from the cache, as the dispatch's user: written
// from the refs the cache recorded (borrowing_clone.h), or by `git clone --shared CACHE`
// when they are not SHA-1.
base::Status CloneShared(const std::string& source, const CacheRoot& root, const CacheKey& key,
                         const std::string& cache, int ws_fd, const RunAsIds& ids,
                         const Stop& stop) {
  HostGitOptions options;
  options.safe_directories = SafeDirectories(key, cache);
  options.stop_fd = stop.fd;
  auto refs = RecordedRefs(root, key);
  if (auto files = refs ? RenderBorrowingGitDir(*refs) : std::nullopt) {
    HostGitRun run;
    auto written = WriteBorrowingClone(cache, *files, ws_fd, ids, options, &run.stopped_by);
    if (run.stopped_by != 0) return Interrupted(run, stop);
    if (!written) {
      return base::Error::Message(
          fmt::format("--repo {}: the clone from the object cache failed: {}", source,
                      written.error().Render()));
    }
    return {};
  }
  // No template: its sample hooks are removed again by the git guard (ResetClonedGitDir),
  // and every file made and removed here slows the checkout's files that come next.
  auto cloned = RunHostGit(
      ids, ws_fd, {"clone", "--shared", "--quiet", "--template=", "--", cache, "."}, options);
  if (!cloned) return cloned.error();
  if (cloned->stopped_by != 0) return Interrupted(*cloned, stop);
  if (cloned->exit_code != 0) {
    return base::Error::Message(fmt::format("--repo {}: git clone from the object cache failed: {}",
                                            source, GitComplaintLine(cloned->errors)));
  }
  return {};
}

// Moves the cache aside and removes it: it failed where it should not have.
void DropCache(const CacheRoot& root, const CacheKey& key) {
  if (auto aside = RenameAsideAt(root.fd.get(), key.name, key.name + ".stale")) {
    (void)RemoveTreeAt(root.fd.get(), *aside);
  }
}

// The cache's packs folded into one when there are many (object_cache_repack.h), while
// the lock is still exclusive, by the dispatch's user (in a scratch of its own when that is
// not the caller). A failed repack leaves the cache as it was: said, not fatal.
base::Status RepackIfCrowded(const CacheRoot& root, const CacheKey& key, int dispatch_fd,
                             const RunAsIds& ids, const Stop& stop,
                             std::vector<std::string>* notices) {
  std::optional<Scratch> scratch;
  auto make_scratch = [&]() -> base::Result<int> {
    auto made = MakeScratch(dispatch_fd, "cache-repack", ids);
    if (!made) return made.error();
    scratch = std::move(*made);
    return scratch->fd.get();
  };
  auto repacked = RepackCacheIfCrowded(root, key.name, key.source, stop.fd,
                                       {.ids = ids, .make_scratch = make_scratch});
  if (!repacked) {
    notices->push_back(repacked.error().Render());
    return {};
  }
  if (repacked->stopped_by == 0) return {};
  HostGitRun run;
  run.stopped_by = repacked->stopped_by;
  return Interrupted(run, stop);
}

}  // namespace

base::Result<BorrowedStore> CloneFromObjectCache(const std::string& source,
                                                 const std::string& cache_root, int dispatch_fd,
                                                 int ws_fd, const RunAsIds& ids,
                                                 std::vector<std::string>* notices,
                                                 const Stop& given_stop) {
  int signal = 0;
  const Stop stop = {
      .fd = given_stop.fd,
      .stopped_by = given_stop.stopped_by != nullptr ? given_stop.stopped_by : &signal};
  // A stop is no failure of the cache: nothing is made anew after one.
  auto stopped = [&] { return *stop.stopped_by != 0; };
  auto key = CacheKeyOf(source);
  if (!key) return key.error();
  auto root = OpenCacheRoot(cache_root, ids.has_value());
  if (!root) return root.error();
  auto lock = LockCache(*root, key->name);
  if (!lock) return lock.error();
  std::string why;
  auto checked = CheckedCache(*root, key->name, &why);
  if (!checked) return checked.error();
  if (!why.empty()) {
    notices->push_back(fmt::format(
        "--object-cache: the cache of {} failed its check ({}): made anew", key->source, why));
  }
  bool had_cache = checked->has_value();
  // Taken before git lists or fetches the source's refs (source_stamp.h): the stamp the
  // cache then records is never newer than what it holds.
  const std::optional<std::string> stamp = ReadSourceStamp(key->source, ids);
  const bool stamp_recorded = had_cache && stamp && ReadCacheStamp(*root, key->name) == *stamp;
  // Nothing new in the source: no fetch, nothing copied in, the cache as it is. Known from
  // the stamp when the source has not changed since the cache last matched it; from its
  // refs as git lists them otherwise.
  bool current = stamp_recorded;
  if (had_cache && !current) {
    auto same = CacheHasSource(*root, *key, **checked, ws_fd, ids, stop);
    if (!same) return same.error();
    current = *same;
  }
  // Made anew from the source alone when the cache failed in use (a fetch that borrows
  // from it, or the clone from it): only a failure that remains is reported.
  auto anew = [&]() -> base::Result<std::string> {
    auto alone = FetchSource(source, *root, *key, std::nullopt, dispatch_fd, ids, stop);
    if (!alone) return alone.error();
    DropCache(*root, *key);
    notices->push_back(
        fmt::format("--object-cache: the cache of {} failed in use: made anew", key->source));
    had_cache = false;
    return Install(*root, *key, *alone, ids);
  };
  auto fill = [&]() -> base::Result<std::string> {
    auto fetched = FetchSource(source, *root, *key, *checked, dispatch_fd, ids, stop);
    if (fetched) return Install(*root, *key, *fetched, ids);
    return had_cache && !stopped() ? anew() : base::Result<std::string>(fetched.error());
  };
  auto cache = current ? base::Result<std::string>(**checked) : fill();
  if (!cache) return cache.error();
  if (auto st = RepackIfCrowded(*root, *key, dispatch_fd, ids, stop, notices); !st) {
    return st.error();
  }
  // Still exclusive: the stamp is what the cache's refs now match; refs fetched with no
  // stamp leave none (an empty one matches nothing). Not recorded is no failure: the next
  // dispatch lists the refs again.
  if (!stamp_recorded && (stamp || !current)) {
    (void)WriteCacheStamp(*root, key->name, stamp.value_or(""));
  }
  // Shared from now on: dispatches of one source check out side by side.
  if (auto st = ShareCacheLock(lock->get()); !st) return st.error();
  auto cloned = CloneShared(source, *root, *key, *cache, ws_fd, ids, stop);
  // A cache that passed its checks and still failed the clone is made anew when no other
  // dispatch borrows from it now; otherwise only moved aside, for the next one to make.
  if (!cloned && had_cache && !stopped()) {
    if (::flock(lock->get(), LOCK_EX | LOCK_NB) != 0) {
      DropCache(*root, *key);
      return cloned.error();
    }
    if (auto st = EmptyDirAs(ws_fd, ids); !st) return st.error();
    cache = anew();
    if (!cache) return cache.error();
    if (auto st = ShareCacheLock(lock->get()); !st) return st.error();
    cloned = CloneShared(source, *root, *key, *cache, ws_fd, ids, stop);
  }
  if (!cloned) return cloned.error();
  return BorrowedStore{.cache = *cache, .lock = std::move(*lock)};
}

}  // namespace sbx::dispatch
