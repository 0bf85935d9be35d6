#include "dispatch/git/workspace.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "base/exit_status.h"
#include "base/safe_path.h"
#include "base/syscalls.h"
#include "dispatch/git/clone_checkout.h"
#include "dispatch/git/git_child_env.h"
#include "dispatch/git/host_git.h"
#include "dispatch/sys/caller_stderr.h"
#include "dispatch/sys/run_as_child.h"
#include "dispatch/sys/stop_signals.h"
#include "dispatch/sys/subordinate_env.h"

namespace sbx::dispatch {
namespace {

// Git's own rule for "this is a local path": no "://", and no ':' before the first '/'
// (which would be scp-like "host:path").
bool IsLocalSource(const std::string& source) {
  if (source.find("://") != std::string::npos) return false;
  auto colon = source.find(':');
  return colon == std::string::npos || source.find('/') < colon;
}

std::string Absolute(const std::string& path) {
  if (path.starts_with('/')) return path;
  char cwd[PATH_MAX];
  if (::getcwd(cwd, sizeof(cwd)) == nullptr) return path;
  return fmt::format("{}/{}", cwd, path);
}

// The clone's safe directories: exactly the source (its work tree and its .git), so git's
// own ownership check still protects everything else. They have to be global
// configuration because git drops GIT_CONFIG_COUNT/PARAMETERS for the upload-pack it runs
// in the source repository.
std::vector<std::string> CloneSafeDirectories(const std::string& source, bool local) {
  if (!local) return {};
  char real[PATH_MAX];
  std::string path = ::realpath(source.c_str(), real) != nullptr ? real : source;
  std::vector<std::string> dirs = {path, path + "/.git"};
  // A linked worktree's git directories are elsewhere: git checks those too.
  if (auto found = FindSourceGitDirs(path)) {
    dirs.push_back(found->git_dir);
    dirs.push_back(found->common_dir);
  }
  return dirs;
}

// A .git (directory, or a linked worktree's file) or a bare repository's HEAD and
// objects: what git clone needs to find a repository in a local directory.
bool LooksLikeLocalRepository(const std::string& dir) {
  struct stat st {};
  for (const char* name : {"/.git", "/HEAD"}) {
    if (::stat((dir + name).c_str(), &st) != 0) continue;
    if (std::string_view(name) == "/.git") return true;
    return ::stat((dir + "/objects").c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  }
  return false;
}

[[noreturn]] void CloneChild(const std::string& source, int dest_fd, int stderr_pipe,
                             const base::ChildReport& report) {
  bool local = IsLocalSource(source);
  if (::fchdir(dest_fd) != 0) FailGitStep(report, GitChildStep::kEnter, errno);
  if (local) {
    // A missing repository is git's to report; one that exists but is out of reach is ours.
    struct stat st {};
    if (::stat(source.c_str(), &st) != 0
            ? errno != ENOENT
            : ::access(source.c_str(), S_ISDIR(st.st_mode) ? R_OK | X_OK : R_OK) != 0) {
      FailGitStep(report, GitChildStep::kUnreadable, errno);
    }
    if (S_ISDIR(st.st_mode) && !LooksLikeLocalRepository(source)) {
      FailGitStep(report, GitChildStep::kNotARepository, 0);
    }
  }
  const int err = PrepareGitChild({.safe_directories = CloneSafeDirectories(source, local)});
  if (err != 0) FailGitStep(report, GitChildStep::kConfigure, err);
  // Progress is a notice: shown at a terminal, unless -q.
  bool tty = ::isatty(STDERR_FILENO) == 1 && !NoticesQuiet();
  if (stderr_pipe >= 0) ::dup2(stderr_pipe, STDERR_FILENO);
  const char* argv[] = {
      "git", "clone", tty ? "--progress" : "--quiet", "--no-hardlinks", "--", source.c_str(),
      ".",   nullptr};
  ::execvp("git", const_cast<char* const*>(argv));
  FailGitStep(report, GitChildStep::kExec, errno);
}

// What the clone child's failed step means.
base::Error CloneStepError(const base::ChildFailure& failure, const std::string& source,
                           const std::string& who) {
  switch (static_cast<GitChildStep>(failure.step)) {
    case GitChildStep::kEnter:
      return {failure.err, fmt::format("--repo: {} can't enter its workspace", who)};
    case GitChildStep::kUnreadable:
      return base::Error::Message(fmt::format(
          "--repo {}: {} can't read it (the clone runs as the sandbox's user); make it readable "
          "by {} or choose --run-as its owner",
          source, who, who));
    case GitChildStep::kNotARepository:
      return base::Error::Message(fmt::format(
          "--repo {}: not a git repository (give its top directory, or --workspace {} to use "
          "the directory as it is)",
          source, source));
    case GitChildStep::kConfigure:
      return {failure.err, "can't write the clone's git configuration (memfd)"};
    case GitChildStep::kExec:
      break;
  }
  if (failure.err == ENOENT) {
    return base::Error::Message("cannot clone the repository: git is not installed");
  }
  return {failure.err, "cannot clone the repository: can't run git"};
}

}  // namespace

std::string NewDispatchId() {
  unsigned char bytes[6] = {};
  if (::getrandom(bytes, sizeof(bytes), 0) != sizeof(bytes)) {
    auto now = static_cast<uint64_t>(::time(nullptr)) ^ static_cast<uint64_t>(::getpid());
    for (auto& b : bytes) {
      b = static_cast<unsigned char>(now & 0xff);
      now >>= 8;
    }
  }
  std::string id;
  for (unsigned char b : bytes) id += fmt::format("{:02x}", b);
  return id;
}

base::Result<std::string> DefaultWorkspaceRoot(bool root_caller) {
  constexpr std::string_view kBelow = "/ateam-sandbox/dispatches";
  // Under `run --identity subuid`: a place of the caller's own that the subordinate ids can
  // reach (a home is often 0700), never host root's name.
  if (auto ns = InSubordinateNamespace(); root_caller && ns) {
    return fmt::format("/var/tmp/ateam-sandbox-{}/dispatches", ns->caller_uid);
  }
  if (root_caller) return fmt::format("/var/tmp{}", kBelow);
  for (const char* name : {"XDG_CACHE_HOME", "HOME"}) {
    const char* value = std::getenv(name);  // NOLINT(concurrency-mt-unsafe)
    if (value != nullptr && *value == '/') {
      return fmt::format("{}{}{}", value, std::string_view(name) == "HOME" ? "/.cache" : "",
                         kBelow);
    }
  }
  const char* runtime_dir = std::getenv("XDG_RUNTIME_DIR");  // NOLINT(concurrency-mt-unsafe)
  if (runtime_dir != nullptr && *runtime_dir == '/')
    return fmt::format("{}{}", runtime_dir, kBelow);
  return base::Error::Message(
      "no private place for the dispatch's files: set HOME or XDG_CACHE_HOME, or give "
      "--workspace-root DIR");
}

base::Status CloneRepository(const std::string& source, int dest_fd, const RunAsIds& ids,
                             int stop_fd, int* stopped_by) {
  std::string from = IsLocalSource(source) ? Absolute(source) : source;
  // Git's complaints are collected and reduced to one line, unless a person watches the
  // terminal (and did not say -q), who then sees git's own progress and messages.
  bool tty = ::isatty(STDERR_FILENO) == 1 && !NoticesQuiet();
  base::UniqueFd read_end;
  base::UniqueFd write_end;
  if (!tty) {
    auto pipe = base::MakePipe();
    if (!pipe) return pipe.error();
    read_end = std::move(pipe->read_end);
    write_end = std::move(pipe->write_end);
  }
  // Read until every git process closed the pipe, then waited for; only the first 64 KiB
  // are kept. A stop signal meanwhile kills git's whole process group.
  int pipe_fd = write_end ? write_end.get() : -1;
  std::string output;
  int stop_signal = 0;
  auto watch = [&](pid_t pid) {
    write_end.reset();
    // Both sides set the group, so it exists whichever runs first.
    (void)::setpgid(pid, pid);
    base::UniqueFd pidfd(base::PidfdOpen(pid));
    if (stop_fd >= 0 && pidfd) {
      stop_signal = WaitOrStop(pidfd.get(), stop_fd, pid, read_end.get(), &output, 65536);
    }
    if (!read_end || stop_signal != 0) return;
    char buf[4096];
    ssize_t n = 0;
    while ((n = ::read(read_end.get(), buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR)) {
      if (n > 0 && output.size() < 65536) output.append(buf, static_cast<size_t>(n));
    }
  };
  auto child = RunChildAs(
      ids,
      [&](const base::ChildReport& report) -> int {
        (void)::setpgid(0, 0);
        CloneChild(from, dest_fd, pipe_fd, report);
      },
      watch);
  if (!child) return child.error();
  if (stop_signal != 0) {
    if (stopped_by != nullptr) *stopped_by = stop_signal;
    return base::Error::Message(
        fmt::format("interrupted by {} during the clone", StopSignalName(stop_signal)));
  }
  std::string who = ids ? fmt::format("uid {}", ids->uid) : std::string("this user");
  if (child->failure) return CloneStepError(*child->failure, source, who);
  int code = base::ExitCodeFromWaitStatus(child->status);
  if (code == 0) return {};
  std::string complaint = GitComplaintLine(output);
  return base::Error::Message(fmt::format("git clone of {} failed (exit status {}){}{}", source,
                                          code, complaint.empty() ? "" : ": ", complaint));
}

namespace {

constexpr int kGivenDirFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

// A missing given directory, made in `parent_fd` and opened. The caller makes it itself
// when the parent is its own or root's and nobody else can write there, then hands it to
// `ids` through its fd; in any other parent a child that became `ids` makes it (the caller
// itself without ids), so nothing is made as root where another uid could change things.
// Either way the directory opened, never through a link, must be its maker's: one swapped
// in meanwhile is refused.
struct MadeGivenDir {
  base::UniqueFd fd;
  RunAsIds remover;  // who removes it again: the caller (nullopt) in a parent of its own or root's
};
base::Result<MadeGivenDir> MakeGivenDir(const std::string& flag, const std::string& path,
                                        int parent_fd, const std::string& name,
                                        const RunAsIds& ids) {
  struct stat parent {};
  if (::fstat(parent_fd, &parent) != 0) return base::ErrnoError(flag, path);
  const uid_t me = ::geteuid();
  const bool own_parent = base::CheckDirStat(parent, {.owner = me}, path).ok();
  const uid_t maker = own_parent || !ids ? me : ids->uid;
  if (own_parent) {
    if (::mkdirat(parent_fd, name.c_str(), 0755) != 0) {
      return base::ErrnoError(flag + ": can't create", path);
    }
  } else {
    auto made = RunChildAs(ids, [&](const base::ChildReport& report) -> int {
      if (::mkdirat(parent_fd, name.c_str(), 0755) != 0) report.Fail(1, errno);
      return 0;
    });
    if (!made) return made.error();
    if (made->failure || made->status != 0) {
      return base::Error(
          made->failure ? made->failure->err : EPERM,
          ids ? fmt::format("{} {}: the sandbox's uid {} can't create it in a directory of uid "
                            "{} (create it first)",
                            flag, path, ids->uid, parent.st_uid)
              : fmt::format("{} {}: can't create it", flag, path));
    }
  }
  base::UniqueFd fd(::openat(parent_fd, name.c_str(), kGivenDirFlags));
  if (!fd) return base::ErrnoError(flag, path);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return base::ErrnoError(flag, path);
  if (st.st_uid != maker) {
    return base::Error::Message(fmt::format("{} {}: replaced by uid {} while it was made; not used",
                                            flag, path, st.st_uid));
  }
  if (own_parent && ids && ::fchown(fd.get(), ids->uid, ids->gid) != 0) {
    return base::ErrnoError("Can't hand over", path);
  }
  const bool callers_parent = parent.st_uid == me || parent.st_uid == 0;
  return MadeGivenDir{std::move(fd), callers_parent ? RunAsIds() : ids};
}

}  // namespace

base::Result<GivenDir> GivenDir::Open(const std::string& flag, const std::string& path, bool create,
                                      const RunAsIds& ids, const OpenedCheck& opened) {
  std::string absolute = Absolute(path);
  while (absolute.size() > 1 && absolute.ends_with('/')) absolute.pop_back();
  auto slash = absolute.rfind('/');
  std::string parent = slash == 0 ? "/" : absolute.substr(0, slash);
  std::string name = absolute.substr(slash + 1);
  if (name.empty() || name == "." || name == "..") {
    return base::Error::Message(fmt::format("{} {}: give the directory by its name", flag, path));
  }
  char real[PATH_MAX];
  if (::realpath(parent.c_str(), real) == nullptr) return base::ErrnoError(flag, path);
  std::string real_parent = real;
  base::UniqueFd parent_fd(::open(real, O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!parent_fd) return base::ErrnoError(flag, path);
  GivenDir dir;
  base::UniqueFd fd(::openat(parent_fd.get(), name.c_str(), kGivenDirFlags));
  std::optional<RunAsIds> made_by;  // set when this call made it: who removes it again
  if (!fd && errno == ENOENT && create) {
    auto made = MakeGivenDir(flag, path, parent_fd.get(), name, ids);
    if (!made) return made.error();
    fd = std::move(made->fd);
    made_by = made->remover;
  }
  if (!fd) {
    struct stat link {};
    if (errno == ELOOP ||
        (errno == ENOTDIR &&
         ::fstatat(parent_fd.get(), name.c_str(), &link, AT_SYMLINK_NOFOLLOW) == 0 &&
         S_ISLNK(link.st_mode))) {
      return base::Error::Message(
          fmt::format("{} {}: is a symlink; give the directory itself", flag, path));
    }
    return base::ErrnoError(flag, path);
  }
  if (opened) {
    if (auto st = opened(fd.get()); !st) return st.error();
  }
  if (made_by) dir.made_ = MadeHere{std::move(parent_fd), name, *made_by};
  dir.path_ = real_parent == "/" ? "/" + name : real_parent + "/" + name;
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return base::ErrnoError(flag, path);
  // Only the top, and only for the time of the dispatch: the sandbox's uid must be able to
  // write there; what is inside stays as it is. An fd, so nothing can be swapped under it.
  if (ids && (st.st_uid != ids->uid || st.st_gid != ids->gid)) {
    if (::fchown(fd.get(), ids->uid, ids->gid) != 0) return base::ErrnoError(flag, path);
    dir.restore_ = st;
  }
  dir.fd_ = std::move(fd);
  return dir;
}

void GivenDir::RemoveIfMade() {
  if (!made_) return;
  MadeHere made = std::move(*made_);
  made_.reset();
  // rmdir: only while it is still empty, so nothing anybody put in it goes.
  (void)RunInChildAs(made.remover, [&]() -> int {
    return ::unlinkat(made.parent_fd.get(), made.name.c_str(), AT_REMOVEDIR) == 0 ? 0 : errno;
  });
}

GivenDir::~GivenDir() {
  if (!restore_ || !fd_) return;
  // Owner first (which clears set-id bits), then the mode it had.
  (void)::fchown(fd_.get(), restore_->st_uid, restore_->st_gid);
  (void)::fchmod(fd_.get(), restore_->st_mode & 07777);
}

}  // namespace sbx::dispatch
