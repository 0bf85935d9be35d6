#include "dispatch/git/taint_check.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>

#include <fmt/format.h>

#include "dispatch/git/git_walk.h"
#include "dispatch/sys/at_file.h"

namespace sbx::dispatch {

void TaintCheck::RestoreGuarded(int ws) {
  for (const auto& dir : guarded) {
    auto fd = OpenDirBeneath(ws, dir.rel);
    struct stat st {};
    if (!fd || ::fstat(fd->get(), &st) != 0) {
      report.push_back(fmt::format("{}: moved away or replaced by a non-directory", dir.rel));
      continue;
    }
    if (st.st_dev == dir.dev && st.st_ino == dir.ino) {
      RestoreGitDir(fd->get(), dir, report);
    } else if (BaseNameOf(dir.rel) != ".git") {
      report.push_back(fmt::format("{}: replaced by another directory; made plain", dir.rel));
      SanitizeGitDir(fd->get(), dir.rel, kPlainGitConfig, report);
    }
  }
}

void TaintCheck::GitEntry(int dirfd, const std::string& rel, const struct stat& st) {
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
                          JoinRel(rel == ".git" ? "" : rel.substr(0, rel.size() - 5), *aside))
            : fmt::format("{}: a .git file the agent made could not be renamed: {}", rel,
                          aside.error().Render()));
}

void TaintCheck::ForeignGitDir(int dirfd, const std::string& rel, const struct stat& st) {
  bool known = std::any_of(guarded.begin(), guarded.end(), [&](const GuardedGitDir& d) {
    return d.rel == rel && d.dev == st.st_dev && d.ino == st.st_ino;
  });
  if (known) return;
  auto git = OpenDirAt(dirfd, ".git");
  if (!git) return;
  const std::string plain = rel == ".git" ? top_config : std::string(kPlainGitConfig);
  auto config = ReadFileAt(git->get(), "config");
  bool already_plain = config && *config == plain && !StatAt(git->get(), "hooks") &&
                       !StatAt(git->get(), "config.worktree") && !StatAt(git->get(), "commondir");
  if (already_plain) return;  // made harmless by an earlier check
  report.push_back(fmt::format(
      "{}: a git directory the agent made; its config is replaced and its hooks removed", rel));
  SanitizeGitDir(git->get(), rel, plain, report);
}

void TaintCheck::BareLayout(int dirfd, const std::string& rel) {
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
    std::string where = JoinRel(rel, name);
    report.push_back(aside ? fmt::format("{}: beside a bare repository layout; renamed to {}",
                                         where, JoinRel(rel, *aside))
                           : fmt::format("{}: beside a bare repository layout; could not be "
                                         "renamed: {}",
                                         where, aside.error().Render()));
  }
}

void TaintCheck::MoveTopBack(int ws) {
  if (!moved_top || StatAt(ws, ".git")) {
    if (moved_top) report.push_back(fmt::format("{}: the prepared .git, moved there", *moved_top));
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

}  // namespace sbx::dispatch
