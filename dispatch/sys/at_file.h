// File operations relative to a directory fd that never follow a symlink: for the host
// side's work inside a workspace the agent controlled. Every name is one path component.
#pragma once

#include <sys/stat.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"

namespace sbx::dispatch {

// openat(O_DIRECTORY | O_NOFOLLOW): fails (ELOOP, ENOTDIR) on anything but a directory.
base::Result<base::UniqueFd> OpenDirAt(int dirfd, const std::string& name);

// Opens `rel` ("a/b/c") one component at a time, each O_NOFOLLOW.
base::Result<base::UniqueFd> OpenDirBeneath(int dirfd, const std::string& rel);

// lstat of `name` in `dirfd`; nullopt when it does not exist.
std::optional<struct stat> StatAt(int dirfd, const std::string& name);

// The content of the regular file `name` (ELOOP for a symlink, EINVAL for anything else
// that is not a regular file, EFBIG past `limit` bytes).
base::Result<std::string> ReadFileAt(int dirfd, const std::string& name, size_t limit = 1 << 20);

// Writes all of `text` to `fd`, across short writes and EINTR: 0, or the errno (EIO for a
// write that wrote nothing).
int WriteAllTo(int fd, std::string_view text);

// What the file `fd` holds from its start, read with pread (a memfd a child wrote into);
// nullopt on a read error or past `limit` bytes.
std::optional<std::string> ReadAllFrom(int fd, size_t limit);

// Replaces `name` with a regular file holding `content` (mode 0644), atomically: written
// beside it, then renamed over it. The new file belongs to the directory's owner.
base::Status WriteFileAt(int dirfd, const std::string& name, const std::string& content);

// mkdirat(`name`, 0755), owned like the directory it is made in.
base::Status MakeDirAt(int dirfd, const std::string& name);

// Removes `name` and, for a directory, everything below it (no symlink followed, no
// mount crossed); ENOENT is success.
base::Status RemoveTreeAt(int dirfd, const std::string& name);

// Renames `name` to `aside` (or `aside`-2, -3... when taken); returns the name it got.
base::Result<std::string> RenameAsideAt(int dirfd, const std::string& name,
                                        const std::string& aside);

// The entries of a directory (without . and ..), sorted.
base::Result<std::vector<std::string>> ListDirAt(int dirfd);

// The same with each entry's d_type (DT_DIR, DT_REG, DT_LNK..., DT_UNKNOWN when the
// filesystem does not say), for walks that need no stat of every file.
struct DirEntry {
  std::string name;
  unsigned char type = 0;
  friend bool operator<(const DirEntry& a, const DirEntry& b) { return a.name < b.name; }
};
base::Result<std::vector<DirEntry>> ListDirTypedAt(int dirfd);

}  // namespace sbx::dispatch
