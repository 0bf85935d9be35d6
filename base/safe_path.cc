#include "base/safe_path.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <string_view>
#include <vector>

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

Status CheckFd(int fd, const DirRule& rule, const std::string& shown) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return ErrnoError("Can't stat", shown);
  return CheckDirStat(st, rule, shown);
}

}  // namespace

Status CheckDirStat(const struct stat& st, const DirRule& rule, const std::string& path) {
  if (S_ISLNK(st.st_mode)) return Error(ELOOP, "Refusing directory (a symlink)", path);
  if (!S_ISDIR(st.st_mode)) return Error(ENOTDIR, "Refusing", path);
  bool owner_ok = st.st_uid == rule.owner || (!rule.owner_only && st.st_uid == 0);
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
  std::vector<std::string> parts = Components(path);
  for (const std::string& part : parts) {
    if (part == "." || part == "..") return Error(EINVAL, "Refusing path with . or ..:", path);
  }
  // The longest prefix that exists; realpath resolves the links the caller's path has, and
  // the resolved path is then checked component by component.
  size_t existing = parts.size();
  std::string real;
  for (;; --existing) {
    std::string prefix = "/";
    for (size_t i = 0; i < existing; ++i) prefix = Join(prefix, parts[i]);
    char buf[PATH_MAX];
    if (::realpath(prefix.c_str(), buf) != nullptr) {
      real = buf;
      break;
    }
    if (errno != ENOENT || existing == 0) return ErrnoError("Can't resolve", prefix);
  }
  // When something is still to be made, the existing part may end in a shared sticky
  // directory such as /tmp or /var/tmp: what we make in it is ours.
  auto top = OpenTrustedPath(real, owner, /*last_as_ancestor=*/existing < parts.size());
  if (!top) return top.error();
  UniqueFd fd = std::move(*top);
  for (size_t i = existing; i < parts.size(); ++i) {
    real = Join(real, parts[i]);
    auto made = MakeTrustedDir(fd.get(), parts[i], mode, owner, real);
    if (!made) return made.error();
    fd = std::move(*made);
  }
  if (resolved != nullptr) *resolved = real;
  return fd;
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
