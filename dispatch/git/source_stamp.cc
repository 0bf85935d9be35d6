#include "dispatch/git/source_stamp.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "base/unique_fd.h"
#include "dispatch/git/clone_checkout.h"
#include "dispatch/sys/at_file.h"
#include "dispatch/sys/run_as_child.h"

namespace sbx::dispatch {
namespace {

// Below refs/ git nests a directory per name component; deeper than this is no repository
// of ours to stamp.
constexpr int kMaxDepth = 32;

class StampWriter {
 public:
  explicit StampWriter(const struct timespec& now) : now_(now) {}

  // One line for `label` (`name` in `dir_fd`): its stat, then the entries below it when it
  // is a directory; "-" for one that is not there, when `missing_ok`. False when it can't
  // be trusted (changed too recently, unreadable, too many entries, too deep).
  bool Add(const std::string& label, int dir_fd, const std::string& name, bool missing_ok = true,
           int depth = 0) {
    struct stat st {};
    if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno != ENOENT || !missing_ok) return false;
      text_ += label + " -\n";
      return true;
    }
    if (!Line(label, st)) return false;
    return !S_ISDIR(st.st_mode) || AddBelow(label, dir_fd, name, depth);
  }

  // The work tree's .git: a `gitdir:` file is stamped like the rest; a directory by its
  // inode alone, since every index write (a `git status`) changes its times.
  bool AddGitEntry(int top_fd) {
    struct stat st {};
    if (::fstatat(top_fd, ".git", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) {
      text_ += fmt::format("top/.git {:x} {} directory\n", st.st_dev, st.st_ino);
      return true;
    }
    return Add("top/.git", top_fd, ".git");
  }

  std::string Take() { return std::move(text_); }

 private:
  [[nodiscard]] bool Racy(const struct timespec& t) const {
    return t.tv_sec > now_.tv_sec - kRacySeconds;
  }

  bool Line(const std::string& label, const struct stat& st) {
    if (++entries_ > kMaxStampEntries || Racy(st.st_mtim) || Racy(st.st_ctim)) return false;
    text_ += fmt::format("{} {:x} {} {:o} {} {}.{:09} {}.{:09}\n", label, st.st_dev, st.st_ino,
                         st.st_mode, st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec,
                         st.st_ctim.tv_sec, st.st_ctim.tv_nsec);
    return true;
  }

  bool AddBelow(const std::string& label, int parent_fd, const std::string& name, int depth) {
    if (depth > kMaxDepth) return false;
    auto dir = OpenDirAt(parent_fd, name);
    if (!dir) return false;
    auto names = ListDirAt(dir->get());
    if (!names) return false;
    for (const auto& entry : *names) {
      std::string sub = label;
      sub.append("/").append(entry);
      if (!Add(sub, dir->get(), entry, /*missing_ok=*/false, depth + 1)) return false;
    }
    return true;
  }

  struct timespec now_;
  size_t entries_ = 0;
  std::string text_;
};

// What git reads for the refs a listing shows: the work tree's .git (a directory or a
// `gitdir:` file), HEAD and a linked worktree's own refs in the git directory; the
// branches, tags, packed-refs and the config (which may hide refs) in the common one.
bool StampGitDirs(const std::string& source, const SourceGitDirs& dirs, StampWriter* out) {
  base::UniqueFd top(::open(source.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  base::UniqueFd git(::open(dirs.git_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  base::UniqueFd common(::open(dirs.common_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!top || !git || !common) return false;
  if (!out->AddGitEntry(top.get())) return false;
  for (const char* name : {"HEAD", "config.worktree"}) {
    if (!out->Add(fmt::format("git/{}", name), git.get(), name)) return false;
  }
  if (dirs.git_dir != dirs.common_dir && !out->Add("git/refs", git.get(), "refs")) return false;
  for (const char* name : {"config", "packed-refs", "reftable", "refs"}) {
    if (!out->Add(fmt::format("common/{}", name), common.get(), name)) return false;
  }
  return true;
}

}  // namespace

std::optional<std::string> SourceStampNow(const std::string& source, const struct timespec& now) {
  auto dirs = FindSourceGitDirs(source);
  if (!dirs) return std::nullopt;
  StampWriter out(now);
  // Which directories they are belongs to the stamp too: a `gitdir:` file pointed elsewhere.
  std::string text =
      fmt::format("source {}\ngit {}\ncommon {}\n", source, dirs->git_dir, dirs->common_dir);
  if (!StampGitDirs(source, *dirs, &out)) return std::nullopt;
  return text + out.Take();
}

std::optional<std::string> ReadSourceStamp(const std::string& source, const RunAsIds& ids) {
  base::UniqueFd memfd(::memfd_create("ateam-source-stamp", MFD_CLOEXEC));
  if (!memfd) return std::nullopt;
  struct timespec now {};
  if (::clock_gettime(CLOCK_REALTIME, &now) != 0) return std::nullopt;
  auto status = RunInChildAs(ids, [&]() -> int {
    auto stamp = SourceStampNow(source, now);
    return stamp && WriteAllTo(memfd.get(), *stamp) == 0 ? 0 : 1;
  });
  if (!status || !WIFEXITED(*status) || WEXITSTATUS(*status) != 0) return std::nullopt;
  return ReadAllFrom(memfd.get(), kMaxStampBytes);
}

}  // namespace sbx::dispatch
