#include "base/safe_path.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string_view>
#include <vector>

#include "base/overflow_owner.h"
#include "base/syscalls.h"

namespace sbx::base {
namespace {

std::vector<std::string> Components(std::string_view path) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start < path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    if (end > start) parts.emplace_back(path.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

std::string Join(const std::string& dir, const std::string& name) {
  return dir == "/" ? "/" + name : dir + "/" + name;
}

Result<UniqueFd> OpenDirPath(int dirfd, const std::string& name, const std::string& shown) {
  auto fd = OpenBeneath(dirfd, name, O_PATH | O_DIRECTORY);
  if (!fd) return Error(fd.error().err(), "Can't open directory", shown);
  return fd;
}

// The directories RestrictOverflowAncestors vouched for; unset: any overflow-owned one.
std::optional<std::vector<DirIdentity>>& VouchedOverflowDirs() {
  static std::optional<std::vector<DirIdentity>> dirs;
  return dirs;
}

// In a user namespace that does not map host uid 0 (a rootless container, `unshare -r`),
// host root's directories show up as owned by the overflow uid, like those of every other
// unmapped user: nothing from inside can tell them apart, and the namespace's creator
// decided what it sees. Such a directory is accepted on the way to a root, never as the
// place written in, and only among the vouched ones when a list was given. Outside such a
// namespace the overflow uid is an ordinary user.
bool OverflowOwnerStandsForRoot(const struct stat& st) {
  static const uid_t overflow = [] {
    unsigned value = 65534;
    if (FILE* f = std::fopen("/proc/sys/kernel/overflowuid", "re")) {
      if (std::fscanf(f, "%u", &value) != 1) value = 65534;
      std::fclose(f);
    }
    return static_cast<uid_t>(value);
  }();
  static const bool host_root_unmapped = [] {
    FILE* f = std::fopen("/proc/self/uid_map", "re");
    if (f == nullptr) return false;
    bool mapped = false;
    unsigned long inside = 0;
    unsigned long outside = 0;
    unsigned long count = 0;
    while (std::fscanf(f, "%lu %lu %lu", &inside, &outside, &count) == 3) {
      if (outside == 0 && count > 0) mapped = true;
    }
    std::fclose(f);
    return !mapped;
  }();
  if (!host_root_unmapped || st.st_uid != overflow) return false;
  const auto& vouched = VouchedOverflowDirs();
  if (!vouched) return true;
  return std::any_of(vouched->begin(), vouched->end(), [&](const DirIdentity& dir) {
    return dir.dev == st.st_dev && dir.ino == st.st_ino;
  });
}

Status CheckFd(int fd, const DirRule& rule, const std::string& shown) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return ErrnoError("Can't stat", shown);
  return CheckDirStat(st, rule, shown);
}

}  // namespace

void RestrictOverflowAncestors(std::vector<DirIdentity> host_root_dirs) {
  VouchedOverflowDirs() = std::move(host_root_dirs);
}

Status CheckDirStat(const struct stat& st, const DirRule& rule, const std::string& path) {
  if (S_ISLNK(st.st_mode)) return Error(ELOOP, "Refusing directory (a symlink)", path);
  if (!S_ISDIR(st.st_mode)) return Error(ENOTDIR, "Refusing", path);
  bool owner_ok = st.st_uid == rule.owner || (!rule.owner_only && st.st_uid == 0) ||
                  (rule.as_ancestor && OverflowOwnerStandsForRoot(st));
  if (!owner_ok) {
    return Error(EPERM,
                 "Refusing directory owned by uid " + std::to_string(st.st_uid) +
                     " (expected uid " + std::to_string(rule.owner) +
                     (rule.owner_only ? ")" : " or root)"),
                 path);
  }
  bool shared = (st.st_mode & (S_IWGRP | S_IWOTH)) != 0;
  if (shared && !(rule.as_ancestor && (st.st_mode & S_ISVTX) != 0)) {
    return Error(EPERM, "Refusing directory writable by group or other", path);
  }
  return {};
}

Result<UniqueFd> OpenBeneath(int dirfd, const std::string& relative, int flags, mode_t mode) {
  open_how how{};
  how.flags = static_cast<uint64_t>(flags) | O_CLOEXEC;
  how.mode = (flags & (O_CREAT | O_TMPFILE)) != 0 ? mode : 0;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  int fd = OpenAt2(dirfd, relative.c_str(), &how);
  if (fd < 0 && errno == ENOSYS) {
    if (relative.find('/') != std::string::npos) return Error(ENOSYS, "openat2", relative);
    fd = ::openat(dirfd, relative.c_str(), flags | O_CLOEXEC | O_NOFOLLOW, mode);
  }
  if (fd < 0) return ErrnoError("Can't open", relative);
  return UniqueFd(fd);
}

Result<UniqueFd> OpenTrustedDir(const std::string& path, uid_t owner) {
  return OpenTrustedPath(path, owner, /*last_as_ancestor=*/false);
}

Result<UniqueFd> OpenTrustedPath(const std::string& path, uid_t owner, bool last_as_ancestor) {
  if (!path.starts_with('/')) return Error(EINVAL, "Not an absolute path:", path);
  UniqueFd fd(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!fd) return ErrnoError("Can't open", "/");
  std::vector<std::string> parts = Components(path);
  std::string shown = "/";
  if (auto st = CheckFd(fd.get(), {owner, false, !parts.empty() || last_as_ancestor}, shown); !st) {
    return st.error();
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    shown = Join(shown, parts[i]);
    if (parts[i] == "." || parts[i] == "..") return Error(EINVAL, "Refusing path", path);
    auto next = OpenDirPath(fd.get(), parts[i], shown);
    if (!next) return next.error();
    bool ancestor = i + 1 < parts.size() || last_as_ancestor;
    if (auto st = CheckFd(next->get(), {owner, false, ancestor}, shown); !st) {
      return st.error();
    }
    fd = std::move(*next);
  }
  return fd;
}

Result<UniqueFd> MakeTrustedDir(int dirfd, const std::string& name, mode_t mode, uid_t owner,
                                const std::string& shown_path) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos) {
    return Error(EINVAL, "Refusing directory name", shown_path);
  }
  if (::mkdirat(dirfd, name.c_str(), mode) != 0 && errno != EEXIST) {
    return ErrnoError("Can't create directory", shown_path);
  }
  // Made by us or not, it is checked the same way: a racing creator is caught here too.
  auto fd = OpenDirPath(dirfd, name, shown_path);
  if (!fd) return fd.error();
  if (auto st = CheckFd(fd->get(), {owner, true, false}, shown_path); !st) return st.error();
  return fd;
}

Result<UniqueFd> MakeFreshDir(int dirfd, const std::string& name, mode_t mode,
                              const std::string& shown_path) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos) {
    return Error(EINVAL, "Refusing directory name", shown_path);
  }
  if (::mkdirat(dirfd, name.c_str(), mode) != 0) {
    return ErrnoError("Can't create directory", shown_path);
  }
  return OpenDirPath(dirfd, name, shown_path);
}

Result<UniqueFd> OpenOrMakeTrustedDir(const std::string& path, mode_t mode, uid_t owner,
                                      std::string* resolved) {
  if (!path.starts_with('/')) return Error(EINVAL, "Not an absolute path:", path);
  // The walk from /: one entry per directory reached, so ".." goes back without a lookup.
  struct Step {
    UniqueFd fd;
    std::string real;
    bool shared = false;  // writable by others (then sticky, or it would have been refused)
  };
  std::vector<Step> steps;
  auto push = [&](UniqueFd fd, std::string real) -> Status {
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return ErrnoError("Can't stat", real);
    // Every directory on the way is checked as an ancestor; the last one again, strictly.
    if (auto ok = CheckDirStat(st, {owner, false, true}, real); !ok) return ok;
    steps.push_back({std::move(fd), std::move(real), (st.st_mode & (S_IWGRP | S_IWOTH)) != 0});
    return {};
  };
  auto to_root = [&]() -> Status {
    steps.clear();
    UniqueFd root(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!root) return ErrnoError("Can't open", "/");
    return push(std::move(root), "/");
  };
  if (auto st = to_root(); !st) return st.error();
  std::vector<std::string> todo = Components(path);
  std::reverse(todo.begin(), todo.end());  // a stack: the next component is at the back
  int links = 0;
  bool creating = false;
  while (!todo.empty()) {
    std::string part = std::move(todo.back());
    todo.pop_back();
    if (part == ".") continue;
    if (part == "..") {
      if (steps.size() > 1) steps.pop_back();
      continue;
    }
    Step& here = steps.back();
    std::string shown = Join(here.real, part);
    struct stat st {};
    if (!creating && ::fstatat(here.fd.get(), part.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
      if (S_ISLNK(st.st_mode)) {
        // A link is followed only when nobody but root or the caller can have put it there.
        if (here.shared || (st.st_uid != 0 && st.st_uid != owner)) {
          return Error(ELOOP, "Refusing symlink in a directory others can write", shown);
        }
        if (++links > 40) return Error(ELOOP, "Too many symlinks in", path);
        char target[PATH_MAX];
        ssize_t n = ::readlinkat(here.fd.get(), part.c_str(), target, sizeof(target) - 1);
        if (n <= 0) return ErrnoError("Can't readlink", shown);
        std::string link(target, static_cast<size_t>(n));
        std::vector<std::string> more = Components(link);
        todo.insert(todo.end(), more.rbegin(), more.rend());
        if (link.starts_with('/')) {
          if (auto ok = to_root(); !ok) return ok.error();
        }
        continue;
      }
      auto opened = OpenDirPath(here.fd.get(), part, shown);
      if (!opened) return opened.error();
      if (auto ok = push(std::move(*opened), shown); !ok) return ok.error();
      continue;
    }
    if (!creating && errno != ENOENT) return ErrnoError("Can't stat", shown);
    creating = true;
    auto made = MakeTrustedDir(here.fd.get(), part, mode, owner, shown);
    if (!made) return made.error();
    if (auto ok = push(std::move(*made), shown); !ok) return ok.error();
  }
  if (auto ok = CheckFd(steps.back().fd.get(), {owner, false, false}, steps.back().real); !ok) {
    return ok.error();
  }
  if (resolved != nullptr) *resolved = steps.back().real;
  return std::move(steps.back().fd);
}

Result<std::string> FdPath(int fd) {
  char buf[PATH_MAX];
  std::string link = "/proc/self/fd/" + std::to_string(fd);
  ssize_t n = ::readlink(link.c_str(), buf, sizeof(buf) - 1);
  if (n < 0) return ErrnoError("Can't readlink", link);
  return std::string(buf, static_cast<size_t>(n));
}

Result<bool> IsDirBelow(int dirfd, const struct stat& top) {
  UniqueFd fd(::fcntl(dirfd, F_DUPFD_CLOEXEC, 0));
  if (!fd) return ErrnoError("Can't dup directory fd");
  for (int depth = 0; depth < 4096; ++depth) {
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return ErrnoError("Can't stat directory");
    if (st.st_dev == top.st_dev && st.st_ino == top.st_ino) return true;
    UniqueFd up(::openat(fd.get(), "..", O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!up) return ErrnoError("Can't open ..");
    struct stat up_st {};
    if (::fstat(up.get(), &up_st) != 0) return ErrnoError("Can't stat ..");
    if (up_st.st_dev == st.st_dev && up_st.st_ino == st.st_ino) return false;  // reached /
    fd = std::move(up);
  }
  return Error(ELOOP, "Directory nesting too deep");
}

}  // namespace sbx::base
