#include "dispatch/git/object_cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <functional>

#include <fmt/format.h>

#include "base/safe_path.h"
#include "dispatch/git/clone_checkout.h"
#include "dispatch/git/object_cache_manifest.h"
#include "dispatch/git/workspace.h"
#include "dispatch/sys/at_file.h"

namespace sbx::dispatch {
namespace {

mode_t DirMode(const CacheRoot& root) { return root.shared ? 0755 : 0700; }
mode_t FileMode(const CacheRoot& root) { return root.shared ? 0444 : 0400; }

// A new file of the caller's in `dirfd`: created under a temporary name, filled by
// `fill`, given `mode` (not the umask's), then renamed over `name`. Its stat.
base::Result<struct stat> PutFileWith(int dirfd, const std::string& name, mode_t mode,
                                      const std::function<base::Status(int)>& fill) {
  std::string tmp = ".tmp-" + name;
  (void)::unlinkat(dirfd, tmp.c_str(), 0);
  base::UniqueFd fd(
      ::openat(dirfd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) return base::ErrnoError("Can't create in the object cache", name);
  if (auto st = fill(fd.get()); !st) return st.error();
  struct stat made {};
  if (::fchmod(fd.get(), mode) != 0 || ::fstat(fd.get(), &made) != 0) {
    return base::ErrnoError("Can't chmod", name);
  }
  if (::renameat(dirfd, tmp.c_str(), dirfd, name.c_str()) != 0) {
    return base::ErrnoError("Can't rename in the object cache", name);
  }
  return made;
}

base::Status PutFile(int dirfd, const std::string& name, const std::string& content, mode_t mode) {
  auto made = PutFileWith(dirfd, name, mode, [&](int fd) -> base::Status {
    if (int err = WriteAllTo(fd, content); err != 0) {
      return base::Error(err, "Can't write in the object cache", name);
    }
    return {};
  });
  if (!made) return made.error();
  return {};
}

std::string RenderPackedRefs(const CacheRefs& refs) {
  std::string text = "# pack-refs with: sorted \n";
  auto sorted = refs.refs;
  std::sort(sorted.begin(), sorted.end(),
            [](const auto& a, const auto& b) { return a.second < b.second; });
  for (const auto& [id, name] : sorted) text += fmt::format("{} {}\n", id, name);
  return text;
}

// The skeleton of a bare repository in the fresh directory `fd`: what git needs to open it.
base::Status MakeSkeleton(const CacheRoot& root, int fd) {
  for (const char* dir :
       {"refs", "refs/heads", "refs/tags", "objects", "objects/info", "objects/pack"}) {
    if (::mkdirat(fd, dir, DirMode(root)) != 0 || ::fchmodat(fd, dir, DirMode(root), 0) != 0) {
      return base::ErrnoError("Can't make in the object cache", dir);
    }
  }
  return PutFile(fd, "config",
                 "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = true\n",
                 FileMode(root));
}

}  // namespace

mode_t CacheFileMode(const CacheRoot& root) { return FileMode(root); }

base::Result<CachedFile> CopyPackIntoCache(int src_fd, int dst_fd, const std::string& name,
                                           uid_t owner, mode_t mode) {
  struct stat have {};
  if (::fstatat(dst_fd, name.c_str(), &have, AT_SYMLINK_NOFOLLOW) == 0) {
    return CachedFile{.name = name, .size = have.st_size, .mtime = have.st_mtim};
  }
  // O_NONBLOCK: a FIFO put there by the scratch's owner opens at once (and is refused below)
  // instead of holding the caller in open().
  auto src = base::OpenBeneath(src_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  if (!src) return src.error();
  struct stat st {};
  if (::fstat(src->get(), &st) != 0) return base::ErrnoError("Can't stat the fetched", name);
  if (!S_ISREG(st.st_mode) || st.st_uid != owner || st.st_nlink != 1) {
    return base::Error::Message(
        fmt::format("the fetched {} is not a plain file of uid {}: not taken", name, owner));
  }
  auto made = PutFileWith(dst_fd, name, mode, [&](int fd) -> base::Status {
    off_t offset = 0;
    while (offset < st.st_size) {
      ssize_t n = ::sendfile(fd, src->get(), &offset, static_cast<size_t>(st.st_size - offset));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return base::ErrnoError("Can't copy into the object cache", name);
      if (n == 0) return base::Error::Message(fmt::format("{} shrank while it was copied", name));
    }
    return {};
  });
  if (!made) return made.error();
  return CachedFile{.name = name, .size = made->st_size, .mtime = made->st_mtim};
}

base::Status WriteCacheManifest(const CacheRoot& root, int cache_fd, const std::string& source) {
  // The manifest names every pack the cache now has, the old ones included.
  auto pack_dir = OpenDirBeneath(cache_fd, "objects/pack");
  if (!pack_dir) return pack_dir.error();
  CacheManifest manifest{.source = source, .files = {}};
  auto all = ListDirAt(pack_dir->get());
  if (!all) return all.error();
  for (const auto& name : *all) {
    auto st = StatAt(pack_dir->get(), name);
    if (!st || !IsPackFileName(name)) continue;
    manifest.files.push_back({.name = name, .size = st->st_size, .mtime = st->st_mtim});
  }
  return PutFile(cache_fd, kCacheManifestName, RenderCacheManifest(manifest), FileMode(root));
}

base::Result<std::string> DefaultObjectCacheRoot(bool root_caller) {
  // Beside the default dispatch root: the same private place of the caller's.
  auto dispatches = DefaultWorkspaceRoot(root_caller);
  if (!dispatches) return dispatches.error().WithContext("--object-cache");
  return dispatches->substr(0, dispatches->rfind('/')) + "/caches";
}

base::Result<CacheKey> CacheKeyOf(const std::string& source) {
  char real[PATH_MAX];
  struct stat st {};
  if (::realpath(source.c_str(), real) == nullptr || ::stat(real, &st) != 0 ||
      !S_ISDIR(st.st_mode) || !FindSourceGitDirs(real)) {
    return base::Error::Message(fmt::format(
        "--repo {}: not a local git repository (--object-cache caches only those)", source));
  }
  std::string path = real;
  if (path.find('\n') != std::string::npos) {
    return base::Error::Message(fmt::format("--repo {}: a newline in its path", source));
  }
  return CacheKey{.name = fmt::format("{:x}-{}", st.st_dev, st.st_ino), .source = path};
}

base::Result<CacheRoot> OpenCacheRoot(const std::string& path, bool root_caller) {
  CacheRoot root;
  auto fd = base::OpenOrMakeTrustedDir(path, root_caller ? 0711 : 0700, ::geteuid(), &root.path);
  if (!fd) return fd.error().WithContext("--object-cache");
  root.fd = std::move(*fd);
  root.shared = root_caller;
  return root;
}

base::Result<base::UniqueFd> LockCache(const CacheRoot& root, const std::string& name) {
  std::string file = name + ".lock";
  for (;;) {
    auto fd = base::OpenBeneath(root.fd.get(), file, O_RDWR | O_CREAT | O_NOFOLLOW, 0600);
    if (!fd) return fd.error().WithContext("--object-cache");
    struct stat st {};
    if (::fstat(fd->get(), &st) != 0) return base::ErrnoError("Can't stat", file);
    if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid() || st.st_nlink != 1) {
      return base::Error::Message(
          fmt::format("--object-cache: {}/{} is not a lock file of this user's", root.path, file));
    }
    while (::flock(fd->get(), LOCK_EX) != 0) {
      if (errno != EINTR) return base::ErrnoError("Can't lock", file);
    }
    // `gc` removes a cache's lock file while holding it: a lock taken on a file that is no
    // longer the one of that name locks nothing; open the name again.
    auto now = StatAt(root.fd.get(), file);
    if (now && now->st_dev == st.st_dev && now->st_ino == st.st_ino) return std::move(*fd);
  }
}

base::Status ShareCacheLock(int lock_fd) {
  while (::flock(lock_fd, LOCK_SH) != 0) {
    if (errno != EINTR) return base::ErrnoError("Can't share the lock of", "the object cache");
  }
  if (::futimens(lock_fd, nullptr) != 0) return base::ErrnoError("Can't touch", "the cache lock");
  return {};
}

base::Result<std::string> InstallIntoCache(const CacheRoot& root, const CacheKey& key,
                                           int scratch_fd, uid_t scratch_uid,
                                           const CacheRefs& refs) {
  int root_fd = root.fd.get();
  base::UniqueFd cache_fd;
  bool fresh = !StatAt(root_fd, key.name).has_value();
  std::string building = fresh ? key.name + ".new" : key.name;
  if (fresh) {
    (void)RemoveTreeAt(root_fd, building);  // what a run that died here left
    if (::mkdirat(root_fd, building.c_str(), DirMode(root)) != 0 ||
        ::fchmodat(root_fd, building.c_str(), DirMode(root), 0) != 0) {
      return base::ErrnoError("Can't make the object cache", root.path + "/" + building);
    }
  }
  auto opened = base::OpenBeneath(root_fd, building, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  if (!opened) return opened.error();
  cache_fd = std::move(*opened);
  if (fresh) {
    if (auto st = MakeSkeleton(root, cache_fd.get()); !st) return st.error();
  }
  auto src_pack = OpenDirBeneath(scratch_fd, "objects/pack");
  if (!src_pack) return src_pack.error().WithContext("the fetched repository");
  auto dst_pack = OpenDirBeneath(cache_fd.get(), "objects/pack");
  if (!dst_pack) return dst_pack.error();
  auto names = ListDirAt(src_pack->get());
  if (!names) return names.error();
  // Each .pack before its .idx: git finds a pack by its index.
  std::stable_sort(names->begin(), names->end(), [](const std::string& a, const std::string& b) {
    return a.ends_with(".pack") && !b.ends_with(".pack");
  });
  for (const auto& name : *names) {
    if (!IsPackFileName(name)) continue;
    auto copied =
        CopyPackIntoCache(src_pack->get(), dst_pack->get(), name, scratch_uid, FileMode(root));
    if (!copied) return copied.error();
  }
  for (const auto& [file, content] :
       {std::pair{"packed-refs", RenderPackedRefs(refs)}, std::pair{"HEAD", refs.head + "\n"}}) {
    if (auto st = PutFile(cache_fd.get(), file, content, FileMode(root)); !st) return st.error();
  }
  if (auto st = WriteCacheManifest(root, cache_fd.get(), key.source); !st) return st.error();
  if (fresh && ::renameat(root_fd, building.c_str(), root_fd, key.name.c_str()) != 0) {
    return base::ErrnoError("Can't put the object cache in place", root.path + "/" + key.name);
  }
  return root.path + "/" + key.name;
}

base::Result<std::vector<CacheInfo>> ListCaches(const CacheRoot& root) {
  std::vector<CacheInfo> caches;
  auto names = ListDirAt(root.fd.get());
  if (!names) return names.error();
  for (const auto& file : *names) {
    if (!file.ends_with(".lock")) continue;
    CacheInfo info;
    info.name = file.substr(0, file.size() - 5);
    auto lock_st = StatAt(root.fd.get(), file);
    if (!lock_st || !S_ISREG(lock_st->st_mode)) continue;
    info.used = lock_st->st_mtim;
    auto lock = base::OpenBeneath(root.fd.get(), file, O_RDONLY | O_NOFOLLOW);
    info.in_use = lock && ::flock(lock->get(), LOCK_EX | LOCK_NB) != 0;
    auto dir = OpenDirAt(root.fd.get(), info.name);
    if (dir) {
      if (auto text = ReadFileAt(dir->get(), kCacheManifestName)) {
        if (auto manifest = ParseCacheManifest(*text)) {
          info.source = manifest->source;
          for (const auto& f : manifest->files) info.bytes += static_cast<uint64_t>(f.size);
        }
      }
    }
    caches.push_back(std::move(info));
  }
  return caches;
}

base::Result<bool> RemoveCacheIfUnused(const CacheRoot& root, const std::string& name) {
  std::string file = name + ".lock";
  auto lock = base::OpenBeneath(root.fd.get(), file, O_RDONLY | O_NOFOLLOW);
  if (!lock) return lock.error();
  if (::flock(lock->get(), LOCK_EX | LOCK_NB) != 0) return false;
  if (auto st = RemoveTreeAt(root.fd.get(), name); !st) return st.error();
  // The lock file goes last, while still held: a dispatch that opened it meanwhile finds
  // no cache and makes one.
  if (::unlinkat(root.fd.get(), file.c_str(), 0) != 0 && errno != ENOENT) {
    return base::ErrnoError("Can't remove", root.path + "/" + file);
  }
  return true;
}

}  // namespace sbx::dispatch
