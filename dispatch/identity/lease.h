// A host uid and gid of its own for each dispatch of a root caller, leased from the id
// range (dispatch/identity/id_range.h), so no two dispatches, and no other process on the
// host, share the identity the sandbox runs as: none can signal, ptrace or read another's
// processes, or write into another's workspace.
//
// The leases live in a directory only root can write (kLeaseDir, verified from / as every
// root of the runtime is: base/safe_path.h), one regular file per leased uid, named by the
// uid in decimal. A lease is held in two ways:
//   - its file's exclusive flock, taken by `run` for the run's whole life (the kernel drops
//     it when `run` ends, however it ends), and
//   - the paths its record names (the dispatch's <root>/<id>, a given --workspace/--out
//     until handed back): while one of them exists, files of that uid may be there, so the
//     uid is not handed out again.
// A lease whose file is unlocked and whose paths are all gone is free: `run --rm`, `gc`, or
// removing the directory by hand releases it, and a run that crashed leaves nothing to undo.
// A file is created with O_EXCL or opened without following links, locked, and only then
// its record read: two runs can never both take one, whatever the order of their steps.
//
// Besides other leases, a candidate id is skipped when it is the overflow id, when a
// passwd or group entry has it, or when a running process has it (/proc/*/status).
#pragma once

#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"
#include "dispatch/identity/id_range.h"
#include "runtime/spec.h"

namespace sbx::dispatch {

inline constexpr const char* kLeaseDir = "/var/lib/ateam-sandbox/leases";

struct LeaseOptions {
  LeaseIdRange range;
  std::string dir = kLeaseDir;
  uid_t owner = 0;  // who must own the directory and its files (the caller)
  uid_t overflow_uid = 65534;
  gid_t overflow_gid = 65534;
  // Whether an id is somebody's already (passwd, group, a process). Default: the host's.
  std::function<bool(uid_t, gid_t)> taken;
  // Up to this many lease files, a new lease is looked for just above the highest one
  // (ids never used before, found at once); past it, from the range's start, where the
  // files of finished dispatches are taken again, so that the files stay this many or
  // as many as there are held leases, and the directory's check stays cheap.
  size_t fresh_ids_until = 1024;
};

// One lease as its file says, for `doctor`.
struct LeaseInfo {
  uid_t uid = 0;
  gid_t gid = 0;
  std::string dispatch_id;
  std::vector<std::string> paths;
  bool running = false;  // a run holds its lock
  bool in_use = false;   // running, or a path of its record exists
};

class IdLease {
 public:
  // The first free id of the range, locked and recorded as held by `dispatch_id` and
  // `paths`. Errors, each one line, with nothing created: the directory is not root's
  // alone (wrong owner or mode, a symlink on the way, a file that is not a lease), or every
  // id of the range is taken.
  static base::Result<IdLease> Acquire(const LeaseOptions& options, const std::string& dispatch_id,
                                       const std::vector<std::string>& paths);

  IdLease(IdLease&&) noexcept = default;
  IdLease& operator=(IdLease&&) noexcept = default;
  IdLease(const IdLease&) = delete;
  IdLease& operator=(const IdLease&) = delete;
  ~IdLease() = default;  // the lock goes with the descriptor; the record stays

  [[nodiscard]] runtime::SandboxSpec::HostIds ids() const { return ids_; }
  // Rewrites which paths hold the lease (a given --workspace handed back is dropped).
  base::Status Record(const std::vector<std::string>& paths);

 private:
  IdLease() = default;
  base::UniqueFd fd_;
  std::string dispatch_id_;
  std::string shown_path_;
  runtime::SandboxSpec::HostIds ids_{};
};

// Every lease file of the directory (missing directory: none), checked as Acquire checks.
base::Result<std::vector<LeaseInfo>> ListLeases(const std::string& dir, uid_t owner);

// Removes every lease file no run holds and whose record names no path that exists (the
// leases `run --rm`, `gc` or a removal by hand released), so that the directory holds the
// leases in use and Acquire's look at it stays short. The number removed (or that would
// be, with `dry_run`). Files are taken and removed under their lock; Acquire checks after
// its lock that the name is still its file.
base::Result<size_t> PruneFreeLeases(const std::string& dir, uid_t owner, bool dry_run);

// The lease options for this host: the resolved range (id_range.h), kLeaseDir, the caller
// as owner.
base::Result<LeaseOptions> HostLeaseOptions(uid_t overflow_uid, gid_t overflow_gid);

// The text of a lease file, and back (exposed for tests).
std::string RenderLeaseRecord(const std::string& dispatch_id,
                              const runtime::SandboxSpec::HostIds& ids,
                              const std::vector<std::string>& paths);
LeaseInfo ParseLeaseRecord(const std::string& text);

}  // namespace sbx::dispatch
