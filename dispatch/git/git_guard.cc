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

base::Result<GitGuard> GitGuard::Prepare(const std::string& workspace, bool fresh_clone,
                                         const std::string& origin_url) {
  GitGuard guard;
  guard.workspace_ = workspace;
  guard.workspace_fd_.reset(
      ::open(workspace.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!guard.workspace_fd_) return base::ErrnoError("Can't open the workspace", workspace);
  int ws = guard.workspace_fd_.get();
  if (fresh_clone) {
    auto git = OpenDirAt(ws, ".git");
    if (!git) return base::Error(git.error().err(), "Can't open the clone's", ".git");
    std::string branch;
    if (auto head = ReadFileAt(git->get(), "HEAD", 4096)) {
      constexpr std::string_view kPrefix = "ref: refs/heads/";
      if (head->starts_with(kPrefix)) {
        branch = head->substr(kPrefix.size());
        while (!branch.empty() && (branch.back() == '\n' || branch.back() == '\r')) {
          branch.pop_back();
        }
      }
    }
    // Git writes a sha256 clone's format into its config; everything else there is ours.
    auto old_config = ReadFileAt(git->get(), "config");
    bool sha256 = old_config && old_config->find("sha256") != std::string::npos;
    std::string config = CloneGitConfig(origin_url, branch, sha256);
    if (auto st = WriteFileAt(git->get(), "config", config); !st) return st.error();
    // Hooks come from the caller's template directory: none are wanted.
    if (auto st = RemoveTreeAt(git->get(), "hooks"); !st) return st.error();
    if (auto st = MakeDirAt(git->get(), "hooks"); !st) return st.error();
    guard.clone_head_ = branch.empty() ? "" : CloneHeadCommit(git->get(), branch);
    auto dir = RecordGitDir(git->get(), ".git");
    if (!dir) return dir.error();
    guard.guarded_.push_back(std::move(*dir));
    return guard;
  }
  // A given workspace: every git directory in it is guarded as it is, and every .git file
  // recorded, so that only what the agent adds or changes is undone afterwards.
  std::optional<base::Error> failed;
  auto record = [&](int gitfd, const std::string& rel) {
    bool seen = std::any_of(guard.guarded_.begin(), guard.guarded_.end(),
                            [&](const GuardedGitDir& d) { return d.rel == rel; });
    if (seen) return;
    auto dir = RecordGitDir(gitfd, rel);
    if (!dir) {
      if (!failed) failed = dir.error();
      return;
    }
    guard.guarded_.push_back(std::move(*dir));
  };
  struct stat top {};
  if (::fstat(ws, &top) != 0) return base::ErrnoError("Can't stat", workspace);
  WalkCallbacks cb;
  cb.git_entry = [&](int dirfd, const std::string& rel, const struct stat& st) {
    if (!S_ISDIR(st.st_mode)) {
      auto pointer = ReadPointer(dirfd, rel, st);
      if (!pointer) return;
      guard.pointers_.push_back(*pointer);
      // A `gitdir:` file naming a directory inside the workspace (a submodule's checkout):
      // that git directory is guarded too. One outside is not writable from inside.
      if (auto target = PointerTarget(*pointer, workspace)) {
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
  WalkGitMetadata(ws, "", top.st_dev, 0, cb);
  if (failed) return *failed;
  return guard;
}

void GitGuard::AddBinds(runtime::SandboxSpec& spec) const {
  for (const auto& dir : guarded_) {
    std::string path = fmt::format("{}/{}", workspace_, dir.rel);
    if (dir.config) {
      spec.ops.emplace_back(
          runtime::BindOp{.source = path + "/config", .dest = path + "/config", .read_only = true});
    }
    if (dir.had_hooks_dir) {
      spec.ops.emplace_back(
          runtime::BindOp{.source = path + "/hooks", .dest = path + "/hooks", .read_only = true});
    }
  }
}

std::vector<std::string> GitGuard::CheckAndRestore() const {
  std::vector<std::string> report;
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
  WalkGitMetadata(ws, "", top.st_dev, 0, cb);
  check.MoveTopBack(ws);
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
