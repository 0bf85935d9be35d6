#include "dispatch/sys/at_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <vector>

#include <fmt/format.h>

namespace sbx::dispatch {
namespace {

// An agent can nest directories deeper than there are fds (and than any stack would
// hold): a removal is a loop over frames, of which only this many keep their directory
// open; a deeper one's parent is opened again through ".." of the child, and must be the
// very directory it was (device and inode) or the removal stops.
constexpr size_t kOpenFrames = 64;

// A directory of ours without read, write or search permission for us (chmod 555 by a
// build tool, 000 by an agent) could be neither listed nor emptied: give ourselves all
// three first. Through an O_PATH fd opened without following a symlink, and /proc/self/fd,
// so the chmod reaches exactly the directory that was looked at.
void MakeOwnerAccessible(int dirfd, const std::string& name, const struct stat& st) {
  if (st.st_uid != ::geteuid() || (st.st_mode & S_IRWXU) == S_IRWXU) return;
  base::UniqueFd fd(::openat(dirfd, name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return;
  (void)::chmod(fmt::format("/proc/self/fd/{}", fd.get()).c_str(), (st.st_mode & 07777) | S_IRWXU);
}

// One directory being removed: its name in its parent, its identity, and the child
// directories still to remove (the other entries are gone once it is listed).
struct RemoveFrame {
  base::UniqueFd fd;  // closed for frames more than kOpenFrames above the deepest
  std::string name;
  ino_t ino = 0;
  bool listed = false;
  std::vector<std::string> subdirs = {};
};

// Lists `frame` once: every entry but a directory is unlinked; the directories (on `dev`
// only) are kept for later.
base::Status ListAndUnlink(RemoveFrame* frame, dev_t dev) {
  auto names = ListDirAt(frame->fd.get());
  if (!names) return names.error();
  for (const auto& child : *names) {
    auto st = StatAt(frame->fd.get(), child);
    if (!st) continue;
    if (S_ISDIR(st->st_mode)) {
      if (st->st_dev != dev) return base::Error(EXDEV, "Can't remove a mount point", child);
      frame->subdirs.push_back(child);
    } else if (::unlinkat(frame->fd.get(), child.c_str(), 0) != 0 && errno != ENOENT) {
      return base::ErrnoError("Can't remove", child);
    }
  }
  frame->listed = true;
  return {};
}

// The directory `name` in `dirfd` (on `dev`) and everything below it, at any depth.
base::Status RemoveDirTree(int dirfd, const std::string& name, const struct stat& top, dev_t dev) {
  MakeOwnerAccessible(dirfd, name, top);
  auto opened = OpenDirAt(dirfd, name);
  if (!opened) return opened.error();
  std::vector<RemoveFrame> frames;
  frames.push_back({.fd = std::move(*opened), .name = name, .ino = top.st_ino});
  while (!frames.empty()) {
    RemoveFrame& frame = frames.back();
    if (!frame.listed) {
      if (auto st = ListAndUnlink(&frame, dev); !st) return st;
    }
    if (!frame.subdirs.empty()) {
      std::string child = std::move(frame.subdirs.back());
      frame.subdirs.pop_back();
      auto st = StatAt(frame.fd.get(), child);
      if (!st || !S_ISDIR(st->st_mode)) continue;
      MakeOwnerAccessible(frame.fd.get(), child, *st);
      auto sub = OpenDirAt(frame.fd.get(), child);
      if (!sub) return sub.error();
      frames.push_back({.fd = std::move(*sub), .name = std::move(child), .ino = st->st_ino});
      if (frames.size() > kOpenFrames) frames[frames.size() - 1 - kOpenFrames].fd.reset();
      continue;
    }
    // Empty now: removed from its parent, which is opened again when it was closed.
    if (frames.size() == 1) {
      frames.clear();
      break;
    }
    RemoveFrame& parent = frames[frames.size() - 2];
    if (!parent.fd) {
      parent.fd.reset(::openat(frame.fd.get(), "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
      struct stat again {};
      if (!parent.fd || ::fstat(parent.fd.get(), &again) != 0 || again.st_ino != parent.ino ||
          again.st_dev != dev) {
        return base::Error(ESTALE, "Can't remove (a directory moved during the removal)",
                           parent.name);
      }
    }
    const std::string done = std::move(frame.name);
    frames.pop_back();
    if (::unlinkat(frames.back().fd.get(), done.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) {
      return base::ErrnoError("Can't remove", done);
    }
  }
  if (::unlinkat(dirfd, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) {
    return base::ErrnoError("Can't remove", name);
  }
  return {};
}

}  // namespace

base::Result<base::UniqueFd> OpenDirAt(int dirfd, const std::string& name) {
  base::UniqueFd fd(::openat(dirfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return base::ErrnoError("Can't open directory", name);
  return fd;
}

base::Result<base::UniqueFd> OpenDirBeneath(int dirfd, const std::string& rel) {
  auto current = OpenDirAt(dirfd, ".");
  if (!current) return current.error();
  size_t start = 0;
  while (start < rel.size()) {
    size_t end = rel.find('/', start);
    if (end == std::string::npos) end = rel.size();
    std::string part = rel.substr(start, end - start);
    start = end + 1;
    if (part.empty() || part == ".") continue;
    if (part == "..") return base::Error(EINVAL, "Can't open directory", rel);
    auto next = OpenDirAt(current->get(), part);
    if (!next) return base::Error(next.error().err(), "Can't open directory", rel);
    current = std::move(next);
  }
  return current;
}

std::optional<struct stat> StatAt(int dirfd, const std::string& name) {
  struct stat st {};
  if (::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return std::nullopt;
  return st;
}

base::Result<std::string> ReadFileAt(int dirfd, const std::string& name, size_t limit) {
  // O_NONBLOCK: a FIFO the agent left under that name must not block the host.
  base::UniqueFd fd(
      ::openat(dirfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (!fd) return base::ErrnoError("Can't open", name);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return base::ErrnoError("Can't stat", name);
  if (!S_ISREG(st.st_mode)) return base::Error(EINVAL, "Not a regular file:", name);
  std::string content;
  char buf[8192];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return base::ErrnoError("Can't read", name);
    if (n == 0) break;
    content.append(buf, static_cast<size_t>(n));
    if (content.size() > limit) return base::Error(EFBIG, "Can't read", name);
  }
  return content;
}

int WriteAllTo(int fd, std::string_view text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return EIO;
    done += static_cast<size_t>(n);
  }
  return 0;
}

std::optional<std::string> ReadAllFrom(int fd, size_t limit) {
  std::string text;
  char buf[8192];
  for (off_t at = 0;;) {
    ssize_t n = ::pread(fd, buf, sizeof(buf), at);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 || text.size() + static_cast<size_t>(n) > limit) return std::nullopt;
    if (n == 0) return text;
    text.append(buf, static_cast<size_t>(n));
    at += n;
  }
}

base::Status WriteFileAt(int dirfd, const std::string& name, const std::string& content) {
  struct stat dir {};
  if (::fstat(dirfd, &dir) != 0) return base::ErrnoError("Can't stat the directory of", name);
  std::string temp = name + ".ateam-new";
  (void)RemoveTreeAt(dirfd, temp);
  base::UniqueFd fd(
      ::openat(dirfd, temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (!fd) return base::ErrnoError("Can't create", temp);
  // A root caller writes into a tree its sandbox's uid owns: the file goes to that owner,
  // like everything around it.
  if ((dir.st_uid != ::geteuid() || dir.st_gid != ::getegid()) &&
      ::fchown(fd.get(), dir.st_uid, dir.st_gid) != 0) {
    return base::ErrnoError("Can't change the owner of", temp);
  }
  if (int err = WriteAllTo(fd.get(), content); err != 0) {
    return base::Error(err, "Can't write", temp);
  }
  // A directory in the way (the agent's) cannot be renamed over: it goes first.
  if (auto st = StatAt(dirfd, name); st && S_ISDIR(st->st_mode)) {
    if (auto removed = RemoveTreeAt(dirfd, name); !removed) return removed;
  }
  if (::renameat(dirfd, temp.c_str(), dirfd, name.c_str()) != 0) {
    return base::ErrnoError("Can't replace", name);
  }
  return {};
}

base::Status MakeDirAt(int dirfd, const std::string& name) {
  struct stat dir {};
  if (::fstat(dirfd, &dir) != 0) return base::ErrnoError("Can't stat the directory of", name);
  if (::mkdirat(dirfd, name.c_str(), 0755) != 0) return base::ErrnoError("Can't create", name);
  if ((dir.st_uid != ::geteuid() || dir.st_gid != ::getegid()) &&
      ::fchownat(dirfd, name.c_str(), dir.st_uid, dir.st_gid, AT_SYMLINK_NOFOLLOW) != 0) {
    return base::ErrnoError("Can't change the owner of", name);
  }
  return {};
}

base::Status RemoveTreeAt(int dirfd, const std::string& name) {
  struct stat dir {};
  if (::fstat(dirfd, &dir) != 0) return base::ErrnoError("Can't stat the directory of", name);
  auto st = StatAt(dirfd, name);
  if (!st) return {};
  if (S_ISDIR(st->st_mode)) {
    if (st->st_dev != dir.st_dev) return base::Error(EXDEV, "Can't remove a mount point", name);
    return RemoveDirTree(dirfd, name, *st, dir.st_dev);
  }
  if (::unlinkat(dirfd, name.c_str(), 0) != 0 && errno != ENOENT) {
    return base::ErrnoError("Can't remove", name);
  }
  return {};
}

base::Result<std::string> RenameAsideAt(int dirfd, const std::string& name,
                                        const std::string& aside) {
  for (int i = 1; i < 100; ++i) {
    std::string target = i == 1 ? aside : fmt::format("{}-{}", aside, i);
    if (::renameat2(dirfd, name.c_str(), dirfd, target.c_str(), RENAME_NOREPLACE) == 0) {
      return target;
    }
    if (errno != EEXIST) return base::ErrnoError("Can't rename", name);
  }
  return base::Error(EEXIST, "Can't rename", name);
}

base::Result<std::vector<std::string>> ListDirAt(int dirfd) {
  auto entries = ListDirTypedAt(dirfd);
  if (!entries) return entries.error();
  std::vector<std::string> names;
  names.reserve(entries->size());
  for (auto& entry : *entries) names.push_back(std::move(entry.name));
  return names;
}

base::Result<std::vector<DirEntry>> ListDirTypedAt(int dirfd) {
  // fdopendir takes the fd: give it its own, positioned at the start.
  int own = ::openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (own < 0) return base::ErrnoError("Can't open directory");
  DIR* dir = ::fdopendir(own);
  if (dir == nullptr) {
    ::close(own);
    return base::ErrnoError("fdopendir");
  }
  std::vector<DirEntry> names;
  errno = 0;
  while (const dirent* entry = ::readdir(dir)) {  // NOLINT(concurrency-mt-unsafe): own DIR
    std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back({std::move(name), entry->d_type});
  }
  int err = errno;
  ::closedir(dir);
  if (err != 0) return base::Error(err, "Can't read directory");
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace sbx::dispatch
