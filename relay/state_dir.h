// StateDir: the private per-dispatch directory on the host that holds the route sockets.
//
// Where: under $XDG_RUNTIME_DIR when the caller has one, else under /tmp/ateam-sandbox-<uid>,
// a per-uid directory created 0700 on first use. Either base is checked with lstat (so a
// symlink planted at the name is refused, not followed): a real directory, owned by the
// caller, not writable by group or other. A failing $XDG_RUNTIME_DIR is an error; a per-uid
// base that fails (another user can create /tmp/ateam-sandbox-<uid> first, to block it) is
// passed over for a fresh mkdtemp directory directly in <tmp_root> instead: made by us, so
// nobody else can have prepared it. The dispatch directory itself is made by mkdtemp (0700,
// unique) inside the base and removed, with the sockets in it, at the end.
// Caller: the host-side dispatch process, before the sandbox is cloned.
#pragma once

#include <sys/types.h>

#include <string>

#include "base/error.h"
#include "base/unique_fd.h"

namespace sbx::relay {

struct StateDirOptions {
  std::string xdg_runtime_dir;    // the caller's $XDG_RUNTIME_DIR; empty when unset
  std::string tmp_root = "/tmp";  // parent of the per-uid fallback base
  uid_t uid = 0;                  // who the directory belongs to: the caller
  // 0711 instead of 0700 for the base and the dispatch directory: a root caller keeps them
  // its own and lets the sandbox's uid reach the sockets in them (whose own mode and owner
  // decide who can connect).
  bool traversable = false;
};

// OK when `path` (not followed if a symlink) is a directory owned by `uid` with no group or
// other write bit. ELOOP for a symlink, ENOTDIR, EPERM for a wrong owner or mode.
base::Status CheckPrivateDir(const std::string& path, uid_t uid);

// <tmp_root>/ateam-sandbox-<uid>: created `mode` when absent, then checked with
// CheckPrivateDir.
base::Result<std::string> EnsureUserBaseDir(const std::string& tmp_root, uid_t uid,
                                            mode_t mode = 0700);

class StateDir {
 public:
  // The new directory is flock'ed (exclusive) through its descriptor, so the lock lives as
  // long as the dispatch or its janitor does.
  static base::Result<StateDir> Create(const StateDirOptions& options);

  StateDir(StateDir&& other) noexcept;
  StateDir& operator=(StateDir&& other) noexcept;
  // Remove(), errors ignored.
  ~StateDir();

  [[nodiscard]] const std::string& path() const { return path_; }
  // Unlinks every non-directory entry (the route sockets) and removes the directory.
  base::Status Remove();

 private:
  StateDir(std::string path, base::UniqueFd dir_fd)
      : path_(std::move(path)), dir_fd_(std::move(dir_fd)) {}

  std::string path_;
  base::UniqueFd dir_fd_;
};

}  // namespace sbx::relay
