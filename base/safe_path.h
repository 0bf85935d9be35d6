// Host paths handled through directory fds. The rule they serve: a process never trusts a
// path it did not create itself in a directory only it can write.
//
// A "trusted" directory is reached from / one component at a time, never through a symlink,
// and every component on the way is owned by root or by the caller's uid. A component that
// others can write to is accepted only as a sticky ancestor (like /tmp: nobody else can
// rename or remove what we create in it); the directory itself must not be writable by
// group or other. Below a trusted directory, new components are made with mkdirat and
// opened with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS); a component that already
// exists is accepted only when it is a directory owned by the caller, not writable by group
// or other. What somebody else made is refused, never adopted.
//
// Callers: the host side of `run` (dispatch/), the relay's state directory (relay/).
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <string>

#include "base/error.h"
#include "base/unique_fd.h"

namespace sbx::base {

// How a directory's stat must look. `owner` is the caller's uid; root may own it too unless
// `owner_only`. Sticky group/other-writable directories pass only as an ancestor.
struct DirRule {
  uid_t owner = 0;
  bool owner_only = false;  // refuse root-owned (for directories we created ourselves)
  bool as_ancestor = false;
};
// OK or EPERM/ENOTDIR/ELOOP with `path` and the reason in the message.
Status CheckDirStat(const struct stat& st, const DirRule& rule, const std::string& path);

// openat2(dirfd, name, flags | O_CLOEXEC) with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
// RESOLVE_NO_MAGICLINKS; kernels without openat2 get openat with O_NOFOLLOW, which is the
// same for a single component.
Result<UniqueFd> OpenBeneath(int dirfd, const std::string& relative, int flags, mode_t mode = 0);

// Opens the existing absolute directory `path` (no symlink anywhere on the way: callers
// resolve with realpath first when they accept links) as O_PATH, checking every component:
// ancestors against {owner, as_ancestor = true}, the last one against {owner}.
Result<UniqueFd> OpenTrustedDir(const std::string& path, uid_t owner);
// The same, with the last component checked as an ancestor when `last_as_ancestor`.
Result<UniqueFd> OpenTrustedPath(const std::string& path, uid_t owner, bool last_as_ancestor);

// The directory `name` below `dirfd` (one component), created with `mode` when absent;
// when it exists it must pass CheckDirStat({owner, owner_only = true}). Returns an O_PATH
// fd of it.
Result<UniqueFd> MakeTrustedDir(int dirfd, const std::string& name, mode_t mode, uid_t owner,
                                const std::string& shown_path);

// A directory that must not exist yet: mkdirat, then opened. EEXIST when it does.
Result<UniqueFd> MakeFreshDir(int dirfd, const std::string& name, mode_t mode,
                              const std::string& shown_path);

// mkdir -p of an absolute path as a trusted directory, walked from / one component at a
// time: existing directories are checked as ancestors (a sticky shared one such as /tmp may
// be on the way), a symlink is followed only when it sits in a directory nobody else can
// write and belongs to root or `owner`, missing components are made with MakeTrustedDir,
// and the directory reached must pass the strict check. Returns an O_PATH fd of it;
// `resolved` gets its real path.
Result<UniqueFd> OpenOrMakeTrustedDir(const std::string& path, mode_t mode, uid_t owner,
                                      std::string* resolved = nullptr);

// The path the kernel has for an open fd (readlink of /proc/self/fd/N).
Result<std::string> FdPath(int fd);

// True when the directory `dirfd` is `top` or below it (walks ".." up to /, comparing
// device and inode; no path is followed).
Result<bool> IsDirBelow(int dirfd, const struct stat& top);

}  // namespace sbx::base
