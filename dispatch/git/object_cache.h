// The object cache of `run --repo --object-cache`: one bare repository per source
// repository, kept by the caller, whose objects a workspace borrows read-only
// (objects/info/alternates) instead of copying them. A dispatch then writes only the
// checkout's files; what the agent makes goes to the workspace's own object store.
//
// Where: a directory of the caller's beside its default dispatch root (root:
// /var/tmp/ateam-sandbox/caches, 0711; a normal user: $XDG_CACHE_HOME, $HOME/.cache or
// $XDG_RUNTIME_DIR, then /ateam-sandbox/caches, 0700), verified from /
// like every root of the runtime (base/safe_path.h). One cache per source, named by the
// source's device and inode (never by its path: a name can be moved or replaced), beside a
// lock file of the same name (NAME.lock) whose modification time says when a dispatch
// last used it.
//
// Trust: the cache and every file in it are the caller's, made by this process in that
// directory. Git never runs with the caller's ids on the source: the dispatch's user fetches
// into a scratch repository of its own (object_cache_clone.h), and the caller copies only
// its pack files, refs and HEAD in, each one checked (a regular file of that user's, no
// link); a root caller's cache is repacked the same way (object_cache_repack.h), so root
// never runs git over its packs. Before each use the cache is checked again
// (object_cache_check.cc): only the files a cache has, each the caller's, not writable by
// others, no symlink, and the packs the manifest recorded when they were copied in. A cache
// that fails is moved aside and made anew, never trusted. A root caller's cache is readable
// by the dispatch's user (0755 directories, 0444 files: no group, no write); a normal
// user's is its own (0700, 0400).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"

namespace sbx::dispatch {

// The default directory of the caller's caches (see above); an error when a normal user
// has none of those variables.
base::Result<std::string> DefaultObjectCacheRoot(bool root_caller);

// The cache's name for the local repository `source`: "<device>-<inode>" of its top
// directory (hex device). An error, one line, when it is no directory holding a git
// repository.
struct CacheKey {
  std::string name;
  std::string source;  // the source's real path (what the manifest shows to `ls`)
};
base::Result<CacheKey> CacheKeyOf(const std::string& source);

// One pack file as the manifest records it.
struct CachedFile {
  std::string name;  // below objects/pack
  off_t size = 0;
  struct timespec mtime {};
};

// What a cache holds besides its packs: its refs and its HEAD, as the scratch repository
// had them after the fetch.
struct CacheRefs {
  std::vector<std::pair<std::string, std::string>> refs;  // (object id, refname)
  std::string head;                                       // "ref: refs/heads/X" or an id
};

// The caller's cache directory, opened and verified (O_PATH fd and real path).
struct CacheRoot {
  base::UniqueFd fd;
  std::string path;
  bool shared = false;  // root's: readable by the dispatch's user
};
base::Result<CacheRoot> OpenCacheRoot(const std::string& path, bool root_caller);

// The lock file NAME.lock of one cache, held (flock) for as long as this lives: exclusive
// while the cache is checked and filled, then shared for the dispatch's whole life, so `gc`
// never removes a cache a running dispatch borrows from.
base::Result<base::UniqueFd> LockCache(const CacheRoot& root, const std::string& name);
// Exclusive to shared (the fill is done); marks the cache used now.
base::Status ShareCacheLock(int lock_fd);

// Whether the cache NAME passes its checks (see above). A missing cache is nullopt with no
// error; a cache that fails is moved aside (NAME.stale-N) and removed, and is nullopt too.
// `why`, when given, gets the reason a present cache was refused.
base::Result<std::optional<std::string>> CheckedCache(const CacheRoot& root,
                                                      const std::string& name,
                                                      std::string* why = nullptr);

// Copies what the scratch repository `scratch_fd` fetched into the cache NAME (made when
// missing): its new pack files (each a regular file owned by `scratch_uid` with one link),
// then `refs` as packed-refs and HEAD, then the manifest. Readers see either the old refs
// or the new ones. Returns the cache's path.
base::Result<std::string> InstallIntoCache(const CacheRoot& root, const CacheKey& key,
                                           int scratch_fd, uid_t scratch_uid,
                                           const CacheRefs& refs);

// The mode of every file of a cache of `root` (0444 shared, 0400 private).
mode_t CacheFileMode(const CacheRoot& root);
// Copies the scratch's pack file `name` from `src_fd` into the cache's objects/pack `dst_fd`
// (same name, `mode`) unless it is there: the source must be a regular file of `owner` with
// one link, opened without following links. What the cache then holds under that name.
base::Result<CachedFile> CopyPackIntoCache(int src_fd, int dst_fd, const std::string& name,
                                           uid_t owner, mode_t mode);
// (Re)writes the manifest of the cache open at `cache_fd` from the pack files it holds now.
base::Status WriteCacheManifest(const CacheRoot& root, int cache_fd, const std::string& source);

// The source stamp (source_stamp.h) recorded in the checked cache NAME, "" when none. Under
// the cache's exclusive lock.
std::string ReadCacheStamp(const CacheRoot& root, const std::string& name);
// Records `stamp` in the cache NAME: the old one removed first, so that a write cut short
// leaves a stamp that matches nothing (a listing by git then), never a wrong one.
base::Status WriteCacheStamp(const CacheRoot& root, const std::string& name,
                             const std::string& stamp);

// The reason the cache open at `fd` fails its checks (object_cache_check.cc) when its files
// are to be `owner`'s, nullopt when it passes; changes nothing.
std::optional<std::string> CacheProblemAt(int fd, bool shared, uid_t owner);

// The caller's caches, for `ls` and `gc`.
struct CacheInfo {
  std::string name;
  std::string source;       // as the manifest recorded it
  uint64_t bytes = 0;       // of its files
  struct timespec used {};  // the lock file's mtime: the last dispatch that used it
  bool in_use = false;      // a dispatch holds its lock
};
base::Result<std::vector<CacheInfo>> ListCaches(const CacheRoot& root);

// Removes the cache NAME (and its lock file) unless a dispatch holds its lock; false then.
base::Result<bool> RemoveCacheIfUnused(const CacheRoot& root, const std::string& name);

}  // namespace sbx::dispatch
