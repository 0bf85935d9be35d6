#include "dispatch/host/lock.h"

#include <fcntl.h>
#include <sys/file.h>

#include <cerrno>

#include "base/safe_path.h"

namespace sbx::dispatch {
namespace {

// flock needs a descriptor opened for reading: the root fds of base/safe_path.h are O_PATH.
base::Result<base::UniqueFd> LockRoot(int root_fd, int operation) {
  base::UniqueFd fd(::openat(root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) return base::ErrnoError("Can't open the dispatch root to lock it");
  while (::flock(fd.get(), operation) != 0) {
    if (errno != EINTR) return base::ErrnoError("Can't lock the dispatch root");
  }
  return fd;
}

}  // namespace

base::Result<base::UniqueFd> MakeLockedDispatchDir(int root_fd, const std::string& id, mode_t mode,
                                                   const std::string& shown_path) {
  auto root_lock = LockRoot(root_fd, LOCK_SH);
  if (!root_lock) return root_lock.error();
  auto made = base::MakeFreshDir(root_fd, id, mode, shown_path);
  if (!made) return made.error();
  base::UniqueFd dir(::openat(made->get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir) return base::ErrnoError("Can't open", shown_path);
  // Nobody else knows the fresh name yet, and ls/gc wait for our shared root lock before
  // they try it: this never waits.
  while (::flock(dir.get(), LOCK_EX) != 0) {
    if (errno != EINTR) return base::ErrnoError("Can't lock", shown_path);
  }
  return dir;
}

base::Result<std::optional<base::UniqueFd>> TryLockDispatchDir(int root_fd, const std::string& id) {
  auto root_lock = LockRoot(root_fd, LOCK_EX);
  if (!root_lock) return root_lock.error();
  base::UniqueFd dir(
      ::openat(root_fd, id.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir) return base::ErrnoError("Can't open the dispatch directory", id);
  while (::flock(dir.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) return std::optional<base::UniqueFd>{};
    if (errno != EINTR) return base::ErrnoError("Can't lock the dispatch directory", id);
  }
  return std::optional<base::UniqueFd>{std::move(dir)};
}

base::Result<bool> DispatchDirLocked(int root_fd, const std::string& id) {
  auto root_lock = LockRoot(root_fd, LOCK_EX);
  if (!root_lock) return root_lock.error();
  base::UniqueFd dir(
      ::openat(root_fd, id.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir) return base::ErrnoError("Can't open the dispatch directory", id);
  // Shared, and dropped (with the descriptor) before the root lock: a `gc` that tries the
  // same directory next never finds this test holding it.
  while (::flock(dir.get(), LOCK_SH | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) return true;
    if (errno != EINTR) return base::ErrnoError("Can't lock the dispatch directory", id);
  }
  return false;
}

}  // namespace sbx::dispatch
