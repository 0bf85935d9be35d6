#include "dispatch/git/clone_checkout.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>

#include <fmt/format.h>

#include "base/unique_fd.h"
#include "dispatch/git/clone_submodules.h"
#include "dispatch/git/host_git.h"
#include "dispatch/git/source_index.h"
#include "dispatch/sys/at_file.h"
#include "dispatch/sys/run_as_child.h"

namespace sbx::dispatch {
namespace {

std::string Trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text;
}

// The NUL-separated records of git's -z output.
std::vector<std::string> ZRecords(const std::string& text) {
  std::vector<std::string> records;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\0', start);
    if (end == std::string::npos) end = text.size();
    if (end > start) records.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return records;
}

base::Result<HostGitRun> Git(const RunAsIds& ids, int ws_fd, const std::vector<std::string>& args,
                             const HostGitOptions& options = {}) {
  return RunHostGit(ids, ws_fd, args, options);
}

HostGitOptions OutputTo(int fd) {
  HostGitOptions options;
  options.stdout_fd = fd;
  return options;
}

HostGitOptions InputFrom(int fd) {
  HostGitOptions options;
  options.stdin_fd = fd;
  return options;
}

// --rev: a local or remote-tracking branch is checked out by name (what a person gets from
// `git checkout NAME`), anything else (a tag, a commit) detached at its commit.
base::Status CheckoutRevision(const std::string& source, int ws_fd, const std::string& rev,
                              const RunAsIds& ids) {
  auto bad = [&]() {
    return base::Error::Message(
        fmt::format("--rev {}: not a branch, tag or commit of {}", rev, source));
  };
  if (rev.empty() || rev.starts_with('-') || rev.find('\n') != std::string::npos) return bad();
  // The clone has the source's branches as origin/NAME; tags and commits as they are.
  auto resolve = [&](const std::string& name) -> base::Result<std::string> {
    auto run = Git(ids, ws_fd,
                   {"rev-parse", "--verify", "--quiet", "--end-of-options", name + "^{commit}"});
    if (!run) return run.error();
    return run->exit_code == 0 ? Trimmed(run->output) : std::string();
  };
  auto branch = resolve("refs/remotes/origin/" + rev);
  if (!branch) return branch.error();
  std::vector<std::string> args = {"checkout", "--quiet"};
  if (!branch->empty() && rev != "HEAD") {
    args.push_back(rev);
  } else {
    auto commit = resolve(rev);
    if (!commit) return commit.error();
    if (commit->empty()) return bad();
    args.insert(args.end(), {"--detach", *commit});
  }
  auto checkout = Git(ids, ws_fd, args);
  if (!checkout) return checkout.error();
  if (checkout->exit_code != 0) {
    return base::Error::Message(
        fmt::format("--rev {}: git checkout failed: {}", rev, GitComplaintLine(checkout->errors)));
  }
  return {};
}

// The source's work tree against the clone's HEAD, read with the clone's git directory
// (and so the clone's config): submodules are not looked into (git would run in them).
struct SourceChanges {
  int tracked = 0;
  int untracked = 0;
};

std::vector<std::string> AgainstSource(const std::string& work_tree,
                                       std::vector<std::string> args) {
  std::vector<std::string> full = {"--git-dir=.git", "--work-tree=" + work_tree};
  full.insert(full.end(), args.begin(), args.end());
  return full;
}

// `index_file`: the index git compares with (source_index.h), "" for the clone's own.
HostGitOptions WithIndex(const std::string& index_file, HostGitOptions options = {}) {
  options.index_file = index_file;
  return options;
}

base::Result<SourceChanges> ReadSourceChanges(const std::string& work_tree, int ws_fd,
                                              const RunAsIds& ids, const std::string& index_file) {
  auto status = Git(ids, ws_fd,
                    AgainstSource(work_tree, {"status", "--porcelain", "-z", "--no-renames",
                                              "--ignore-submodules=all", "--untracked-files=all"}),
                    WithIndex(index_file));
  if (!status) return status.error();
  if (status->exit_code != 0) {
    return base::Error::Message(fmt::format("--repo {}: can't compare its work tree: {}", work_tree,
                                            GitComplaintLine(status->errors)));
  }
  SourceChanges changes;
  for (const auto& record : ZRecords(status->output)) {
    if (record.starts_with("??")) {
      ++changes.untracked;
    } else {
      ++changes.tracked;
    }
  }
  return changes;
}

// The source's changes as one binary patch (untracked files as new ones when asked),
// applied to the clone's work tree; the clone's index stays at HEAD.
base::Status CarryChanges(const std::string& work_tree, int ws_fd, bool untracked,
                          const RunAsIds& ids, const std::string& index_file) {
  if (untracked) {
    auto add = Git(ids, ws_fd, AgainstSource(work_tree, {"add", "--intent-to-add", "--", "."}),
                   WithIndex(index_file));
    if (!add) return add.error();
  }
  base::UniqueFd patch(::memfd_create("ateam-uncommitted", MFD_CLOEXEC));
  if (!patch) return base::ErrnoError("Can't make a memfd for", "the uncommitted changes");
  auto diff = Git(ids, ws_fd,
                  AgainstSource(work_tree, {"diff", "--binary", "--no-ext-diff", "--no-textconv",
                                            "--ignore-submodules=all", "HEAD"}),
                  WithIndex(index_file, OutputTo(patch.get())));
  if (untracked) (void)Git(ids, ws_fd, {"reset", "--quiet"}, WithIndex(index_file));
  if (!diff) return diff.error();
  if (diff->exit_code != 0) {
    return base::Error::Message(
        fmt::format("--include-uncommitted: git diff failed: {}", GitComplaintLine(diff->errors)));
  }
  struct stat st {};
  if (::fstat(patch.get(), &st) != 0 || st.st_size == 0) return {};
  (void)::lseek(patch.get(), 0, SEEK_SET);
  auto apply =
      Git(ids, ws_fd, {"apply", "--binary", "--whitespace=nowarn", "-"}, InputFrom(patch.get()));
  if (!apply) return apply.error();
  if (apply->exit_code != 0) {
    return base::Error::Message(fmt::format("--include-uncommitted: git apply failed: {}",
                                            GitComplaintLine(apply->errors)));
  }
  return {};
}

// The source's uncommitted changes: carried as asked, or one notice saying they are not.
base::Status HandleUncommitted(const std::string& source, int ws_fd, const CloneWishes& wishes,
                               const RunAsIds& ids, std::vector<std::string>* notices) {
  // Compared through a copy of the source's own index when it can be made (the same result,
  // without hashing every file of the source); the clone's index when it fails.
  auto git_dirs = FindSourceGitDirs(source);
  SourceIndexCopy index =
      git_dirs ? SourceIndexCopy::Make(git_dirs->git_dir, ws_fd, ids) : SourceIndexCopy();
  auto changes = ReadSourceChanges(source, ws_fd, ids, index.file());
  if (!changes && !index.file().empty()) {
    index.Drop();  // e.g. a split index, whose shared part stays in the source
    changes = ReadSourceChanges(source, ws_fd, ids, "");
  }
  if (!changes) return changes.error();
  if (changes->tracked == 0 && changes->untracked == 0) return {};
  bool untracked = wishes.uncommitted == UncommittedMode::kUntracked;
  if (wishes.uncommitted != UncommittedMode::kLeave) {
    if (auto st = CarryChanges(source, ws_fd, untracked, ids, index.file()); !st) return st;
  }
  if (wishes.uncommitted == UncommittedMode::kLeave) {
    notices->push_back(fmt::format(
        "--repo {}: {} uncommitted change(s) and {} untracked file(s) are not in the clone "
        "(--include-uncommitted carries the changes, --include-untracked the files "
        "too)",
        source, changes->tracked, changes->untracked));
  } else if (!untracked && changes->untracked > 0) {
    notices->push_back(
        fmt::format("--repo {}: {} uncommitted change(s) carried; {} untracked file(s) are not "
                    "(--include-untracked carries them)",
                    source, changes->tracked, changes->untracked));
  }
  return {};
}

// Files the checkout's attributes give to git-lfs: what is there is the pointer only.
void NoteLfsPointers(int ws_fd, const RunAsIds& ids, std::vector<std::string>* notices) {
  auto files = Git(ids, ws_fd, {"ls-files", "-z", "--", ":(attr:filter=lfs)"});
  if (!files || files->exit_code != 0) return;
  size_t count = ZRecords(files->output).size();
  if (count == 0) return;
  notices->push_back(fmt::format(
      "{} file(s) of the checkout are git-lfs pointers: their content is not fetched (the clone "
      "is offline and runs no filter; fetch it with git lfs inside, with its host allowed)",
      count));
}

}  // namespace

std::optional<SourceGitDirs> FindSourceGitDirs(const std::string& source) {
  auto absolute = [](const std::string& base, const std::string& path) {
    std::string joined = path.starts_with('/') ? path : base + "/" + path;
    char real[PATH_MAX];
    return ::realpath(joined.c_str(), real) != nullptr ? std::string(real) : joined;
  };
  char real[PATH_MAX];
  if (::realpath(source.c_str(), real) == nullptr) return std::nullopt;
  std::string top = real;
  base::UniqueFd top_fd(::open(real, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!top_fd) return std::nullopt;
  SourceGitDirs dirs;
  auto st = StatAt(top_fd.get(), ".git");
  if (st && S_ISDIR(st->st_mode)) {
    dirs.git_dir = top + "/.git";
  } else if (st && S_ISREG(st->st_mode)) {
    auto pointer = ReadFileAt(top_fd.get(), ".git", 4096);
    if (!pointer || !pointer->starts_with("gitdir: ")) return std::nullopt;
    dirs.git_dir = absolute(top, Trimmed(pointer->substr(8)));
  } else if (StatAt(top_fd.get(), "HEAD") && StatAt(top_fd.get(), "objects")) {
    dirs.git_dir = top;
  } else {
    return std::nullopt;
  }
  dirs.common_dir = dirs.git_dir;
  base::UniqueFd git_fd(::open(dirs.git_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (git_fd) {
    if (auto common = ReadFileAt(git_fd.get(), "commondir", 4096)) {
      dirs.common_dir = absolute(dirs.git_dir, Trimmed(*common));
    }
  }
  return dirs;
}

base::Result<FinishedClone> FinishClone(const std::string& source, int ws_fd,
                                        const CloneWishes& wishes, const RunAsIds& ids) {
  FinishedClone done;
  struct stat st {};
  char real[PATH_MAX];
  bool local_dir = ::stat(source.c_str(), &st) == 0 && S_ISDIR(st.st_mode) &&
                   ::realpath(source.c_str(), real) != nullptr;
  std::string local = local_dir ? std::string(real) : "";
  // A work tree to compare with: a local repository that is not bare.
  bool has_work_tree = local_dir && ::access((local + "/.git").c_str(), F_OK) == 0;
  if (has_work_tree && !wishes.rev) {
    if (auto s = HandleUncommitted(local, ws_fd, wishes, ids, &done.notices); !s) return s.error();
  } else if (wishes.uncommitted != UncommittedMode::kLeave) {
    return base::Error::Message(
        wishes.rev ? "--include-uncommitted carries changes against the source's HEAD: not "
                     "with --rev"
                   : fmt::format("--include-uncommitted: --repo {} has no work tree here", source));
  }
  if (wishes.rev) {
    if (auto s = CheckoutRevision(source, ws_fd, *wishes.rev, ids); !s) return s.error();
  }
  if (local_dir) {
    auto modules = CloneSubmodules(local, ws_fd, ids, &done.notices);
    if (!modules) return modules.error();
    done.submodules = std::move(*modules);
  } else if (StatAt(ws_fd, ".gitmodules")) {
    done.notices.push_back(fmt::format(
        "--repo {}: its submodules are not cloned (only a local repository's are)", source));
  }
  NoteLfsPointers(ws_fd, ids, &done.notices);
  return done;
}

}  // namespace sbx::dispatch
