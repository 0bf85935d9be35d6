// git on the host, for the steps around a --repo clone (a revision, submodules, the
// source's uncommitted changes): always as the dispatch's user in a child that switched
// to its ids first, with no configuration but ours. Git reads no system or global file
// (GIT_CONFIG_NOSYSTEM, GIT_CONFIG_GLOBAL naming a memfd), runs no hook (core.hooksPath
// is /dev/null) and reaches nothing over a network (every protocol but file is refused).
// The repositories these steps run in are the fresh clone, whose config the runtime
// wrote; the source is only ever read by the upload-pack git clone runs in it.
#pragma once

#include <string>
#include <vector>

#include "base/child_process.h"
#include "base/error.h"
#include "dispatch/git/workspace.h"

namespace sbx::dispatch {

// The steps a child reports (base::ChildReport, RunChildAs) before it becomes git: its
// exit status is then git's alone.
enum class GitChildStep : uint32_t {
  kEnter = 1,       // fchdir into the directory git runs in
  kConfigure,       // the memfd with git's configuration
  kUnreadable,      // a local source the ids cannot read
  kNotARepository,  // a local directory with no .git that is not bare either
  kExec,            // execvp("git"); ENOENT: git is not installed
};

// In the child: reports `step` with errno and _exits.
[[noreturn]] inline void FailGitStep(const base::ChildReport& report, GitChildStep step,
                                     int err) noexcept {
  report.Fail(static_cast<uint32_t>(step), err);
}

struct HostGitOptions {
  // Directories git may treat as repositories although another uid owns them.
  std::vector<std::string> safe_directories;
  // Where git's stdout goes; -1: collected into HostGitRun::output.
  int stdout_fd = -1;
  // What git reads on stdin; -1: /dev/null.
  int stdin_fd = -1;
  // The dispatch's stop signals and deadline (stop_signals.h), or -1. When set, git runs
  // in a process group of its own, which a signal arriving there kills (WaitOrStop, as
  // for the plain clone); HostGitRun::stopped_by then names it. Git's stdout is /dev/null
  // then unless stdout_fd is set: only one pipe is read while waiting.
  int stop_fd = -1;
  // A file below the directory git runs in to use as git's index (GIT_INDEX_FILE, made
  // absolute there, as git resolves it after moving to a work tree); "": the repository's.
  std::string index_file;
};

struct HostGitRun {
  int exit_code = 0;
  std::string output;  // stdout (the first 1 MiB), unless HostGitOptions::stdout_fd was set
  std::string errors;  // stderr (the first 64 KiB)
  int stopped_by = 0;  // the stop signal that killed git (HostGitOptions::stop_fd), or 0
};

// Runs `git ARGS...` in the directory `dir_fd` as `ids` (this process's own ids when
// unset). Fails only when git could not be run at all; git's own failure is exit_code.
base::Result<HostGitRun> RunHostGit(const RunAsIds& ids, int dir_fd,
                                    const std::vector<std::string>& args,
                                    const HostGitOptions& options = {});

// The first "fatal:"/"error:" line of git's stderr, or its last line.
std::string GitComplaintLine(const std::string& text);

}  // namespace sbx::dispatch
