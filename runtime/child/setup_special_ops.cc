// The ops with more than one mount or a special rule: --proc, --dev, --symlink, overlays,
// and the up-front opening of every op's host sources.
#include <fcntl.h>
#include <linux/limits.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "runtime/child/mount_api.h"
#include "runtime/child/paths.h"
#include "runtime/child/setup_ops.h"

namespace sbx::runtime::child {

namespace {

// The parts of procfs a sandboxed root could use to change the host: covered read-only.
constexpr const char* kProcCovered[] = {"sys", "sysrq-trigger", "irq", "bus"};

// Like bwrap, only what the setup process could write is covered: a path that is already
// read-only to it (EACCES, EROFS) or missing (ENOENT) is left alone.
StepResult CoverReadOnly(int proc_fd, const char* name) {
  if (::faccessat(proc_fd, name, W_OK, 0) != 0) {
    if (errno == EACCES || errno == ENOENT || errno == EROFS) return {};
    return {errno, Stage::kProcCover};
  }
  int tree = -1;
  int err = CloneTree(proc_fd, name, &tree);
  if (err == 0) err = SetMountFlags(tree, MOUNT_ATTR_RDONLY, true);
  if (err == 0) err = AttachAt(tree, proc_fd, name);
  if (tree >= 0) ::close(tree);
  return {err, err != 0 ? Stage::kProcCover : Stage::kNone};
}

int MakeFileAt(int dir_fd, const char* name, mode_t mode) {
  int fd = ::openat(dir_fd, name, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, mode);
  if (fd < 0) return errno;
  ::close(fd);
  return 0;
}

StepResult PopulateDev(int dev_fd, OpSources& src) {
  for (int i = 0; i < kDevNodeCount + 1; ++i) {
    if (src.fds[i] < 0) continue;  // no console (stdout is not a tty)
    const char* name = i < kDevNodeCount ? kDevNodes[i] : "console";
    int err = MakeFileAt(dev_fd, name, 0444);
    if (err == 0) err = SetMountFlags(src.fds[i], MOUNT_ATTR_NOSUID, true);
    if (err == 0) err = AttachAt(src.fds[i], dev_fd, name);
    if (err != 0) return {err, Stage::kDevNode, static_cast<uint32_t>(i)};
  }
  static constexpr const char* kLinks[][2] = {
      {"/proc/self/fd/0", "stdin"}, {"/proc/self/fd/1", "stdout"}, {"/proc/self/fd/2", "stderr"},
      {"/proc/self/fd", "fd"},      {"/proc/kcore", "core"},       {"pts/ptmx", "ptmx"}};
  for (const auto& link : kLinks) {
    if (::symlinkat(link[0], dev_fd, link[1]) != 0) return {errno, Stage::kDevNode};
  }
  if (::mkdirat(dev_fd, "shm", 0755) != 0 || ::mkdirat(dev_fd, "pts", 0755) != 0) {
    return {errno, Stage::kDevNode};
  }
  FsOption pts_options[] = {{"newinstance", nullptr}, {"ptmxmode", "0666"}, {"mode", "620"}};
  int pts = -1;
  int err = NewMount("devpts", pts_options, 3, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, &pts);
  if (err == 0) err = AttachAt(pts, dev_fd, "pts");
  if (pts >= 0) ::close(pts);
  return {err, err != 0 ? Stage::kDevpts : Stage::kNone};
}

}  // namespace

StepResult DoProc(const SetupContext& ctx, const ProcOp& op, OpSources& src) {
  int dest_fd = -1;
  StepResult r = EnsureDir(ctx.root_fd, op.dest.c_str(), 0755, 0755, &dest_fd);
  if (r.failed()) return r;
  int mnt = src.fds[0];  // a clone of the host /proc when there is no new pid namespace
  int err = 0;
  if (mnt < 0) {
    err = NewMount("proc", nullptr, 0, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC,
                   &mnt);
  } else {
    err = SetMountFlags(mnt, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, true);
  }
  if (err == 0) err = AttachOnFd(mnt, dest_fd);
  ::close(dest_fd);
  if (err != 0) return {err, Stage::kMount};
  for (const char* name : kProcCovered) {
    r = CoverReadOnly(mnt, name);
    if (r.failed()) break;
  }
  ::close(mnt);
  src.fds[0] = -1;
  return r;
}

StepResult DoDev(const SetupContext& ctx, const DevOp& op, OpSources& src) {
  int dest_fd = -1;
  StepResult r = EnsureDir(ctx.root_fd, op.dest.c_str(), 0755, 0755, &dest_fd);
  if (r.failed()) return r;
  char size_buf[24];
  char inodes_buf[24];
  FsOption options[3] = {{"mode", "0755"}};
  int count = 1;
  if (op.size) options[count++] = {"size", FormatUnsigned(size_buf, *op.size, 10)};
  if (op.nr_inodes) options[count++] = {"nr_inodes", FormatUnsigned(inodes_buf, *op.nr_inodes, 10)};
  int mnt = -1;
  int err = NewMount("tmpfs", options, count, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, &mnt);
  if (err == 0) err = AttachOnFd(mnt, dest_fd);
  ::close(dest_fd);
  if (err != 0) {
    if (mnt >= 0) ::close(mnt);
    return {err, Stage::kMount};
  }
  r = PopulateDev(mnt, src);
  ::close(mnt);
  return r;
}

StepResult DoSymlink(const SetupContext& ctx, const SymlinkOp& op) {
  char buffer[PATH_MAX];
  ParentDir parent;
  if (int err = MakeParents(ctx.root_fd, op.dest.c_str(), 0755, buffer, &parent)) {
    return {err, Stage::kMakeParents};
  }
  StepResult r;
  if (::symlinkat(op.target.c_str(), parent.fd, parent.leaf) != 0) {
    r = {errno, Stage::kNone};
    if (errno == EEXIST) {
      // 0.9.0+: an existing symlink with the same target is fine; anything else is an
      // error that names what is there.
      ssize_t n = ::readlinkat(parent.fd, parent.leaf, ctx.failure_text, PATH_MAX - 1);
      if (n < 0) {
        r = {EEXIST, Stage::kNotSymlink};
      } else {
        ctx.failure_text[n] = '\0';
        bool same = op.target == ctx.failure_text;
        r = same ? StepResult{} : StepResult{EEXIST, Stage::kSymlinkExists};
      }
    }
  }
  ::close(parent.fd);
  return r;
}

// Appends "/proc/self/fd/N" to `out` (at `*len`, capacity `cap`). Overlayfs resolves its
// layer paths itself; through the magic link it gets exactly the directory opened before
// anything was mounted, even one the setup root now hides (under /tmp).
bool AppendFdPath(char* out, size_t* len, size_t cap, int fd, char separator) {
  char number[24];
  FormatUnsigned(number, static_cast<uint64_t>(fd), 10);
  size_t need = (separator != 0 ? 1 : 0) + std::strlen("/proc/self/fd/") + std::strlen(number);
  if (*len + need + 1 > cap) return false;
  if (separator != 0) out[(*len)++] = separator;
  std::strcpy(out + *len, "/proc/self/fd/");  // NOLINT: bounded above
  *len += std::strlen("/proc/self/fd/");
  std::strcpy(out + *len, number);  // NOLINT: bounded above
  *len += std::strlen(number);
  return true;
}

// Upper and work directories of a --tmp-overlay live on the setup tmpfs, which nobody can
// reach after the pivot: the writes are discarded with the sandbox.
int MakeTemporaryUpper(const SetupContext& ctx, size_t index, int* upper, int* work) {
  char name[48] = "tmp-overlay-upper-";
  FormatUnsigned(name + std::strlen(name), index, 10);
  if (::mkdirat(ctx.setup_fd, name, 0755) != 0) return errno;
  *upper = ::openat(ctx.setup_fd, name, O_PATH | O_DIRECTORY | O_CLOEXEC);
  std::memcpy(name, "tmp-overlay-work-", 18);
  FormatUnsigned(name + 17, index, 10);
  if (::mkdirat(ctx.setup_fd, name, 0755) != 0) return errno;
  *work = ::openat(ctx.setup_fd, name, O_PATH | O_DIRECTORY | O_CLOEXEC);
  return *upper < 0 || *work < 0 ? errno : 0;
}

StepResult DoOverlay(const SetupContext& ctx, const OverlayOp& op, size_t index) {
  OpSources& src = ctx.sources[index];
  size_t lowers = op.lower_sources.size();
  int upper = src.fds[0];
  int work = src.fds[1];
  if (op.mode == OverlayOp::Mode::kTemporary) {
    if (int err = MakeTemporaryUpper(ctx, index, &upper, &work)) return {err, Stage::kMount};
  }
  // Last given is the top layer: lowerdir lists top first.
  char lower[PATH_MAX];
  size_t len = 0;
  for (size_t i = lowers; i > 0; --i) {
    if (!AppendFdPath(lower, &len, sizeof(lower), src.fds[1 + i], i == lowers ? 0 : ':')) {
      return {ENAMETOOLONG, Stage::kMount};
    }
  }
  char upper_path[48], work_path[48];
  size_t ulen = 0, wlen = 0;
  FsOption options[4] = {{"lowerdir", lower}, {"userxattr", nullptr}, {}, {}};
  int count = 2;
  if (op.mode != OverlayOp::Mode::kReadOnly) {
    AppendFdPath(upper_path, &ulen, sizeof(upper_path), upper, 0);
    AppendFdPath(work_path, &wlen, sizeof(work_path), work, 0);
    options[2] = {"upperdir", upper_path};
    options[3] = {"workdir", work_path};
    count = 4;
  }
  int dest_fd = -1;
  StepResult r = EnsureDir(ctx.root_fd, op.dest.c_str(), 0755, 0755, &dest_fd);
  if (r.failed()) return r;
  int mnt = -1;
  int err = NewMount("overlay", options, count, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, &mnt);
  if (err == 0) err = AttachOnFd(mnt, dest_fd);
  if (mnt >= 0) ::close(mnt);
  ::close(dest_fd);
  if (err == ELOOP) return {err, Stage::kOverlayOverlap};
  return {err, err != 0 ? Stage::kMount : Stage::kNone};
}

// Opens an overlay's host directories: fds[0] upper, fds[1] work, fds[2...] the lowers in
// command-line order.
int OpenOverlaySources(const OverlayOp& op, OpSources& src) {
  if (op.lower_sources.size() + 2 > static_cast<size_t>(kMaxSourcesPerOp)) return E2BIG;
  auto open_dir = [](const std::string& path, int* fd) {
    *fd = ::open(path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    return *fd < 0 ? errno : 0;
  };
  int err = 0;
  if (op.mode == OverlayOp::Mode::kReadWrite) {
    if ((err = open_dir(op.upper, &src.fds[0])) != 0) return err;
    if ((err = open_dir(op.work, &src.fds[1])) != 0) return err;
  }
  for (size_t i = 0; i < op.lower_sources.size() && err == 0; ++i) {
    err = open_dir(op.lower_sources[i], &src.fds[2 + i]);
  }
  return err;
}

StepResult OpenSources(const SetupContext& ctx) noexcept {
  const auto& ops = ctx.plan->ops;
  for (size_t i = 0; i < ops.size(); ++i) {
    OpSources& src = ctx.sources[i];
    int err = 0;
    if (const auto* bind = std::get_if<BindOp>(&ops[i])) {
      err = CloneTree(AT_FDCWD, bind->source.c_str(), &src.fds[0]);
      if (err == ENOENT && bind->skip_missing) err = 0;
    } else if (const auto* bind_fd = std::get_if<BindFdOp>(&ops[i])) {
      // The fd names an object of the caller's mount namespace, which cannot be cloned
      // from this one: like bwrap, take its path through /proc/self/fd/N (a closed fd is
      // "No such file or directory" there) and resolve that here. DoBindFd then checks
      // that what got mounted is the fd's object (CVE-2024-42472).
      char link[32] = "/proc/self/fd/";
      FormatUnsigned(link + 14, static_cast<uint64_t>(bind_fd->fd), 10);
      char target[PATH_MAX];
      ssize_t n = ::readlink(link, target, sizeof(target) - 1);
      if (n < 0) {
        err = errno == EBADF ? ENOENT : errno;
      } else {
        target[n] = '\0';
        err = CloneTree(AT_FDCWD, target, &src.fds[0]);
      }
    } else if (const auto* overlay = std::get_if<OverlayOp>(&ops[i])) {
      err = OpenOverlaySources(*overlay, src);
    } else if (std::holds_alternative<ProcOp>(ops[i]) && !ctx.plan->fresh_proc) {
      err = CloneTree(AT_FDCWD, "/proc", &src.fds[0]);
    } else if (std::holds_alternative<DevOp>(ops[i])) {
      char path[16] = "/dev/";
      for (int n = 0; n < kDevNodeCount && err == 0; ++n) {
        std::strcpy(path + 5, kDevNodes[n]);  // NOLINT: bounded names
        err = CloneTree(AT_FDCWD, path, &src.fds[n]);
      }
      if (err == 0 && ctx.plan->stdout_tty) {
        err = CloneTree(AT_FDCWD, ctx.plan->stdout_tty->c_str(), &src.fds[kDevNodeCount]);
      }
    }
    if (err != 0) return {err, Stage::kOpenSource, static_cast<uint32_t>(i)};
  }
  return {};
}

}  // namespace sbx::runtime::child
