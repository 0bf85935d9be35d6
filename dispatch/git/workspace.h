// The dispatch's writable places on the host: a fresh clone of the repository (or an
// existing directory) as the workspace, and the out dir. Host-side, before clone.
//
// The rule (docs/architecture.md, "Host side"): a path is trusted only when this process
// created it in a directory only it can write, and a root caller never acts as root inside
// anything another uid owns. So the per-dispatch directory is made fresh (mkdirat) in a
// verified root (base/safe_path.h); the clone runs in a child that has become the sandbox's
// uid first, so every file is born with its owner and no recursive chown exists.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>

#include "base/error.h"
#include "base/unique_fd.h"
#include "runtime/spec.h"

namespace sbx::dispatch {

using RunAsIds = std::optional<runtime::SandboxSpec::HostIds>;

// 12 hex digits from getrandom: names the dispatch's directory and its status document.
std::string NewDispatchId();

// The default parent of per-dispatch directories.
//   root caller:  /var/tmp/ateam-sandbox/dispatches (made 0711 by root, so only root can
//                 write it and the sandbox's uid can reach its own directories)
//   unprivileged: $XDG_CACHE_HOME, else $HOME/.cache, else $XDG_RUNTIME_DIR, each followed
//                 by /ateam-sandbox/dispatches; none of them set: an error.
base::Result<std::string> DefaultWorkspaceRoot(bool root_caller);

// `git clone --no-hardlinks SOURCE .` in a child that switched to `ids` first (setgroups,
// setresgid, setresuid: no capability is left, no_new_privs set) and entered `dest_fd`, an
// empty directory it owns. Git's configuration comes from the environment and a memfd
// (GIT_CONFIG_NOSYSTEM, GIT_CONFIG_GLOBAL=/proc/self/fd/N trusting only SOURCE), never
// from a file anybody else could write. Git's progress shows when stderr is a terminal.
// Git runs in a process group of its own: a stop signal arriving on `stop_fd` (a signalfd,
// or -1) kills that group and sets `*stopped_by` to the signal; the caller removes what
// the clone made.
base::Status CloneRepository(const std::string& source, int dest_fd, const RunAsIds& ids,
                             int stop_fd = -1, int* stopped_by = nullptr);

// A directory given on the command line (--workspace, --out), opened once: its parent is
// resolved, the top itself is never followed through a symlink. For a root caller whose
// sandbox runs as other ids, the top is handed to them and handed back, owner and mode as
// they were, when this object goes away.
class GivenDir {
 public:
  // Runs on the opened directory before anything of it changes; its error ends Open.
  using OpenedCheck = std::function<base::Status(int dir_fd)>;
  // `create`: make it (mode 0755) when it does not exist, as `ids` when set: made by the
  // caller and handed to them when the parent is the caller's or root's and nobody else
  // can write it, else made by a child that became them.
  static base::Result<GivenDir> Open(const std::string& flag, const std::string& path, bool create,
                                     const RunAsIds& ids, const OpenedCheck& opened = {});
  GivenDir(GivenDir&& other) noexcept = default;
  GivenDir& operator=(GivenDir&& other) noexcept = default;
  ~GivenDir();

  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] int fd() const { return fd_.get(); }
  // A directory Open made is removed again while it is still empty (a run that failed
  // before the agent started); one it found is left alone.
  void RemoveIfMade();

 private:
  GivenDir() = default;
  struct MadeHere {
    base::UniqueFd parent_fd;  // O_PATH
    std::string name;
    RunAsIds remover;  // who removes it: the caller (nullopt), or the ids that made it
  };
  std::optional<MadeHere> made_;
  std::string path_;
  base::UniqueFd fd_;
  std::optional<struct stat> restore_;  // owner and mode to give back
};

}  // namespace sbx::dispatch
