#include "dispatch/host/workspace_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include <fmt/format.h>

#include "base/safe_path.h"

namespace sbx::dispatch {
namespace {

constexpr const char* kLockDirName = ".workspace-locks";

// <dispatch root>/.workspace-locks, the caller's own, made when absent. The dispatch root
// is verified and made as for the dispatch directories (0711 for root: the sandbox's ids
// pass through it to theirs); the lock directory itself is 0700. Its name is no dispatch
// id, so ls, gc and rm never take it for one.
base::Result<base::UniqueFd> OpenLockDir(const std::string& dispatch_root, bool root_caller) {
  auto root_fd = base::OpenOrMakeTrustedDir(dispatch_root, root_caller ? 0711 : 0700, ::geteuid());
  if (!root_fd) return root_fd.error();
  return base::MakeTrustedDir(root_fd->get(), kLockDirName, 0700, ::geteuid(),
                              dispatch_root + "/" + kLockDirName);
}

}  // namespace

base::Result<base::UniqueFd> LockWorkspace(int workspace_fd, const std::string& shown_path,
                                           const std::string& dispatch_root, bool root_caller) {
  struct stat ws {};
  if (::fstat(workspace_fd, &ws) != 0) return base::ErrnoError("--workspace", shown_path);
  auto dir = OpenLockDir(dispatch_root, root_caller);
  if (!dir) return dir.error().WithContext("the lock of --workspace " + shown_path);
  const std::string name = fmt::format("{:x}-{:x}", static_cast<unsigned long long>(ws.st_dev),
                                       static_cast<unsigned long long>(ws.st_ino));
  auto file = base::OpenBeneath(dir->get(), name, O_RDWR | O_CREAT | O_NOFOLLOW, 0600);
  if (!file) return file.error().WithContext("the lock of --workspace " + shown_path);
  struct stat st {};
  if (::fstat(file->get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) {
    return base::Error::Message(
        fmt::format("the lock of --workspace {}: {} is not a file of ours", shown_path, name));
  }
  while (::flock(file->get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) {
      return base::Error::Message(fmt::format(
          "--workspace {}: another dispatch is running in it (one run per workspace at a time)",
          shown_path));
    }
    if (errno != EINTR) return base::ErrnoError("Can't lock --workspace", shown_path);
  }
  return file;
}

}  // namespace sbx::dispatch
