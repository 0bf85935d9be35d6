#include "dispatch/git/git_dir.h"

#include <algorithm>
#include <cerrno>
#include <utility>

#include <fmt/format.h>

#include "dispatch/sys/at_file.h"

namespace sbx::dispatch {

const char* const kPlainGitConfig =
    "[core]\n"
    "\trepositoryformatversion = 0\n"
    "\tfilemode = true\n"
    "\tbare = false\n"
    "\tlogallrefupdates = true\n";
const char* const kDisabledSuffix = ".ateam-disabled";

bool operator==(const GitEntryId& a, const GitEntryId& b) {
  return a.name == b.name && a.ino == b.ino && a.size == b.size &&
         a.mtime.tv_sec == b.mtime.tv_sec && a.mtime.tv_nsec == b.mtime.tv_nsec;
}

GitEntryId EntryIdOf(const std::string& name, const struct stat& st) {
  return {name, st.st_ino, st.st_size, st.st_mtim};
}

namespace {

// objects/info/alternates names where the host's git reads objects from: back to what it
// was (the object cache's path), or gone when there was none.
void RestoreAlternates(int gitfd, const GuardedGitDir& dir, std::vector<std::string>& report) {
  constexpr const char* kRel = "objects/info/alternates";
  auto info = OpenDirBeneath(gitfd, "objects/info");
  if (!info && !dir.alternates) return;  // no objects/info: nothing names another store
  auto now = info ? ReadFileAt(info->get(), "alternates") : base::Result<std::string>(info.error());
  if (now ? dir.alternates == *now : now.error().err() == ENOENT && !dir.alternates) return;
  report.push_back(fmt::format("{}/{}: {}; {}", dir.rel, kRel, dir.alternates ? "changed" : "added",
                               dir.alternates ? "restored" : "removed"));
  base::Status st = !info            ? base::Status(info.error())
                    : dir.alternates ? WriteFileAt(info->get(), "alternates", *dir.alternates)
                                     : RemoveTreeAt(info->get(), "alternates");
  if (!st) {
    report.push_back(
        fmt::format("{}/{}: could not be restored: {}", dir.rel, kRel, st.error().Render()));
  }
}

}  // namespace

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
  if (auto info = OpenDirBeneath(gitfd, "objects/info")) {
    if (auto alternates = ReadFileAt(info->get(), "alternates")) {
      dir.alternates = std::move(*alternates);
    } else if (alternates.error().err() != ENOENT) {
      return base::Error(alternates.error().err(), "Can't guard (not a regular file)",
                         rel + "/objects/info/alternates");
    }
  }
  return dir;
}

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
  RestoreAlternates(gitfd, dir, report);
  for (auto [name, had] : {std::pair{"config.worktree", dir.had_config_worktree},
                           std::pair{"commondir", dir.had_commondir}}) {
    if (had || !StatAt(gitfd, name)) continue;
    report.push_back(fmt::format("{}/{}: added; removed", dir.rel, name));
    if (auto st = RemoveTreeAt(gitfd, name); !st) fail(name, st.error());
  }
}

}  // namespace sbx::dispatch
