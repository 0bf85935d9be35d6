// The sandbox child's spine: what runs after clone3, in the new namespaces, until exec.
// Fixed phases in a fixed order; what happens in each is read from the Plan.
//
// Child-side contract: noexcept, no exceptions, no formatting, no logging. On failure the
// child writes one SetupFailure (plus optional raw text) to `report` and _exit(1)s; on
// success it execs, which closes the close-on-exec report pipe: the parent sees EOF.
#pragma once

#include <cstddef>

#include "base/child_process.h"
#include "runtime/child/setup_ops.h"
#include "runtime/plan.h"

namespace sbx::runtime::child {

// Everything the parent prepares before clone for the child: all memory is allocated by
// the parent; the child only reads it (or writes into buffers it was given).
struct ChildLaunch {
  const Plan* plan = nullptr;
  OpSources* sources = nullptr;         // plan->ops.size() entries
  base::ChildReport* report = nullptr;  // the failure pipe (base/child_process.h)
  int go_fd = -1;                       // read end: wait for EOF before setup (-1: no wait)
  int parent_pidfd = -1;                // pidfd of the monitor, for --die-with-parent
  int status_fd = -1;                   // reaper -> monitor: the command's wait status
  int pid_socket = -1;                  // --pidns: the final process sends its pid here (CLOEXEC)
  int netns_channel = -1;       // NetnsFromHelper: the helper sends the netns here (CLOEXEC)
  int netns_helper_end = -1;    // NetnsFromHelper: the helper's end of that channel
  char* const* argv = nullptr;  // NULL-terminated
  char** envp = nullptr;        // NULL-terminated; envp[pwd_slot] is set by the child
  size_t pwd_slot = 0;
  char* const* pwd_entries = nullptr;  // "PWD=<candidate>", one per plan->cwd_candidates
  char* failure_text = nullptr;        // PATH_MAX bytes
};

// NOLINTNEXTLINE(bugprone-exception-escape): see the definition.
[[noreturn]] void ChildMain(const ChildLaunch& launch) noexcept;

}  // namespace sbx::runtime::child
