// Symlink-safe path operations under the new root, for the child after clone.
//
// Every sandbox path is resolved relative to an O_PATH fd of the new root with
// openat2(RESOLVE_IN_ROOT): symlinks (absolute ones too) and ".." are resolved as if that
// fd were "/", so a symlink planted in a bound tree can never redirect a mount, mkdir or
// chmod onto the host. Creation happens with *at() calls on the resolved parent fd and a
// single final component.
//
// Child-side contract: noexcept, no allocation, no formatting; functions return 0 or an
// errno value. Paths longer than PATH_MAX fail with ENAMETOOLONG.
#pragma once

#include <sys/types.h>

#include "runtime/child/failure.h"

namespace sbx::runtime::child {

// Opens `path` below `root_fd` with `flags` (O_CLOEXEC is added). Returns errno or 0.
int OpenInRoot(int root_fd, const char* path, int flags, int* out_fd) noexcept;

// Result of MakeParents: an O_PATH fd of the parent directory and the final component
// (pointing into `buffer`).
struct ParentDir {
  int fd = -1;
  const char* leaf = nullptr;
};

// Creates the missing parent directories of `path` with `mode` and opens the parent.
// `buffer` must hold PATH_MAX bytes; `leaf` points into it. Caller closes `out->fd`.
int MakeParents(int root_fd, const char* path, mode_t mode, char* buffer, ParentDir* out) noexcept;

// Ensures `path` is a directory (creating parents with `parent_mode` and itself with
// `mode`); an existing non-directory fails with ENOTDIR at Stage::kMakeDir. On success
// *out_fd is an O_PATH fd of it. Failures say which stage: kMakeParents, kMakeDir, kOpenDest.
StepResult EnsureDir(int root_fd, const char* path, mode_t parent_mode, mode_t mode,
                     int* out_fd) noexcept;

// Ensures `path` exists (an empty file is created with `mode` when missing; whatever
// exists already is kept, as bwrap mounts over it). Stages: kMakeParents, kCreateFile,
// kOpenDest.
StepResult EnsureFile(int root_fd, const char* path, mode_t parent_mode, mode_t mode,
                      int* out_fd) noexcept;

}  // namespace sbx::runtime::child
