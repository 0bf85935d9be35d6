#include "runtime/failure_message.h"

#include <cstring>

#include <fmt/format.h>

#include "netns/loopback.h"

namespace sbx::runtime {
namespace {

std::string StrError(int err) { return std::strerror(err); }  // NOLINT(concurrency-mt-unsafe)

// bwrap names sandbox paths by their place under the setup root.
std::string NewRoot(const std::string& dest) {
  std::string_view rel = dest;
  while (rel.starts_with('/')) rel.remove_prefix(1);
  return fmt::format("/newroot/{}", rel);
}

std::string OldRoot(const std::string& source) { return fmt::format("/oldroot{}", source); }

std::string WithErrno(const std::string& text, int err) {
  if (err == ENOSPC) {
    return text +
           ": Limit exceeded (ENOSPC). (Hint: Check that /proc/sys/fs/mount-max is "
           "sufficient, typically 100000)";
  }
  return err != 0 ? fmt::format("{}: {}", text, StrError(err)) : text;
}

// Messages shared by every op that creates its destination.
std::optional<std::string> DestinationMessage(const std::string& dest, Stage stage, int err) {
  if (stage == Stage::kMakeParents) {
    return WithErrno(fmt::format("Can't mkdir parents for {}", dest), err);
  }
  if (stage == Stage::kMakeDir) return WithErrno(fmt::format("Can't mkdir {}", dest), err);
  if (stage == Stage::kCreateFile) {
    return WithErrno(fmt::format("Can't create file at {}", dest), err);
  }
  return std::nullopt;
}

struct OpMessage {
  const SetupFailure& f;
  const std::string& text;
  [[nodiscard]] Stage stage() const { return static_cast<Stage>(f.stage); }

  [[nodiscard]] std::string Bind(const std::string& source, const std::string& dest) const {
    if (stage() == Stage::kOpenSource) {
      return WithErrno(fmt::format("Can't find source path {}", source), f.err);
    }
    if (auto m = DestinationMessage(dest, stage(), f.err)) return *m;
    const char* what = stage() == Stage::kSetAttr ? "Unable to apply mount flags"
                                                  : "Unable to mount source on destination";
    return WithErrno(
        fmt::format("Can't bind mount {} on {}: {}", OldRoot(source), NewRoot(dest), what), f.err);
  }
  std::string Mount(const char* fs, const std::string& dest) const {
    if (auto m = DestinationMessage(dest, stage(), f.err)) return *m;
    return WithErrno(fmt::format("Can't mount {} on {}", fs, NewRoot(dest)), f.err);
  }

  std::string operator()(const BindOp& op) const { return Bind(op.source, op.dest); }
  std::string operator()(const BindFdOp& op) const {
    if (stage() == Stage::kIdentity) return "Race condition binding dirfd";
    return Bind(fmt::format("/proc/self/fd/{}", op.fd), op.dest);
  }
  std::string operator()(const RemountRoOp& op) const {
    std::string where = NewRoot(op.dest);
    if (stage() == Stage::kNotMountPoint) {
      return fmt::format("Can't remount readonly on {}: Unable to find \"{}\" in mount table",
                         where, where);
    }
    if (stage() == Stage::kOpenDest) {
      return WithErrno(fmt::format("Can't remount readonly on {}: realpath(destination)", where),
                       f.err);
    }
    return WithErrno(fmt::format("Can't remount readonly on {}", where), f.err);
  }
  std::string operator()(const ProcOp& op) const {
    if (stage() == Stage::kOpenSource) return WithErrno("Can't open /proc", f.err);
    return Mount("proc", op.dest);
  }
  std::string operator()(const DevOp& op) const {
    if (stage() == Stage::kDevpts) return Mount("devpts", op.dest + "/pts");
    if (stage() == Stage::kOpenSource || stage() == Stage::kDevNode) {
      return WithErrno(fmt::format("Can't create /dev node in {}", NewRoot(op.dest)), f.err);
    }
    return Mount("tmpfs", op.dest);
  }
  std::string operator()(const TmpfsOp& op) const { return Mount("tmpfs", op.dest); }
  std::string operator()(const MqueueOp& op) const { return Mount("mqueue", op.dest); }
  std::string operator()(const DirOp& op) const {
    if (auto m = DestinationMessage(op.dest, stage(), f.err)) return *m;
    return WithErrno(fmt::format("Can't mkdir {}", op.dest), f.err);
  }
  std::string operator()(const FileOp& op) const {
    if (stage() == Stage::kWriteData) {
      return WithErrno(fmt::format("Can't write data to file {}", op.dest), f.err);
    }
    if (stage() == Stage::kMakeParents) return *DestinationMessage(op.dest, stage(), f.err);
    return WithErrno(fmt::format("Can't create file {}", op.dest), f.err);
  }
  std::string operator()(const BindDataOp& op) const {
    if (stage() == Stage::kWriteData) {
      return WithErrno(fmt::format("Can't write data to file {}", op.dest), f.err);
    }
    return Bind("bind-data", op.dest);
  }
  std::string operator()(const SymlinkOp& op) const {
    if (stage() == Stage::kSymlinkExists) {
      return fmt::format("Can't make symlink at {}: existing destination is {}", op.dest, text);
    }
    if (stage() == Stage::kNotSymlink) {
      return fmt::format("Can't make symlink at {}: destination exists and is not a symlink",
                         op.dest);
    }
    if (auto m = DestinationMessage(op.dest, stage(), f.err)) return *m;
    return WithErrno(fmt::format("Can't make symlink at {}", op.dest), f.err);
  }
  std::string operator()(const ChmodOp& op) const {
    return WithErrno(fmt::format("Can't chmod {:#o} {}", op.mode, op.path), f.err);
  }
  std::string operator()(const SetHostnameOp& op) const {
    return WithErrno(fmt::format("Can't set hostname to {}", op.hostname), f.err);
  }
  std::string operator()(const OverlayOp& op) const {
    if (stage() == Stage::kOverlayOverlap) {
      return fmt::format("Can't make overlay mount on {}: Overlay directories may not overlap",
                         NewRoot(op.dest));
    }
    return WithErrno(fmt::format("Can't make overlay mount on {}", NewRoot(op.dest)), f.err);
  }
};

const char* JoinPidnsMessage(JoinPidnsStep step) {
  switch (step) {
    case JoinPidnsStep::kSetns:
      return "Setting pidns failed";
    case JoinPidnsStep::kFork:
      return "Can't fork for --pidns";
    case JoinPidnsStep::kUnshare:
      return "unshare pid ns";
    case JoinPidnsStep::kSendPid:
      return "Can't send pid";
  }
  return "Setting pidns failed";
}

const char* UsernsMessage(UsernsStep step) {
  switch (step) {
    case UsernsStep::kUidMap:
      return "setting up uid map";
    case UsernsStep::kSetgroups:
      return "error writing to setgroups";
    case UsernsStep::kGidMap:
      return "setting up gid map";
    case UsernsStep::kMaxUserNamespaces:
      return "cannot open /proc/sys/user/max_user_namespaces";
    case UsernsStep::kUnshare:
      return "unshare user ns";
    case UsernsStep::kBoundingSet:
      return "Dropping capabilities";
  }
  return "Dropping capabilities";
}

std::string LockFileMessage(const Plan& plan, const SetupFailure& f) {
  const std::string& path = f.detail < plan.lock_files.size() ? plan.lock_files[f.detail] : "";
  const char* what = f.stage == static_cast<uint32_t>(Stage::kLock) ? "Unable to lock file"
                                                                    : "Unable to open lock file";
  return WithErrno(fmt::format("{} {}", what, path), f.err);
}

std::string SeccompMessage(const SetupFailure& f) {
  if (static_cast<Phase>(f.step) == Phase::kReadSeccomp) {
    if (f.stage == static_cast<uint32_t>(Stage::kWriteData)) {
      return "Invalid seccomp data, must be multiple of 8";
    }
    return WithErrno("Can't read seccomp data", f.err);
  }
  if (f.err == EINVAL) {
    return "Unable to set up system call filtering as requested: prctl(PR_SET_SECCOMP) "
           "reported EINVAL. (Hint: this requires a kernel configured with CONFIG_SECCOMP "
           "and CONFIG_SECCOMP_FILTER.)";
  }
  return WithErrno("Unable to set up system call filtering as requested", f.err);
}

std::string SelfLimitName(const SelfLimits& limits, uint32_t index) {
  if (index < limits.sysctls.size()) {
    return fmt::format("Can't set /proc/sys/{} in the sandbox", limits.sysctls[index].name);
  }
  index -= static_cast<uint32_t>(limits.sysctls.size());
  int resource = index < limits.rlimits.size() ? limits.rlimits[index].resource : -1;
  return fmt::format("Can't lower resource limit {}", resource);
}

std::string PhaseMessage(const Plan& plan, const SetupFailure& f) {
  switch (static_cast<Phase>(f.step)) {
    case Phase::kWaitForParent:
      return WithErrno("Failed to wait for the monitor", f.err);
    case Phase::kDeathSignal:
      return WithErrno("prctl(PR_SET_PDEATHSIG)", f.err);
    case Phase::kUidMap:
    case Phase::kSetgroups:
    case Phase::kGidMap:
      // The first namespace's maps: only the first three steps are written there.
      return WithErrno(UsernsMessage(static_cast<UsernsStep>(
                           std::min(f.detail, static_cast<uint32_t>(UsernsStep::kGidMap)))),
                       f.err);
    case Phase::kLoopback:
      return WithErrno(netns::LoopbackStepMessage(static_cast<netns::LoopbackStep>(f.detail)),
                       f.err);
    case Phase::kMakeRootSlave:
      return WithErrno("Failed to make / slave", f.err);
    case Phase::kSetupRoot:
      return WithErrno("Failed to mount tmpfs", f.err);
    case Phase::kPivotRoot:
      return WithErrno(
          f.stage == static_cast<uint32_t>(Stage::kMount) ? "unmount old root" : "pivot_root",
          f.err);
    case Phase::kUnmountOldRoot:
      return WithErrno("unmount old root", f.err);
    case Phase::kSecondUserns:
      return WithErrno(UsernsMessage(static_cast<UsernsStep>(f.detail)), f.err);
    case Phase::kDisableUserns:
    case Phase::kAssertUsernsDisabled:
      return "creation of new user namespaces was not disabled as requested";
    case Phase::kCapabilities:
      return WithErrno("capset failed", f.err);
    case Phase::kSetDumpable:
      return WithErrno("can't set dumpable", f.err);
    case Phase::kSwitchIds:
      return WithErrno("Unable to switch to the sandbox uid/gid", f.err);
    case Phase::kLockFile:
      return LockFileMessage(plan, f);
    case Phase::kBlockFd:
      return WithErrno("Failed to read from --block-fd", f.err);
    case Phase::kReadSeccomp:
    case Phase::kLoadSeccomp:
      return SeccompMessage(f);
    case Phase::kChdir:
      return WithErrno(fmt::format("Can't chdir to {}", plan.cwd_candidates.front()), f.err);
    case Phase::kNewSession:
      return WithErrno("setsid", f.err);
    case Phase::kForkReaper:
      return WithErrno("Can't fork for pid 1", f.err);
    case Phase::kExec:
      return WithErrno(fmt::format("execvp {}", plan.exec_file), f.err);
    case Phase::kJoinPidns:
      return WithErrno(JoinPidnsMessage(static_cast<JoinPidnsStep>(f.detail)), f.err);
    case Phase::kSwitchJoinedIds:
      return static_cast<JoinedIdsStep>(f.detail) == JoinedIdsStep::kSetuid
                 ? WithErrno(fmt::format("unable to switch to uid {}",
                                         plan.joined.switch_uid.value_or(0)),
                             f.err)
                 : WithErrno(fmt::format("unable to switch to gid {}",
                                         plan.joined.switch_gid.value_or(0)),
                             f.err);
    case Phase::kJoinUserns2:
      return WithErrno("Setting userns2 failed", f.err);
    case Phase::kCreateNetns:
      // The text clone3 failing on CLONE_NEWNET gets.
      return NamespaceCreationError(f.err).Render();
    case Phase::kSelfLimits:
      return WithErrno(SelfLimitName(plan.self_limits, f.detail), f.err);
  }
  return WithErrno(fmt::format("setup step {:#x} failed", f.step), f.err);
}

}  // namespace

base::Error NamespaceCreationError(int err) {
  if (err == ENOSPC) {
    return base::Error::Message(
        "Creating new namespace failed: nesting depth or /proc/sys/user/max_*_namespaces "
        "exceeded (ENOSPC)");
  }
  return {err, "Creating new namespace failed"};
}

std::string RenderFailure(const Plan& plan, const SetupFailure& failure, const std::string& text) {
  if (failure.step < plan.ops.size()) {
    return std::visit(OpMessage{failure, text}, plan.ops[failure.step]);
  }
  return PhaseMessage(plan, failure);
}

}  // namespace sbx::runtime
