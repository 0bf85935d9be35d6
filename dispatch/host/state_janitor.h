// StateDirJanitor: removes a dispatch's host state directory even when `run` itself dies
// without doing it (SIGKILL, a crash), so no socket or directory is left on the host.
//
// A child forked right after the directory is made, before any other descriptor of the
// dispatch exists, blocks on a pipe whose only write end `run` holds (close-on-exec, so
// neither bwrap nor the sandbox keeps it). When `run` ends in any way the pipe reads EOF
// and the janitor removes the directory and exits. It is a process group of its own, so
// neither the terminal's stop signals nor a `kill -9 -PGID` of `run`'s group reach it:
// `run` ends, the janitor follows.
// Caller: the single-threaded host-side dispatch process.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"
#include "relay/state_dir.h"

namespace sbx::dispatch {

class StateDirJanitor {
 public:
  // `dir` must outlive the janitor object; the janitor process works on its own copy.
  // `cgroup_dirs` (dispatch/host/cgroup.h) are removed after it, once their processes are gone.
  static base::Result<StateDirJanitor> Start(relay::StateDir* dir,
                                             const std::vector<std::string>& cgroup_dirs = {});

  StateDirJanitor(StateDirJanitor&& other) noexcept;
  StateDirJanitor& operator=(StateDirJanitor&&) = delete;
  // Closes the pipe (the janitor then removes the directory) and reaps the janitor.
  ~StateDirJanitor();

 private:
  StateDirJanitor(pid_t pid, base::UniqueFd write_end)
      : pid_(pid), write_end_(std::move(write_end)) {}

  pid_t pid_ = -1;
  base::UniqueFd write_end_;
};

}  // namespace sbx::dispatch
