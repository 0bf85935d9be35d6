// The child's only message to the parent: which step of the plan failed, at which stage,
// with which errno. Fixed-size and trivially copyable, written whole with one write(2) on
// a close-on-exec pipe; EOF with no bytes means the command was exec'd. The parent holds
// the same plan (clone without CLONE_VM copies it) and renders the message itself
// (runtime/failure_message.h), so the child never formats text.
#pragma once

#include <cstdint>
#include <type_traits>

#include "base/child_process.h"

namespace sbx::runtime {

// Steps that are not an op of Plan::ops. Op steps are their index in Plan::ops.
enum class Phase : uint32_t {
  kWaitForParent = 0x10000,
  kDeathSignal,
  kUidMap,
  kSetgroups,
  kGidMap,
  kLoopback,
  kMakeRootSlave,
  kSetupRoot,
  kPivotRoot,
  kUnmountOldRoot,
  kSecondUserns,
  kDisableUserns,
  kAssertUsernsDisabled,
  kSwitchIds,
  kCapabilities,
  kLockFile,
  kBlockFd,
  kReadSeccomp,
  kLoadSeccomp,
  kChdir,
  kNewSession,
  kForkReaper,
  kExec,
  // Joined namespaces (--pidns, --userns, --userns2); appended to keep earlier values.
  kJoinPidns,        // detail: JoinPidnsStep
  kSwitchJoinedIds,  // detail: JoinedIdsStep
  kJoinUserns2,
  // The network namespace made beside the mounts (runtime/child/netns_helper.h).
  kCreateNetns,
  kSetDumpable,
  // `run`: the sandbox's own sysctls and rlimits (detail: which one).
  kSelfLimits,
};

// Which part of joining --pidns failed (SetupFailure::detail of Phase::kJoinPidns).
enum class JoinPidnsStep : uint32_t {
  kSetns = 0,  // "Setting pidns failed"
  kFork,       // "Can't fork for --pidns"
  kUnshare,    // "unshare pid ns" (--pidns with --unshare-pid)
  kSendPid,    // "Can't send pid"
};

// Which write or call of a user namespace's setup failed (SetupFailure::detail of
// Phase::kUidMap, kSetgroups, kGidMap and kSecondUserns).
enum class UsernsStep : uint32_t {
  kUidMap = 0,         // "setting up uid map"
  kSetgroups,          // "error writing to setgroups"
  kGidMap,             // "setting up gid map"
  kMaxUserNamespaces,  // "cannot open /proc/sys/user/max_user_namespaces" (nested only)
  kUnshare,            // "unshare user ns" (nested only)
  kBoundingSet,        // "Dropping capabilities" (nested only)
};

// Which id switch into a joined --userns failed (SetupFailure::detail of
// Phase::kSwitchJoinedIds).
enum class JoinedIdsStep : uint32_t {
  kSetuid = 0,  // "unable to switch to uid N"
  kSetgid,      // "unable to switch to gid N"
};

// Stages inside one op (which part of the op failed); the renderer picks bwrap's text.
enum class Stage : uint32_t {
  kNone = 0,
  kOpenSource,     // "Can't find source path SRC"
  kMakeParents,    // "Can't mkdir parents for DEST"
  kMakeDir,        // "Can't mkdir DEST"
  kCreateFile,     // "Can't create file at DEST"
  kOpenDest,       // resolving DEST in the new root
  kMount,          // the mount itself
  kSetAttr,        // applying nosuid/nodev/ro
  kWriteData,      // "Can't write data to file DEST"
  kSymlinkExists,  // existing symlink with another target
  kNotSymlink,     // existing non-symlink
  kNotMountPoint,  // --remount-ro on a path that is not a mount point
  kIdentity,       // --bind-fd: mounted object is not the fd's
  kDevpts,
  kDevNode,
  kProcCover,
  kLock,
  kOverlayOverlap,
  kOpenLockFile,  // --lock-file: opening it ("Unable to open lock file"); kLock: locking it
};

// The child's report is the one every child writes (base/child_process.h): step is an op
// index or a Phase value, stage a Stage, detail an extra index (e.g. which /dev node).
using SetupFailure = base::ChildFailure;

// What a child-side step returns: errno 0 means success.
struct StepResult {
  int err = 0;
  Stage stage = Stage::kNone;
  uint32_t detail = 0;
  [[nodiscard]] bool failed() const { return err != 0; }
};

// A failed step whose detail is one of the enums above.
template <typename Step>
constexpr StepResult StepFailed(int err, Step step) {
  return {err, Stage::kNone, static_cast<uint32_t>(step)};
}

}  // namespace sbx::runtime
