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

  // One line for `label`: its stat, or "-" when it is not there. False when it can't be
  // trusted (changed too recently, unreadable, too many entries).
  bool Add(const std::string& label, int dir_fd, const std::string& name) {
    struct stat st {};
    if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno != ENOENT) return false;
      text_ += label + " -\n";
      return true;
    }
    if (!Line(label, st)) return false;
    return !S_ISDIR(st.st_mode) || AddBelow(label, dir_fd, name, 0);
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
    auto entries = ListDirTypedAt(dir->get());
    if (!entries) return false;
    for (const auto& entry : *entries) {
      const std::string sub = label + "/" + entry.name;
      struct stat st {};
      if (::fstatat(dir->get(), entry.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return false;
      if (!Line(sub, st)) return false;
      if (S_ISDIR(st.st_mode) && !AddBelow(sub, dir->get(), entry.name, depth + 1)) return false;
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
    if (!stamp) return 1;
    size_t done = 0;
    while (done < stamp->size()) {
      ssize_t n = ::write(memfd.get(), stamp->data() + done, stamp->size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return 1;
      done += static_cast<size_t>(n);
    }
    return 0;
  });
  if (!status || !WIFEXITED(*status) || WEXITSTATUS(*status) != 0) return std::nullopt;
  std::string stamp;
  char buf[8192];
  off_t at = 0;
  for (;;) {
    ssize_t n = ::pread(memfd.get(), buf, sizeof buf, at);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::nullopt;
    if (n == 0) break;
    stamp.append(buf, static_cast<size_t>(n));
    at += n;
  }
  return stamp;
}

}  // namespace sbx::dispatch
