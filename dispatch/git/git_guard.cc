#include "dispatch/git/git_guard.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <functional>

#include <fmt/format.h>

#include "base/lexical_path.h"
#include "dispatch/sys/at_file.h"

namespace sbx::dispatch {
namespace {

// Deeper directories are not looked into (one fd per level is held while walking); the
// report says so, because a nested repository could hide there.
constexpr int kMaxWalkDepth = 200;
constexpr const char* kDisabledSuffix = ".ateam-disabled";

// The config a git directory nobody prepared gets: a plain non-bare repository.
constexpr const char* kPlainConfig =
    "[core]\n"
    "\trepositoryformatversion = 0\n"
    "\tfilemode = true\n"
    "\tbare = false\n"
    "\tlogallrefupdates = true\n";

std::string Join(const std::string& dir, const std::string& name) {
  return dir.empty() ? name : dir + "/" + name;
}

std::string BaseName(const std::string& rel) {
  auto slash = rel.rfind('/');
  return slash == std::string::npos ? rel : rel.substr(slash + 1);
}

GitEntryId EntryIdOf(const std::string& name, const struct stat& st) {
  return {name, st.st_ino, st.st_size, st.st_mtim};
}

// A quoted git config value: backslash and double quote escaped.
std::string QuoteConfigValue(const std::string& value) {
  std::string out = "\"";
  for (char c : value) {
    if (c == '\\' || c == '"') out += '\\';
    out += c;
  }
  return out + "\"";
}

bool IsHex(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
  });
}

// What git itself takes for a bare repository when it finds no .git: a valid HEAD beside
// objects/ and refs/ directories. Git would read the config beside them.
bool LooksLikeBareRepository(int dirfd, const std::vector<DirEntry>& entries) {
  auto has = [&](const char* n) {
    return std::binary_search(entries.begin(), entries.end(), DirEntry{n, 0});
  };
  if (!has("HEAD") || !has("objects") || !has("refs")) return false;
  auto head = ReadFileAt(dirfd, "HEAD", 4096);
  if (!head) return false;
  std::string text = *head;
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text.starts_with("ref: ") || (IsHex(text) && (text.size() == 40 || text.size() == 64));
}

struct WalkCallbacks {
  // An entry named .git, of any type.
  std::function<void(int dirfd, const std::string& rel, const struct stat& st)> git_entry;
  // A directory laid out like a bare repository (rel "" is the workspace itself).
  std::function<void(int dirfd, const std::string& rel)> bare_layout;
  std::function<void(const std::string& rel)> too_deep;
};

// Every directory below `dirfd` on the same filesystem, never through a symlink and never
// into a .git (a git directory's own content is handled by its owner).
void Walk(int dirfd, const std::string& rel, dev_t dev, int depth, const WalkCallbacks& cb) {
  auto entries = ListDirTypedAt(dirfd);
  if (!entries) return;
  if (cb.bare_layout && LooksLikeBareRepository(dirfd, *entries)) cb.bare_layout(dirfd, rel);
  for (const auto& [name, type] : *entries) {
    // Only directories and .git entries matter: no stat for every file of a large tree.
    if (name != ".git" && type != DT_DIR && type != DT_UNKNOWN) continue;
    auto st = StatAt(dirfd, name);
    if (!st) continue;
    std::string child = Join(rel, name);
    if (name == ".git") {
      cb.git_entry(dirfd, child, *st);
      continue;
    }
    if (!S_ISDIR(st->st_mode) || st->st_dev != dev) continue;
    if (depth >= kMaxWalkDepth) {
      if (cb.too_deep) cb.too_deep(child);
      continue;
    }
    auto sub = OpenDirAt(dirfd, name);
    if (sub) Walk(sub->get(), child, dev, depth + 1, cb);
  }
}

base::Result<GuardedGitDir> RecordGitDir(int gitfd, const std::string& rel) {
  GuardedGitDir dir;
  dir.rel = rel;
  struct stat st {};
  if (::fstat(gitfd, &st) != 0) return base::ErrnoError("Can't stat", rel);
  dir.dev = st.st_dev;
  dir.ino = st.st_ino;
  if (auto config = ReadFileAt(gitfd, "config")) {
    dir.config = std::move(*config);
  } else if (config.error().err() != ENOENT) {
    return base::Error(config.error().err(), "Can't guard (not a regular file)", rel + "/config");
  }
  if (auto hooks = OpenDirAt(gitfd, "hooks")) {
    dir.had_hooks_dir = true;
    auto names = ListDirAt(hooks->get());
    if (!names) return names.error();
    for (const auto& name : *names) {
      if (auto hook = StatAt(hooks->get(), name)) dir.hooks.push_back(EntryIdOf(name, *hook));
    }
  } else if (hooks.error().err() != ENOENT) {
    return base::Error(hooks.error().err(), "Can't guard (not a directory)", rel + "/hooks");
  }
  dir.had_config_worktree = StatAt(gitfd, "config.worktree").has_value();
  dir.had_commondir = StatAt(gitfd, "commondir").has_value();
  return dir;
}

// The content of a .git file or symlink, for telling a later change apart.
std::optional<GitPointer> ReadPointer(int dirfd, const std::string& rel, const struct stat& st) {
  GitPointer pointer{rel, S_ISLNK(st.st_mode), ""};
  std::string name = BaseName(rel);
  if (pointer.symlink) {
    char target[PATH_MAX];
    ssize_t n = ::readlinkat(dirfd, name.c_str(), target, sizeof(target));
    if (n < 0) return std::nullopt;
    pointer.content.assign(target, static_cast<size_t>(n));
    return pointer;
  }
  if (!S_ISREG(st.st_mode)) return std::nullopt;
  auto content = ReadFileAt(dirfd, name, 1 << 16);
  if (!content) return std::nullopt;
  pointer.content = std::move(*content);
  return pointer;
}

// Where a `.git` file or symlink at `pointer.rel` points, relative to the workspace;
// nullopt when that is outside it.
std::optional<std::string> PointerTarget(const GitPointer& pointer, const std::string& workspace) {
  std::string target = pointer.content;
  if (!pointer.symlink) {
    if (!target.starts_with("gitdir: ")) return std::nullopt;
    target = target.substr(8);
    while (!target.empty() && (target.back() == '\n' || target.back() == '\r')) target.pop_back();
  }
  std::string joined;
  if (target.starts_with(workspace + "/")) {
    joined = target.substr(workspace.size() + 1);
  } else if (!target.starts_with('/')) {
    auto slash = pointer.rel.rfind('/');
    joined = Join(slash == std::string::npos ? "" : pointer.rel.substr(0, slash), target);
  } else {
    return std::nullopt;
  }
  // Lexically: "a/../b" is "b"; climbing above the workspace is outside it.
  auto parts = base::LexicalComponents(joined, /*above_top_is_error=*/true);
  if (!parts || parts->empty()) return std::nullopt;
  std::string rel;
  for (const auto& part : *parts) rel = Join(rel, part);
  return rel;
}

// Makes a git directory the runtime did not prepare harmless: a plain config, no hooks,
// no per-worktree config, no redirection of its common directory.
void SanitizeGitDir(int gitfd, const std::string& rel, const std::string& config,
                    std::vector<std::string>& report) {
  if (auto st = WriteFileAt(gitfd, "config", config); !st) {
    report.push_back(fmt::format("{}/config: could not be replaced: {}", rel, st.error().Render()));
  }
  for (const char* name : {"hooks", "config.worktree", "commondir"}) {
    if (auto st = RemoveTreeAt(gitfd, name); !st) {
      report.push_back(
          fmt::format("{}/{}: could not be removed: {}", rel, name, st.error().Render()));
    }
  }
}

// Puts a guarded git directory back the way it was prepared.
void RestoreGitDir(int gitfd, const GuardedGitDir& dir, std::vector<std::string>& report) {
  auto fail = [&](const std::string& what, const base::Error& e) {
    report.push_back(fmt::format("{}/{}: could not be restored: {}", dir.rel, what, e.Render()));
  };
  auto config = ReadFileAt(gitfd, "config");
  if (dir.config && (!config || *config != *dir.config)) {
    report.push_back(fmt::format("{}/config: changed; restored", dir.rel));
    if (auto st = WriteFileAt(gitfd, "config", *dir.config); !st) fail("config", st.error());
  } else if (!dir.config && StatAt(gitfd, "config")) {
    report.push_back(fmt::format("{}/config: added; removed", dir.rel));
    if (auto st = RemoveTreeAt(gitfd, "config"); !st) fail("config", st.error());
  }
  auto hooks = OpenDirAt(gitfd, "hooks");
  if (!dir.had_hooks_dir) {
    if (StatAt(gitfd, "hooks")) {
      report.push_back(fmt::format("{}/hooks: added; removed", dir.rel));
      if (auto st = RemoveTreeAt(gitfd, "hooks"); !st) fail("hooks", st.error());
    }
  } else if (!hooks) {
    report.push_back(fmt::format("{}/hooks: replaced; made empty", dir.rel));
    if (auto st = RemoveTreeAt(gitfd, "hooks"); !st) fail("hooks", st.error());
    if (auto st = MakeDirAt(gitfd, "hooks"); !st) fail("hooks", st.error());
  } else if (auto names = ListDirAt(hooks->get())) {
    for (const auto& name : *names) {
      auto st = StatAt(hooks->get(), name);
      if (st &&
          std::find(dir.hooks.begin(), dir.hooks.end(), EntryIdOf(name, *st)) != dir.hooks.end()) {
        continue;
      }
      report.push_back(fmt::format("{}/hooks/{}: added or changed; removed", dir.rel, name));
      if (auto removed = RemoveTreeAt(hooks->get(), name); !removed) {
        fail("hooks/" + name, removed.error());
      }
    }
  }
  for (auto [name, had] : {std::pair{"config.worktree", dir.had_config_worktree},
                           std::pair{"commondir", dir.had_commondir}}) {
    if (had || !StatAt(gitfd, name)) continue;
    report.push_back(fmt::format("{}/{}: added; removed", dir.rel, name));
    if (auto st = RemoveTreeAt(gitfd, name); !st) fail(name, st.error());
  }
}

// The check after the agent: what it finds goes into `report`, and is undone.
struct TaintCheck {
  const std::vector<GuardedGitDir>& guarded;
  const std::vector<GitPointer>& pointers;
  std::vector<std::string>& report;
  const GuardedGitDir* top_dir = nullptr;  // the prepared .git, if any
  std::string top_config = kPlainConfig;   // what a .git made anew at the top gets
  std::optional<std::string> moved_top;    // where the agent moved the prepared .git

  // The directories prepared (or found) before: restored in place when still there; a
  // .git-named one made anew is left to the walk.
  void RestoreGuarded(int ws) {
    for (const auto& dir : guarded) {
      auto fd = OpenDirBeneath(ws, dir.rel);
      struct stat st {};
      if (!fd || ::fstat(fd->get(), &st) != 0) {
        report.push_back(fmt::format("{}: moved away or replaced by a non-directory", dir.rel));
        continue;
      }
      if (st.st_dev == dir.dev && st.st_ino == dir.ino) {
        RestoreGitDir(fd->get(), dir, report);
      } else if (BaseName(dir.rel) != ".git") {
        report.push_back(fmt::format("{}: replaced by another directory; made plain", dir.rel));
        SanitizeGitDir(fd->get(), dir.rel, kPlainConfig, report);
      }
    }
  }

  void GitEntry(int dirfd, const std::string& rel, const struct stat& st) {
    if (S_ISDIR(st.st_mode)) {
      ForeignGitDir(dirfd, rel, st);
      return;
    }
    auto pointer = ReadPointer(dirfd, rel, st);
    bool known =
        pointer && std::any_of(pointers.begin(), pointers.end(), [&](const GitPointer& p) {
          return p.rel == rel && p.symlink == pointer->symlink && p.content == pointer->content;
        });
    if (known) return;
    auto aside = RenameAsideAt(dirfd, ".git", std::string(".git") + kDisabledSuffix);
    report.push_back(
        aside ? fmt::format("{}: a .git {} the agent made; renamed to {}", rel,
                            S_ISLNK(st.st_mode) ? "symlink" : "file",
                            Join(rel == ".git" ? "" : rel.substr(0, rel.size() - 5), *aside))
              : fmt::format("{}: a .git file the agent made could not be renamed: {}", rel,
                            aside.error().Render()));
  }

  void ForeignGitDir(int dirfd, const std::string& rel, const struct stat& st) {
    bool known = std::any_of(guarded.begin(), guarded.end(), [&](const GuardedGitDir& d) {
      return d.rel == rel && d.dev == st.st_dev && d.ino == st.st_ino;
    });
    if (known) return;
    auto git = OpenDirAt(dirfd, ".git");
    if (!git) return;
    const std::string plain = rel == ".git" ? top_config : std::string(kPlainConfig);
    auto config = ReadFileAt(git->get(), "config");
    bool already_plain = config && *config == plain && !StatAt(git->get(), "hooks") &&
                         !StatAt(git->get(), "config.worktree") && !StatAt(git->get(), "commondir");
    if (already_plain) return;  // made harmless by an earlier check
    report.push_back(fmt::format(
        "{}: a git directory the agent made; its config is replaced and its hooks removed", rel));
    SanitizeGitDir(git->get(), rel, plain, report);
  }

  void BareLayout(int dirfd, const std::string& rel) {
    struct stat st {};
    if (::fstat(dirfd, &st) != 0) return;
    // A guarded git directory (one a `gitdir:` file names, or the prepared .git the agent
    // moved here) was checked already.
    for (const auto& dir : guarded) {
      if (st.st_dev != dir.dev || st.st_ino != dir.ino) continue;
      if (&dir == top_dir && rel != ".git") moved_top = rel;
      return;
    }
    for (const char* name : {"config", "hooks"}) {
      if (!StatAt(dirfd, name)) continue;
      auto aside = RenameAsideAt(dirfd, name, std::string(name) + kDisabledSuffix);
      std::string where = Join(rel, name);
      report.push_back(aside ? fmt::format("{}: beside a bare repository layout; renamed to {}",
                                           where, Join(rel, *aside))
                             : fmt::format("{}: beside a bare repository layout; could not be "
                                           "renamed: {}",
                                           where, aside.error().Render()));
    }
  }

  // The prepared .git the agent moved elsewhere goes back when the place is free.
  void MoveTopBack(int ws) {
    if (!moved_top || StatAt(ws, ".git")) {
      if (moved_top)
        report.push_back(fmt::format("{}: the prepared .git, moved there", *moved_top));
      return;
    }
    auto slash = moved_top->rfind('/');
    std::string parent_rel = slash == std::string::npos ? "" : moved_top->substr(0, slash);
    std::string name = slash == std::string::npos ? *moved_top : moved_top->substr(slash + 1);
    auto parent = OpenDirBeneath(ws, parent_rel);
    if (!parent || ::renameat2(parent->get(), name.c_str(), ws, ".git", RENAME_NOREPLACE) != 0) {
      report.push_back(fmt::format("{}: the prepared .git, moved there", *moved_top));
      return;
    }
    report.push_back(fmt::format("{}: the prepared .git, moved there; moved back", *moved_top));
    if (auto git = OpenDirAt(ws, ".git")) RestoreGitDir(git->get(), *top_dir, report);
  }
};

// The commit a fresh clone's branch points to: refs/heads/BRANCH, else its line in
// packed-refs. Empty for an unborn branch.
std::string CloneHeadCommit(int gitfd, const std::string& branch) {
  auto trim = [](std::string text) {
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    return text;
  };
  std::string ref = "refs/heads/" + branch;
  auto slash = ref.rfind('/');
  if (auto dir = OpenDirBeneath(gitfd, ref.substr(0, slash))) {
    if (auto loose = ReadFileAt(dir->get(), ref.substr(slash + 1), 4096)) {
      std::string id = trim(*loose);
      if (IsHex(id)) return id;
    }
  }
  auto packed = ReadFileAt(gitfd, "packed-refs");
  if (!packed) return "";
  size_t start = 0;
  while (start < packed->size()) {
    size_t end = packed->find('\n', start);
    if (end == std::string::npos) end = packed->size();
    std::string line = packed->substr(start, end - start);
    start = end + 1;
    auto space = line.find(' ');
    if (space != std::string::npos && line.substr(space + 1) == ref &&
        IsHex(line.substr(0, space))) {
      return line.substr(0, space);
    }
  }
  return "";
}

}  // namespace

bool operator==(const GitEntryId& a, const GitEntryId& b) {
  return a.name == b.name && a.ino == b.ino && a.size == b.size &&
         a.mtime.tv_sec == b.mtime.tv_sec && a.mtime.tv_nsec == b.mtime.tv_nsec;
}

std::string CloneOriginUrl(const std::string& repo) {
  struct stat st {};
  char resolved[PATH_MAX];
  if (::stat(repo.c_str(), &st) == 0 && S_ISDIR(st.st_mode) &&
      ::realpath(repo.c_str(), resolved) != nullptr) {
    return resolved;
  }
  return repo;
}

std::string CloneGitConfig(const std::string& origin_url, const std::string& branch, bool sha256) {
  std::string text = sha256 ? "[core]\n\trepositoryformatversion = 1\n" : std::string(kPlainConfig);
  if (sha256) {
    text += "\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n";
    text += "[extensions]\n\tobjectformat = sha256\n";
  }
  if (!origin_url.empty() && origin_url.find('\n') == std::string::npos) {
    text += fmt::format("[remote \"origin\"]\n\turl = {}\n", QuoteConfigValue(origin_url));
    text += "\tfetch = +refs/heads/*:refs/remotes/origin/*\n";
    if (!branch.empty()) {
      text += fmt::format("[branch {}]\n\tremote = origin\n\tmerge = {}\n",
                          QuoteConfigValue(branch), QuoteConfigValue("refs/heads/" + branch));
    }
  }
  return text;
}

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
  Walk(ws, "", top.st_dev, 0, cb);
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
  TaintCheck check{guarded_, pointers_, report, nullptr, kPlainConfig, std::nullopt};
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
    report.push_back(fmt::format("{}: deeper than {} levels, not checked", rel, kMaxWalkDepth));
  };
  Walk(ws, "", top.st_dev, 0, cb);
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
