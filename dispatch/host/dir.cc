#include "dispatch/host/dir.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include <fmt/format.h>

#include "dispatch/sys/at_file.h"
#include "dispatch/sys/run_as_child.h"

namespace sbx::dispatch {
namespace {

// Everything inside `dirfd`, not `dirfd` itself (which sits in a directory the remover
// may not write).
base::Status EmptyDir(int dirfd) {
  // Ours, but maybe without permission for us to list or change it (chmod 000 by the agent).
  struct stat top {};
  if (::fstat(dirfd, &top) == 0 && top.st_uid == ::geteuid() &&
      (top.st_mode & S_IRWXU) != S_IRWXU) {
    (void)::fchmod(dirfd, (top.st_mode & 07777) | S_IRWXU);
  }
  auto names = ListDirAt(dirfd);
  if (!names) return names.error();
  for (const auto& name : *names) {
    if (auto st = RemoveTreeAt(dirfd, name); !st) return st;
  }
  return {};
}

}  // namespace

base::Status RemoveDispatchDir(int root_fd, const std::string& id,
                               const std::optional<runtime::SandboxSpec::HostIds>& ids) {
  base::UniqueFd dispatch(
      ::openat(root_fd, id.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dispatch) {
    if (errno == ENOENT) return {};
    return base::ErrnoError("Can't open the dispatch directory", id);
  }
  auto entries = ListDirAt(dispatch.get());
  if (!entries) return entries.error();
  for (const auto& name : *entries) {
    auto st = StatAt(dispatch.get(), name);
    if (!st) continue;
    const bool theirs = ids && S_ISDIR(st->st_mode) && st->st_uid == ids->uid;
    if (theirs) {
      // Emptied as its owner: root opens nothing in it.
      auto sub = OpenDirAt(dispatch.get(), name);
      if (!sub) return sub.error();
      int subfd = sub->get();
      auto emptied = RunChildAs(ids, [subfd](const base::ChildReport& report) -> int {
        auto empty = EmptyDir(subfd);
        if (!empty) report.Fail(1, empty.error().err() != 0 ? empty.error().err() : EIO);
        return 0;
      });
      if (!emptied) return emptied.error();
      if (emptied->failure || emptied->status != 0) {
        return base::Error(emptied->failure ? emptied->failure->err : EINTR,
                           fmt::format("Can't empty {}/{} as uid {}", id, name, ids->uid));
      }
      if (::unlinkat(dispatch.get(), name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) {
        return base::ErrnoError("Can't remove", fmt::format("{}/{}", id, name));
      }
      continue;
    }
    if (auto removed = RemoveTreeAt(dispatch.get(), name); !removed) return removed;
  }
  if (::unlinkat(root_fd, id.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) {
    return base::ErrnoError("Can't remove the dispatch directory", id);
  }
  return {};
}

}  // namespace sbx::dispatch
