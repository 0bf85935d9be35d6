// The disk watcher: bounds what the agent adds to the host's disk, the workspace and the
// out dir together (--disk bytes of allocated blocks, --inodes names), on any filesystem
// and for any caller: no quota, mount option or privilege is needed.
//
// A walker process, as the dispatch's host ids (a root caller's walker is never root in
// the agent's tree), measures both trees (dispatch/host/disk_usage.h): once before the
// agent starts (the baseline: what a given workspace already holds is not the agent's),
// then again and again while it runs, and once more after it ended. Between passes it
// sleeps eight times as long as a pass took (at least 100 ms, at most 2 s), so it uses
// about a ninth of one CPU at most, and polls the filesystems' free space (statvfs) every
// 50 ms: when they filled by more than the room left, the next pass starts at once. Its
// work per pass is bounded by the bound itself (a pass stops once it is crossed). `run`'s
// event loop reads its reports; a crossed bound, or trees it can no longer measure (a
// directory it can't open, more levels than it may hold descriptors for), stops the
// dispatch like a stop signal (the grace, then SIGKILL), with reason `disk`.
//
// What it cannot see: a file the agent removed but still holds open (freed when the
// sandbox ends). RLIMIT_FSIZE (dispatch/plan/limits.h) keeps any one file below --disk.
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"
#include "dispatch/host/disk_usage.h"
#include "dispatch/host/prepare.h"
#include "dispatch/plan/limits.h"
#include "dispatch/request/result.h"
#include "relay/event_loop.h"
#include "runtime/spec.h"

namespace sbx::dispatch {

class DiskWatch {
 public:
  // Opens `dirs` (the workspace and the out dir) and starts the walker as `ids` (nullopt:
  // this process's own). `bounds`: how much the trees may grow.
  static base::Result<std::unique_ptr<DiskWatch>> Start(
      const std::vector<std::string>& dirs, const std::optional<runtime::SandboxSpec::HostIds>& ids,
      DiskUsage bounds);
  DiskWatch(const DiskWatch&) = delete;
  DiskWatch& operator=(const DiskWatch&) = delete;
  ~DiskWatch();  // the walker killed and reaped

  // Waits for the baseline, or until `stop_fd` (the stop signals' signalfd) is readable,
  // which is left for the caller to take.
  base::Status AwaitBaseline(int stop_fd);
  // From now on the walker's reports are read in `loop`; `on_crossed` runs once, when a
  // bound is crossed or the trees can no longer be measured (crossed() then says which).
  base::Status Attach(relay::EventLoop& loop, std::function<void()> on_crossed);
  // The reports are no longer read in the loop, and `on_crossed` is dropped (it points at
  // what the loop's caller owns).
  void Detach();
  // After the sandbox ended, unless a bound was crossed already: one more pass, begun now,
  // so an agent that crossed a bound and exited between two passes is seen. A readable
  // `stop_fd` (a stop signal, the deadline) cuts it short, unmeasured.
  void FinalPass(int stop_fd);
  // Why the dispatch was stopped ("" when no bound was crossed): one line.
  [[nodiscard]] const std::string& crossed() const { return crossed_; }

 private:
  DiskWatch(base::UniqueFd reports, base::UniqueFd control, base::UniqueFd pidfd, pid_t pid,
            DiskUsage bounds);
  // Reads what the walker wrote so far; false once it has gone (EOF).
  bool ReadReports();
  void HandleLine(const std::string& line);
  // Blocks until `done`, the walker failed or went (true), or `stop_fd` is readable (false).
  bool WaitFor(const std::function<bool()>& done, int stop_fd);

  base::UniqueFd reports_;
  base::UniqueFd control_;
  base::UniqueFd pidfd_;
  pid_t pid_;
  DiskUsage bounds_;
  std::optional<DiskUsage> baseline_;
  std::string buffer_;
  bool final_seen_ = false;
  bool failed_ = false;  // it said it can't measure
  std::string crossed_;
  std::function<void()> on_crossed_;
  relay::EventLoop* loop_ = nullptr;
};

// The watcher of the dispatch's workspace and out dir for `limits`, started as `ids` into
// `*watch`, its baseline taken. A stop signal meanwhile is left on `stop_fd`.
base::Status WatchDispatchDisk(const DispatchDirs& dirs,
                               const std::optional<runtime::SandboxSpec::HostIds>& ids,
                               const DispatchLimits& limits, int stop_fd,
                               std::unique_ptr<DiskWatch>* watch);

// After the sandbox: a bound it crossed, seen while it ran (the stop made the reason
// `disk` already) or by the final pass now, ends the dispatch with reason `disk` and
// kDiskExit, unless it ended otherwise first (a timeout, a stop signal, the OOM killer).
void RecordDiskEnd(DiskWatch* watch, int stop_fd, DispatchResult* result);

}  // namespace sbx::dispatch
