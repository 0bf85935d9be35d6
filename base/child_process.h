// The pieces every fork or clone site shares, written once:
//   - ChildReport: how a child tells its parent that a step failed before it exec'd or
//     finished: one fixed-size ChildFailure ({step, stage, errno, detail}, the runtime's
//     own failure record) and optional raw text, written to a close-on-exec pipe before
//     _exit. EOF without a byte means the child exec'd or finished without failing.
//   - CloneProcess: clone3 with CLONE_PIDFD and, where clone3 answers ENOSYS, clone and
//     pidfd_open; ForkWithPidfd, for a child that runs ordinary code: fork and pidfd_open.
//   - SwitchToIds, LowerRlimit, EnterCgroups: the child-side steps several children take.
// Everything a child calls here is async-signal-safe: no allocation, no locks, no text.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"

namespace sbx::base {

// What failed in a child. `step` and `stage` are the site's own numbering (the runtime's
// Phase or op index, a site's enum); `err` the errno; `detail` an extra index, or the
// length of the raw text that follows the record.
struct ChildFailure {
  uint32_t step = 0;
  uint32_t stage = 0;
  int32_t err = 0;
  uint32_t detail = 0;
};
static_assert(std::is_trivially_copyable_v<ChildFailure>);
static_assert(sizeof(ChildFailure) == 16);

class ChildReport {
 public:
  // Both ends close-on-exec: an exec closes the child's end, which is the success signal.
  static Result<ChildReport> Open();

  // Child side, first thing after fork or clone: the parent's end goes.
  void CloseReadEnd() noexcept { pipe_.read_end.reset(); }
  // Child side: writes `failure` (and, when `text` is given, `text_len` bytes of it, whose
  // length then replaces `detail`) in one go, then _exits with `exit_code`.
  [[noreturn]] void Fail(ChildFailure failure, const char* text = nullptr, size_t text_len = 0,
                         int exit_code = 1) const noexcept;
  [[noreturn]] void Fail(uint32_t step, int err, int exit_code = 1) const noexcept {
    Fail(ChildFailure{step, 0, err, 0}, nullptr, 0, exit_code);
  }
  [[nodiscard]] int write_fd() const noexcept { return pipe_.write_end.get(); }

  // Parent side, right after fork or clone: the child's end goes, so EOF can come.
  void CloseWriteEnd() noexcept { pipe_.write_end.reset(); }
  // Parent side: blocks until the child wrote its failure or closed its end (exec, exit).
  // nullopt: no failure.
  [[nodiscard]] Result<std::optional<ChildFailure>> Read() const;
  // After a failure that came with text: the `length` bytes after the record (fewer when
  // the child wrote fewer).
  [[nodiscard]] std::string ReadText(size_t length) const;

 private:
  explicit ChildReport(FdPair pipe) : pipe_(std::move(pipe)) {}
  FdPair pipe_;
};

// Fork-like (no new stack, SIGCHLD at exit) clone with `flags` (namespace flags; no
// CLONE_PIDFD): 0 in the child, the pid in the parent, -1 with errno when it failed.
// `pidfd`, when given, gets a pidfd of the child that exists from the first instant
// (CLONE_PIDFD), so no signal can reach a recycled pid. Where clone3 answers ENOSYS
// (kernels before 5.3; container seccomp profiles that send callers back to clone) plain
// clone is used and the pidfd opened after it: the caller is the child's only reaper, so
// its pid cannot be recycled meanwhile; a failed pidfd_open kills and reaps the child.
// The child is a raw system call's: glibc's cached thread id is the parent's there, so it
// must only make system calls until it execs or _exits (no raise, abort or pthread).
pid_t CloneProcess(uint64_t flags, int* pidfd) noexcept;

// The same for ordinary callers: the pid (0 in the child) and, in the parent, its pidfd.
struct ClonedChild {
  pid_t pid = -1;
  UniqueFd pidfd;
};
Result<ClonedChild> CloneWithPidfd(uint64_t flags, const char* what);

// For a child that runs ordinary code before it execs or _exits (allocates, formats, calls
// into libraries), which a CloneProcess child must not: glibc's fork, which keeps the
// child's thread bookkeeping right, then the pidfd opened by the parent (it is the child's
// only reaper, so the pid cannot be recycled meanwhile; a failed pidfd_open kills and
// reaps the child). `what` names the child in the error.
Result<ClonedChild> ForkWithPidfd(const char* what);

// Child side: drops the supplementary groups (first: after setresuid they could no
// longer be dropped), then setresgid and setresuid to `gid` and `uid`, and checks that all
// three uids took. From uid 0 to another without SECBIT_KEEP_CAPS the kernel clears every
// capability set. 0 or an errno (EPERM when an id did not take).
int SwitchToIds(uid_t uid, gid_t gid) noexcept;

// Child side: lowers both limits of `resource` to at most `ceiling`; a lower limit the
// caller already had stays. 0 or an errno.
int LowerRlimit(int resource, uint64_t ceiling) noexcept;

// Writes `pid` (0: the writer itself) into each open cgroup.procs file of `procs_fds`, so
// everything that process does from then on, and every process it makes, is charged to
// those cgroups. 0 or the errno of the first write that failed.
int EnterCgroups(const std::vector<int>& procs_fds, pid_t pid) noexcept;

}  // namespace sbx::base
