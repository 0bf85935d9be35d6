#include "runtime/child/mount_api.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>

#include "base/unique_fd.h"

namespace sbx::runtime::child {

const char* FormatUnsigned(char* buf, uint64_t value, unsigned base) noexcept {
  char tmp[24];
  int n = 0;
  do {
    tmp[n++] = static_cast<char>('0' + value % base);
    value /= base;
  } while (value != 0);
  int i = 0;
  if (base == 8) buf[i++] = '0';
  while (n > 0) buf[i++] = tmp[--n];
  buf[i] = '\0';
  return buf;
}

int NewMount(const char* fs_type, const FsOption* options, int option_count, uint64_t attr_flags,
             int* out_fd) noexcept {
  // Each `return errno` reads errno before the fd is closed (return value first, then the
  // destructors).
  base::UniqueFd fs(::fsopen(fs_type, FSOPEN_CLOEXEC));
  if (!fs) return errno;
  // The "source" column of mountinfo: bwrap's mount(2) calls pass the type there.
  if (::fsconfig(fs.get(), FSCONFIG_SET_STRING, "source", fs_type, 0) < 0) return errno;
  for (int i = 0; i < option_count; ++i) {
    int rc = options[i].value != nullptr
                 ? ::fsconfig(fs.get(), FSCONFIG_SET_STRING, options[i].key, options[i].value, 0)
                 : ::fsconfig(fs.get(), FSCONFIG_SET_FLAG, options[i].key, nullptr, 0);
    if (rc < 0) return errno;
  }
  if (::fsconfig(fs.get(), FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) < 0) return errno;
  int mnt = ::fsmount(fs.get(), FSMOUNT_CLOEXEC, static_cast<unsigned>(attr_flags));
  if (mnt < 0) return errno;
  *out_fd = mnt;
  return 0;
}

int CloneTree(int dirfd, const char* path, int* out_fd) noexcept {
  unsigned flags = OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE;
  if (*path == '\0') flags |= AT_EMPTY_PATH;
  int fd = ::open_tree(dirfd, path, flags);
  if (fd < 0) return errno;
  *out_fd = fd;
  return 0;
}

int SetMountFlags(int fd, uint64_t attr_flags, bool recursive) noexcept {
  mount_attr attr{};
  attr.attr_set = attr_flags;
  unsigned flags = AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0U);
  return ::mount_setattr(fd, "", flags, &attr, sizeof(attr)) == 0 ? 0 : errno;
}

int AttachOnFd(int mount_fd, int target_fd) noexcept {
  return ::move_mount(mount_fd, "", target_fd, "",
                      MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) == 0
             ? 0
             : errno;
}

int AttachAt(int mount_fd, int dirfd, const char* name) noexcept {
  return ::move_mount(mount_fd, "", dirfd, name, MOVE_MOUNT_F_EMPTY_PATH) == 0 ? 0 : errno;
}

}  // namespace sbx::runtime::child
