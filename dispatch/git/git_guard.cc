#include "dispatch/git/git_guard.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include <fmt/format.h>

#include "dispatch/git/git_walk.h"
#include "dispatch/git/taint_check.h"
#include "dispatch/sys/at_file.h"

namespace sbx::dispatch {

namespace {

// The config of a submodule's git directory in a fresh clone: a plain one and its origin.
// No core.worktree: git finds the work tree from the checkout's `gitdir:` file, and
// `git submodule update` inside rewrites a core.worktree it finds (in a config that is
// read-only there).
std::string SubmoduleGitConfig(const ClonedSubmodule& module) {
  return CloneGitConfig(module.source, "", false);
}

// A fresh git directory of the clone gets `config` and an empty hooks directory (hooks
// come from the caller's template directory: none are wanted).
base::Status ResetClonedGitDir(int gitfd, const std::string& config) {
  if (auto st = WriteFileAt(gitfd, "config", config); !st) return st.error();
  if (auto st = RemoveTreeAt(gitfd, "hooks"); !st) return st.error();
  return MakeDirAt(gitfd, "hooks");
}

}  // namespace

base::Result<GitGuard> GitGuard::Prepare(const std::string& workspace, bool fresh_clone,
                                         const std::string& origin_url,
                                         const std::vector<ClonedSubmodule>& submodules,
                                         int stop_fd) {
  GitGuard guard;
  guard.workspace_ = workspace;
  guard.stop_fd_ = stop_fd;
  guard.workspace_fd_.reset(
      ::open(workspace.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!guard.workspace_fd_) return base::ErrnoError("Can't open the workspace", workspace);
  auto st = fresh_clone ? guard.PrepareClone(origin_url, submodules) : guard.PrepareGiven();
  if (!st) return st.error();
  return guard;
}

base::Status GitGuard::GuardAlso(const std::string& dir) {
  auto other = Prepare(dir, false, "", {}, stop_fd_);
  if (!other) return other.error();
  also_.push_back(std::move(*other));
  return {};
}

base::Status GitGuard::PrepareClone(const std::string& origin_url,
                                    const std::vector<ClonedSubmodule>& submodules) {
  int ws = workspace_fd_.get();
  auto git = OpenDirAt(ws, ".git");
  if (!git) return base::Error(git.error().err(), "Can't open the clone's", ".git");
  std::string branch;
  std::string detached;
  if (auto head = ReadFileAt(git->get(), "HEAD", 4096)) {
    constexpr std::string_view kPrefix = "ref: refs/heads/";
    std::string text = *head;
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    if (text.starts_with(kPrefix)) branch = text.substr(kPrefix.size());
    if (IsHexId(text)) detached = text;  // --rev at a tag or a commit
  }
  // Git writes a sha256 clone's format into its config; everything else there is ours.
  auto old_config = ReadFileAt(git->get(), "config");
  bool sha256 = old_config && old_config->find("sha256") != std::string::npos;
  std::string config = CloneGitConfig(origin_url, branch, sha256);
  // The submodules cloned on the host are active, so that git inside never needs to write
  // this (read-only) config to use them.
  for (const auto& module : submodules) {
    config += fmt::format("[submodule {}]\n\tactive = true\n\turl = {}\n",
                          QuoteGitConfigValue(module.name), QuoteGitConfigValue(module.source));
  }
  if (auto st = ResetClonedGitDir(git->get(), config); !st) return st.error();
  clone_head_ = !detached.empty() ? detached
                : branch.empty()  ? ""
                                  : CloneHeadCommit(git->get(), branch);
  auto dir = RecordGitDir(git->get(), ".git");
  if (!dir) return dir.error();
  guarded_.push_back(std::move(*dir));
  for (const auto& module : submodules) {
    std::string rel = ".git/modules/" + module.name;
    auto module_git = OpenDirBeneath(ws, rel);
    if (!module_git) return module_git.error();
    if (auto st = ResetClonedGitDir(module_git->get(), SubmoduleGitConfig(module)); !st) {
      return st.error();
    }
    auto recorded = RecordGitDir(module_git->get(), rel);
    if (!recorded) return recorded.error();
    guarded_.push_back(std::move(*recorded));
    // Its checkout's `gitdir:` file is the runtime's: known, not the agent's.
    auto checkout = OpenDirBeneath(ws, module.path);
    auto pointer_st = checkout ? StatAt(checkout->get(), ".git") : std::nullopt;
    if (pointer_st) {
      if (auto pointer = ReadPointer(checkout->get(), module.path + "/.git", *pointer_st)) {
        pointers_.push_back(*pointer);
      }
    }
  }
  return {};
}

base::Status GitGuard::PrepareGiven() {
  int ws = workspace_fd_.get();
  // A linked worktree's git directory is outside it: git inside would find nothing there.
  if (auto top = StatAt(ws, ".git"); top && !S_ISDIR(top->st_mode)) {
    auto pointer = ReadPointer(ws, ".git", *top);
    if (pointer && !PointerTarget(*pointer, workspace_)) {
      return base::Error::Message(fmt::format(
          "--workspace {}: a linked worktree (its git directory is outside it); give --repo {} "
          "for a clone at its HEAD, or --workspace the main worktree",
          workspace_, workspace_));
    }
  }
  // Every git directory in it is guarded as it is, every .git file recorded and every
  // bare repository too, so that only what the agent adds or changes is undone afterwards.
  std::optional<base::Error> failed;
  auto record = [&](int gitfd, const std::string& rel) {
    bool seen = std::any_of(guarded_.begin(), guarded_.end(),
                            [&](const GuardedGitDir& d) { return d.rel == rel; });
    if (seen) return;
    auto dir = RecordGitDir(gitfd, rel);
    if (!dir) {
      if (!failed) failed = dir.error();
      return;
    }
    guarded_.push_back(std::move(*dir));
  };
  struct stat top {};
  if (::fstat(ws, &top) != 0) return base::ErrnoError("Can't stat", workspace_);
  WalkCallbacks cb;
  cb.git_entry = [&](int dirfd, const std::string& rel, const struct stat& st) {
    if (!S_ISDIR(st.st_mode)) {
      auto pointer = ReadPointer(dirfd, rel, st);
      if (!pointer) return;
      pointers_.push_back(*pointer);
      // A `gitdir:` file naming a directory inside the workspace (a submodule's checkout):
      // that git directory is guarded too. One outside is not writable from inside.
      if (auto target = PointerTarget(*pointer, workspace_)) {
        if (auto git = OpenDirBeneath(ws, *target)) record(git->get(), *target);
      }
      return;
    }
    auto git = OpenDirAt(dirfd, ".git");
    if (!git) return;
    record(git->get(), rel);
    // Submodules' git directories live in .git/modules/NAME.
    auto modules = OpenDirAt(git->get(), "modules");
    if (!modules) return;
    auto names = ListDirAt(modules->get());
    if (!names) return;
    for (const auto& name : *names) {
      if (auto module = OpenDirAt(modules->get(), name)) {
        record(module->get(), fmt::format("{}/modules/{}", rel, name));
      }
    }
  };
  // A bare repository that is there before the run is the user's: guarded like a .git
  // (config and hooks read-only inside, checked after), never renamed.
  cb.bare_layout = [&](int dirfd, const std::string& rel) { record(dirfd, rel); };
  WalkBudget budget{.stop_fd = stop_fd_};
  WalkGitMetadata(ws, "", top.st_dev, 0, cb, &budget);
  if (failed) return *failed;
  // Fail closed: git metadata the walk could not reach would go unguarded. A stop signal
  // is the caller's to act on (nothing starts); a nested repository too deep to reach is
  // reported by the check after the agent.
  if (budget.ended == WalkBudget::End::kTooMany) {
    return base::Error::Message(fmt::format(
        "--workspace {}: {}, so its git metadata can't be guarded; give a smaller tree or "
        "--repo for a fresh clone",
        workspace_, budget.Unfinished()));
  }
  return {};
}

void GitGuard::AddBinds(runtime::SandboxSpec& spec) const {
  for (const auto& other : also_) other.AddBinds(spec);
  for (const auto& dir : guarded_) {
    std::string path = dir.rel.empty() ? workspace_ : fmt::format("{}/{}", workspace_, dir.rel);
    if (dir.config) {
      spec.ops.emplace_back(
          runtime::BindOp{.source = path + "/config", .dest = path + "/config", .read_only = true});
    }
    if (dir.had_hooks_dir) {
      spec.ops.emplace_back(
          runtime::BindOp{.source = path + "/hooks", .dest = path + "/hooks", .read_only = true});
    }
    if (dir.alternates) {
      std::string file = path + "/objects/info/alternates";
      spec.ops.emplace_back(runtime::BindOp{.source = file, .dest = file, .read_only = true});
    }
  }
  for (const auto& cache : borrowed_) {
    spec.ops.emplace_back(runtime::BindOp{.source = cache, .dest = cache, .read_only = true});
  }
}

std::vector<std::string> GitGuard::CheckAndRestore() {
  std::vector<std::string> report;
  unchecked_.clear();
  int ws = workspace_fd_.get();
  TaintCheck check{guarded_, pointers_, report, nullptr, kPlainGitConfig, std::nullopt};
  for (const auto& dir : guarded_) {
    if (dir.rel == ".git") check.top_dir = &dir;
  }
  if (check.top_dir != nullptr && check.top_dir->config) {
    check.top_config = *check.top_dir->config;
  }
  check.RestoreGuarded(ws);
  struct stat top {};
  if (::fstat(ws, &top) != 0) {
    report.emplace_back("the workspace could not be checked");
    return report;
  }
  WalkCallbacks cb;
  cb.git_entry = [&](int dirfd, const std::string& rel, const struct stat& st) {
    check.GitEntry(dirfd, rel, st);
  };
  cb.bare_layout = [&](int dirfd, const std::string& rel) { check.BareLayout(dirfd, rel); };
  cb.too_deep = [&](const std::string& rel) {
    report.push_back(fmt::format("{}: deeper than {} levels, not checked", rel, kMaxGitWalkDepth));
  };
  WalkBudget budget{.stop_fd = stop_fd_};
  WalkGitMetadata(ws, "", top.st_dev, 0, cb, &budget);
  check.MoveTopBack(ws);
  if (budget.ended != WalkBudget::End::kDone) {
    unchecked_ = fmt::format("the git metadata check of {} did not finish: {}", workspace_,
                             budget.Unfinished());
  }
  // A --rw directory's lines name it.
  for (auto& other : also_) {
    for (const auto& line : other.CheckAndRestore()) {
      report.push_back(fmt::format("{}: {}", other.workspace_, line));
    }
    if (unchecked_.empty()) unchecked_ = other.unchecked_;
  }
  // The lines name the agent's files and end up on the caller's terminal: no control
  // characters (escape sequences) in them.
  for (auto& line : report) {
    for (char& c : line) {
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
    }
  }
  return report;
}

}  // namespace sbx::dispatch
