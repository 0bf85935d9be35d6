#include "dispatch/identity/ownership_pass.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

#include "base/c_handle.h"
#include "base/unique_fd.h"

namespace sbx::dispatch {
namespace {

constexpr int kMaxDepth = 512;

struct Walk {
  const OwnershipPassOptions& options;
  dev_t dev;
  OwnershipPassCount count;
};

// The new owner and group of an entry, or false when neither is the `from` one's.
bool NewIds(const struct stat& st, const OwnershipPassOptions& o, uid_t* uid, gid_t* gid) {
  *uid = st.st_uid == o.from.uid ? o.to.uid : st.st_uid;
  *gid = st.st_gid == o.from.gid ? o.to.gid : st.st_gid;
  return *uid != st.st_uid || *gid != st.st_gid;
}

// One entry of `dirfd`: its owner changed (a symlink as a link), then, for a directory of
// `from`'s on our filesystem, what is inside it.
base::Status PassEntry(Walk& walk, int dirfd, const char* name, int depth);

base::Status PassDir(Walk& walk, int fd, int depth) {
  if (depth > kMaxDepth) return base::Error(ELOOP, "Directory tree too deep to hand back");
  // Names first, then the work: the listing is not disturbed by what the pass changes.
  std::vector<std::string> names;
  {
    base::CHandle<DIR, ::closedir> listing(::fdopendir(::dup(fd)));
    if (!listing) return base::ErrnoError("Can't read a directory to hand back");
    ::rewinddir(listing.get());
    while (const dirent* entry = ::readdir(listing.get())) {
      const std::string name = entry->d_name;
      if (name != "." && name != "..") names.push_back(name);
    }
  }
  for (const auto& name : names) {
    if (auto st = PassEntry(walk, fd, name.c_str(), depth); !st) return st;
  }
  return {};
}

base::Status PassEntry(Walk& walk, int dirfd, const char* name, int depth) {
  const OwnershipPassOptions& o = walk.options;
  struct stat st {};
  if (::fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return {};
    return base::ErrnoError("Can't stat", name);
  }
  if (st.st_dev != walk.dev) {
    ++walk.count.left;  // a mount point: another filesystem is not ours to change
    return {};
  }
  const bool from_owned = st.st_uid == o.from.uid;
  if (S_ISDIR(st.st_mode)) {
    // Only `from`'s directories are entered; when lending, not those others may write in.
    if (!from_owned || (o.lending && (st.st_mode & (S_IWGRP | S_IWOTH)) != 0)) {
      ++walk.count.left;
      return {};
    }
    base::UniqueFd sub(::openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!sub) return base::ErrnoError("Can't open", name);
    struct stat opened {};
    if (::fstat(sub.get(), &opened) != 0 || opened.st_ino != st.st_ino ||
        opened.st_dev != st.st_dev) {
      return base::Error(ESTALE, "Directory changed while handing it back:", name);
    }
    if (auto inner = PassDir(walk, sub.get(), depth + 1); !inner) return inner;
    uid_t uid = 0;
    gid_t gid = 0;
    if (NewIds(st, o, &uid, &gid)) {
      if (::fchown(sub.get(), uid, gid) != 0) return base::ErrnoError("Can't chown", name);
      ++walk.count.changed;
    }
    return {};
  }
  uid_t uid = 0;
  gid_t gid = 0;
  if (!NewIds(st, o, &uid, &gid)) {
    ++walk.count.left;
    return {};
  }
  if (o.lending && S_ISREG(st.st_mode) && st.st_nlink > 1) {
    ++walk.count.left;
    return {};
  }
  if (::fchownat(dirfd, name, uid, gid, AT_SYMLINK_NOFOLLOW) != 0) {
    return base::ErrnoError("Can't chown", name);
  }
  ++walk.count.changed;
  // The kernel clears set-id bits on chown already; make sure of it, for a regular file
  // only (fchmodat would follow a symlink), and only when one was set.
  if (S_ISREG(st.st_mode) && (st.st_mode & (S_ISUID | S_ISGID)) != 0) {
    if (::fchmodat(dirfd, name, st.st_mode & 0777 & ~mode_t{S_ISUID | S_ISGID}, 0) != 0) {
      return base::ErrnoError("Can't clear the set-id bits of", name);
    }
  }
  return {};
}

}  // namespace

base::Result<OwnershipPassCount> PassOwnership(int top_fd, const OwnershipPassOptions& options) {
  struct stat top {};
  if (::fstat(top_fd, &top) != 0) return base::ErrnoError("Can't stat the directory to hand back");
  Walk walk{options, top.st_dev, {}};
  // A tree being lent may have its top lent already (GivenDir hands the top over first).
  if (top.st_uid == options.from.uid || options.lending) {
    if (auto st = PassDir(walk, top_fd, 0); !st) return st.error();
    uid_t uid = 0;
    gid_t gid = 0;
    if (NewIds(top, options, &uid, &gid)) {
      if (::fchown(top_fd, uid, gid) != 0) return base::ErrnoError("Can't chown the top directory");
      ++walk.count.changed;
    }
  }
  return walk.count;
}

}  // namespace sbx::dispatch
