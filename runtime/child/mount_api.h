// Small child-side helpers over the new mount API (fsopen/fsconfig/fsmount, open_tree,
// move_mount, mount_setattr). Every mount the sandbox gets is built detached, given its
// final flags, and only then attached: the sandbox never sees a writable or suid-capable
// moment of a read-only bind.
//
// Child-side contract: noexcept, no allocation; return 0 or an errno value.
#pragma once

#include <cstdint>

namespace sbx::runtime::child {

// Formats `value` in `base` (8 or 10) into `buf` (at least 24 bytes), NUL-terminated.
const char* FormatUnsigned(char* buf, uint64_t value, unsigned base) noexcept;

// A filesystem option for NewMount: key=value, or a flag when value is nullptr.
struct FsOption {
  const char* key;
  const char* value;
};

// Creates a new detached mount of `fs_type` with options and MOUNT_ATTR_* flags;
// *out_fd is the mount fd (also usable as a directory fd of its root).
int NewMount(const char* fs_type, const FsOption* options, int option_count, uint64_t attr_flags,
             int* out_fd) noexcept;

// Clones the tree at dirfd/path (AT_EMPTY_PATH when path is "") recursively, detached.
int CloneTree(int dirfd, const char* path, int* out_fd) noexcept;

// Adds MOUNT_ATTR_* flags to every mount of the tree at `fd` (never clears any, so flags
// the kernel locked stay as they are). `recursive` = the whole tree.
int SetMountFlags(int fd, uint64_t attr_flags, bool recursive) noexcept;

// Attaches detached mount `mount_fd` on top of the object `target_fd` refers to.
int AttachOnFd(int mount_fd, int target_fd) noexcept;

// Attaches detached mount `mount_fd` at dirfd/name (a single component).
int AttachAt(int mount_fd, int dirfd, const char* name) noexcept;

}  // namespace sbx::runtime::child
