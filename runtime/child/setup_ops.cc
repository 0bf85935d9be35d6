#include "runtime/child/setup_ops.h"

#include <fcntl.h>
#include <linux/limits.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/unique_fd.h"
#include "runtime/child/mount_api.h"
#include "runtime/child/paths.h"

namespace sbx::runtime::child {
namespace {

constexpr mode_t kDefaultDirMode = 0755;

// bwrap narrows auto-created parents when --perms denies group or other entirely.
mode_t ParentMode(const std::optional<mode_t>& perms) {
  mode_t mode = kDefaultDirMode;
  if (!perms) return mode;
  if ((*perms & 070) == 0) mode &= ~static_cast<mode_t>(050);
  if ((*perms & 07) == 0) mode &= ~static_cast<mode_t>(05);
  return mode;
}

uint64_t BindFlags(bool read_only, bool allow_devices) {
  uint64_t flags = MOUNT_ATTR_NOSUID;
  if (!allow_devices) flags |= MOUNT_ATTR_NODEV;
  if (read_only) flags |= MOUNT_ATTR_RDONLY;
  return flags;
}

// Attaches the detached tree `tree_fd` (already flagged) at `dest`, creating a directory
// or an empty file there to match the source's type.
StepResult AttachTree(const SetupContext& ctx, int tree_fd, const std::string& dest) {
  struct stat st {};
  if (::fstat(tree_fd, &st) != 0) return {errno, Stage::kOpenSource};
  int dest_fd = -1;
  StepResult r =
      S_ISDIR(st.st_mode)
          ? EnsureDir(ctx.root_fd, dest.c_str(), kDefaultDirMode, kDefaultDirMode, &dest_fd)
          : EnsureFile(ctx.root_fd, dest.c_str(), kDefaultDirMode, 0444, &dest_fd);
  if (r.failed()) return r;
  const base::UniqueFd at(dest_fd);
  int err = AttachOnFd(tree_fd, at.get());
  return {err, err != 0 ? Stage::kMount : Stage::kNone};
}

StepResult DoBind(const SetupContext& ctx, const BindOp& op, OpSources& src) {
  if (src.fds[0] < 0) return {};  // -try with a missing source
  if (int err = SetMountFlags(src.fds[0], BindFlags(op.read_only, op.allow_devices), true)) {
    return {err, Stage::kSetAttr};
  }
  return AttachTree(ctx, src.fds[0], op.dest);
}

StepResult DoBindFd(const SetupContext& ctx, const BindFdOp& op, OpSources& src) {
  if (int err = SetMountFlags(src.fds[0], BindFlags(op.read_only, false), true)) {
    return {err, Stage::kSetAttr};
  }
  StepResult r = AttachTree(ctx, src.fds[0], op.dest);
  if (r.failed()) return r;
  // The identity check bwrap makes (CVE-2024-42472): what is mounted at DEST now must be
  // the object the caller's fd refers to.
  int dest_fd = -1;
  if (int err = OpenInRoot(ctx.root_fd, op.dest.c_str(), O_PATH, &dest_fd)) {
    return {err, Stage::kIdentity};
  }
  const base::UniqueFd dest(dest_fd);
  struct stat want {
  }, got{};
  bool same = ::fstat(op.fd, &want) == 0 && ::fstat(dest.get(), &got) == 0 &&
              want.st_dev == got.st_dev && want.st_ino == got.st_ino;
  ::close(op.fd);  // the --bind-fd descriptor is used up once mounted
  return same ? StepResult{} : StepResult{EXDEV, Stage::kIdentity};
}

// Mounts a fresh filesystem at `dest` (a directory, created when missing).
StepResult MountNew(const SetupContext& ctx, const std::string& dest, mode_t parent_mode,
                    const char* fs_type, const FsOption* options, int option_count, uint64_t attrs,
                    int* out_mount_fd = nullptr) {
  int dest_fd = -1;
  StepResult r = EnsureDir(ctx.root_fd, dest.c_str(), parent_mode, kDefaultDirMode, &dest_fd);
  if (r.failed()) return r;
  int mnt = -1;
  int err = NewMount(fs_type, options, option_count, attrs, &mnt);
  if (err == 0) err = AttachOnFd(mnt, dest_fd);
  ::close(dest_fd);
  if (err != 0) {
    if (mnt >= 0) ::close(mnt);
    return {err, Stage::kMount};
  }
  if (out_mount_fd != nullptr) {
    *out_mount_fd = mnt;
  } else {
    ::close(mnt);
  }
  return {};
}

StepResult DoTmpfs(const SetupContext& ctx, const TmpfsOp& op) {
  char mode_buf[24];
  char size_buf[24];
  char inodes_buf[24];
  FsOption options[3] = {{"mode", FormatUnsigned(mode_buf, op.perms.value_or(0755), 8)}};
  int count = 1;
  if (op.size) options[count++] = {"size", FormatUnsigned(size_buf, *op.size, 10)};
  if (op.nr_inodes) options[count++] = {"nr_inodes", FormatUnsigned(inodes_buf, *op.nr_inodes, 10)};
  return MountNew(ctx, op.dest, ParentMode(op.perms), "tmpfs", options, count,
                  MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
}

StepResult DoMqueue(const SetupContext& ctx, const MqueueOp& op) {
  return MountNew(ctx, op.dest, kDefaultDirMode, "mqueue", nullptr, 0, 0);
}

StepResult DoDir(const SetupContext& ctx, const DirOp& op) {
  int fd = -1;
  StepResult r =
      EnsureDir(ctx.root_fd, op.dest.c_str(), ParentMode(op.perms), op.perms.value_or(0755), &fd);
  if (!r.failed()) ::close(fd);
  return r;
}

// Copies everything readable from `from` to `to`.
int CopyFd(int from, int to) {
  char buf[16384];
  for (;;) {
    ssize_t n = ::read(from, buf, sizeof(buf));
    if (n == 0) return 0;
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    for (ssize_t off = 0; off < n;) {
      ssize_t w = ::write(to, buf + off, static_cast<size_t>(n - off));
      if (w < 0) {
        if (errno == EINTR) continue;
        return errno;
      }
      off += w;
    }
  }
}

StepResult DoFile(const SetupContext& ctx, const FileOp& op) {
  char buffer[PATH_MAX];
  ParentDir parent;
  if (int err = MakeParents(ctx.root_fd, op.dest.c_str(), ParentMode(op.perms), buffer, &parent)) {
    return {err, Stage::kMakeParents};
  }
  int fd = ::openat(parent.fd, parent.leaf, O_CREAT | O_WRONLY | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
                    op.perms.value_or(0666));
  int err = fd < 0 ? errno : 0;
  ::close(parent.fd);
  if (err != 0) return {err, Stage::kCreateFile};
  err = CopyFd(op.fd, fd);
  ::close(fd);
  ::close(op.fd);
  return {err, err != 0 ? Stage::kWriteData : Stage::kNone};
}

StepResult DoBindData(const SetupContext& ctx, const BindDataOp& op, size_t index) {
  // The data lives in a file on the setup tmpfs, outside the future root, so that after
  // the pivot only the bind mount of it is reachable.
  char name[32] = "bind-data-";
  FormatUnsigned(name + std::strlen(name), index, 10);
  int fd =
      ::openat(ctx.setup_fd, name, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, op.perms.value_or(0600));
  if (fd < 0) return {errno, Stage::kWriteData};
  int err = CopyFd(op.fd, fd);
  ::close(fd);
  ::close(op.fd);
  if (err != 0) return {err, Stage::kWriteData};
  int tree = -1;
  if ((err = CloneTree(ctx.setup_fd, name, &tree)) != 0) return {err, Stage::kMount};
  StepResult r{SetMountFlags(tree, BindFlags(op.read_only, false), true), Stage::kSetAttr};
  if (!r.failed()) r = AttachTree(ctx, tree, op.dest);
  ::close(tree);
  // Only once it is mounted: a mount of an unlinked file cannot be attached.
  ::unlinkat(ctx.setup_fd, name, 0);
  return r;
}

StepResult DoChmod(const SetupContext& ctx, const ChmodOp& op) {
  int fd = -1;
  if (int err = OpenInRoot(ctx.root_fd, op.path.c_str(), O_PATH, &fd)) return {err, Stage::kNone};
  // chmod through the O_PATH fd's magic link: the exact inode resolved inside the root.
  char link[48] = "/proc/self/fd/";
  FormatUnsigned(link + std::strlen(link), static_cast<uint64_t>(fd), 10);
  int err = ::fchmodat(AT_FDCWD, link, op.mode, 0) == 0 ? 0 : errno;
  ::close(fd);
  return {err, Stage::kNone};
}

StepResult DoRemountRo(const SetupContext& ctx, const RemountRoOp& op) {
  int fd = -1;
  if (int err = OpenInRoot(ctx.root_fd, op.dest.c_str(), O_PATH, &fd)) {
    return {err, Stage::kOpenDest};
  }
  // mount_setattr on a path that is not a mount root would change the mount containing
  // it, so insist, as bwrap does, that DEST is a mount point.
  struct statx stx {};
  bool is_root = ::statx(fd, "", AT_EMPTY_PATH, 0, &stx) == 0 &&
                 (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT) != 0;
  int err = is_root ? SetMountFlags(fd, MOUNT_ATTR_RDONLY, false) : 0;
  ::close(fd);
  if (!is_root) return {EINVAL, Stage::kNotMountPoint};
  return {err, err != 0 ? Stage::kSetAttr : Stage::kNone};
}

StepResult DoHostname(const SetHostnameOp& op) {
  return {::sethostname(op.hostname.data(), op.hostname.size()) == 0 ? 0 : errno, Stage::kNone};
}

}  // namespace

// Defined in setup_special_ops.cc: --proc, --dev, --symlink, overlays.
StepResult DoProc(const SetupContext& ctx, const ProcOp& op, OpSources& src);
StepResult DoDev(const SetupContext& ctx, const DevOp& op, OpSources& src);
StepResult DoSymlink(const SetupContext& ctx, const SymlinkOp& op);
StepResult DoOverlay(const SetupContext& ctx, const OverlayOp& op, size_t index);

// std::visit throws only for a valueless variant, which no Plan op ever is.
// NOLINTNEXTLINE(bugprone-exception-escape)
StepResult ExecuteOp(const SetupContext& ctx, size_t index) noexcept {
  OpSources& src = ctx.sources[index];
  struct Visitor {
    const SetupContext& ctx;
    OpSources& src;
    size_t index;
    StepResult operator()(const BindOp& op) const { return DoBind(ctx, op, src); }
    StepResult operator()(const BindFdOp& op) const { return DoBindFd(ctx, op, src); }
    StepResult operator()(const RemountRoOp& op) const { return DoRemountRo(ctx, op); }
    StepResult operator()(const ProcOp& op) const { return DoProc(ctx, op, src); }
    StepResult operator()(const DevOp& op) const { return DoDev(ctx, op, src); }
    StepResult operator()(const TmpfsOp& op) const { return DoTmpfs(ctx, op); }
    StepResult operator()(const MqueueOp& op) const { return DoMqueue(ctx, op); }
    StepResult operator()(const DirOp& op) const { return DoDir(ctx, op); }
    StepResult operator()(const FileOp& op) const { return DoFile(ctx, op); }
    StepResult operator()(const BindDataOp& op) const { return DoBindData(ctx, op, index); }
    StepResult operator()(const SymlinkOp& op) const { return DoSymlink(ctx, op); }
    StepResult operator()(const ChmodOp& op) const { return DoChmod(ctx, op); }
    StepResult operator()(const SetHostnameOp& op) const { return DoHostname(op); }
    StepResult operator()(const OverlayOp& op) const { return DoOverlay(ctx, op, index); }
  };
  return std::visit(Visitor{ctx, src, index}, ctx.plan->ops[index]);
}

}  // namespace sbx::runtime::child
