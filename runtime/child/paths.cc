#include "runtime/child/paths.h"

#include <fcntl.h>
#include <linux/limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/syscalls.h"
#include "base/unique_fd.h"

namespace sbx::runtime::child {

namespace {

// Sandbox paths may be given with or without the leading "/"; openat2 with RESOLVE_IN_ROOT
// treats both as relative to the root fd, but an empty remainder means the root itself.
const char* SkipSlashes(const char* path) {
  while (*path == '/') ++path;
  return path;
}

int OpenPrefix(int root_fd, const char* path, int* out_fd) {
  if (*path == '\0') return OpenInRoot(root_fd, ".", O_PATH | O_DIRECTORY, out_fd);
  return OpenInRoot(root_fd, path, O_PATH | O_DIRECTORY, out_fd);
}

// Walks `buffer` (a relative path whose last component is excluded by `end`) from the
// top, creating each missing directory. Slow path: only taken when the parent is missing.
int CreateParentChain(int root_fd, char* buffer, char* end, mode_t mode) {
  for (char* slash = std::strchr(buffer, '/'); slash != nullptr && slash <= end;
       slash = std::strchr(slash + 1, '/')) {
    *slash = '\0';
    int dir_fd = -1;
    int err = OpenPrefix(root_fd, buffer, &dir_fd);
    base::UniqueFd dir(dir_fd);
    if (err == ENOENT) {
      char* last = std::strrchr(buffer, '/');
      int parent_fd = -1;
      if (last != nullptr) {
        *last = '\0';
        err = OpenPrefix(root_fd, buffer, &parent_fd);
        *last = '/';
      } else {
        err = OpenPrefix(root_fd, "", &parent_fd);
      }
      base::UniqueFd parent(parent_fd);
      if (err == 0) {
        const char* name = last != nullptr ? last + 1 : buffer;
        err = (::mkdirat(parent.get(), name, mode) == 0 || errno == EEXIST) ? 0 : errno;
      }
    }
    *slash = '/';
    if (err != 0) return err;
  }
  return 0;
}

}  // namespace

int OpenInRoot(int root_fd, const char* path, int flags, int* out_fd) noexcept {
  open_how how{};
  how.flags = static_cast<uint64_t>(flags) | O_CLOEXEC;
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  const char* rel = SkipSlashes(path);
  int fd = base::OpenAt2(root_fd, *rel == '\0' ? "." : rel, &how);
  if (fd < 0) return errno;
  *out_fd = fd;
  return 0;
}

int MakeParents(int root_fd, const char* path, mode_t mode, char* buffer, ParentDir* out) noexcept {
  const char* rel = SkipSlashes(path);
  size_t len = std::strlen(rel);
  if (len >= PATH_MAX) return ENAMETOOLONG;
  std::memcpy(buffer, rel, len + 1);
  while (len > 0 && buffer[len - 1] == '/') buffer[--len] = '\0';  // "a/b/" -> "a/b"
  char* last = std::strrchr(buffer, '/');
  if (last == nullptr) {
    out->leaf = buffer;
    return OpenPrefix(root_fd, "", &out->fd);
  }
  *last = '\0';
  int err = OpenPrefix(root_fd, buffer, &out->fd);
  *last = '/';
  if (err == ENOENT) {
    err = CreateParentChain(root_fd, buffer, last, mode);
    if (err != 0) return err;
    *last = '\0';
    err = OpenPrefix(root_fd, buffer, &out->fd);
    *last = '/';
  }
  out->leaf = last + 1;
  return err;
}

StepResult EnsureDir(int root_fd, const char* path, mode_t parent_mode, mode_t mode,
                     int* out_fd) noexcept {
  int err = OpenInRoot(root_fd, path, O_PATH, out_fd);
  if (err == 0) {
    struct stat st {};
    if (::fstat(*out_fd, &st) == 0 && S_ISDIR(st.st_mode)) return {};
    ::close(*out_fd);
    return {ENOTDIR, Stage::kMakeDir};
  }
  if (err == ENOTDIR) return {err, Stage::kMakeParents};  // a parent is not a directory
  if (err != ENOENT) return {err, Stage::kOpenDest};
  char buffer[PATH_MAX];
  ParentDir parent;
  if ((err = MakeParents(root_fd, path, parent_mode, buffer, &parent)) != 0) {
    return {err, Stage::kMakeParents};
  }
  const base::UniqueFd parent_fd(parent.fd);
  if (::mkdirat(parent.fd, parent.leaf, mode) != 0 && errno != EEXIST) {
    return {errno, Stage::kMakeDir};
  }
  int fd = ::openat(parent.fd, parent.leaf, O_PATH | O_NOFOLLOW | O_CLOEXEC | O_DIRECTORY);
  if (fd < 0) return {errno, Stage::kMakeDir};
  *out_fd = fd;
  return {};
}

StepResult EnsureFile(int root_fd, const char* path, mode_t parent_mode, mode_t mode,
                      int* out_fd) noexcept {
  int err = OpenInRoot(root_fd, path, O_PATH, out_fd);
  if (err == 0) return {};
  if (err == ENOTDIR) return {err, Stage::kMakeParents};  // a parent is not a directory
  if (err != ENOENT) return {err, Stage::kOpenDest};
  char buffer[PATH_MAX];
  ParentDir parent;
  if ((err = MakeParents(root_fd, path, parent_mode, buffer, &parent)) != 0) {
    return {err, Stage::kMakeParents};
  }
  const base::UniqueFd parent_fd(parent.fd);
  {
    const base::UniqueFd created(::openat(
        parent.fd, parent.leaf, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, mode));
    if (!created && errno != EEXIST) return {errno, Stage::kCreateFile};
  }
  int fd = ::openat(parent.fd, parent.leaf, O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return {errno, Stage::kCreateFile};
  *out_fd = fd;
  return {};
}

}  // namespace sbx::runtime::child
