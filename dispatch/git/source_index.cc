#include "dispatch/git/source_index.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <utility>

#include "base/unique_fd.h"
#include "dispatch/sys/run_as_child.h"

namespace sbx::dispatch {
namespace {

// The copy's name in the clone's .git; git's lock file for it is the same with ".lock".
constexpr const char* kCopyName = "ateam-source-index";

// In the child, as the dispatch's user: 0 when the copy is made with the original's times.
int CopyIndex(const std::string& source_git_dir, int ws_fd) {
  base::UniqueFd from(
      ::open((source_git_dir + "/index").c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  struct stat st {};
  if (!from || ::fstat(from.get(), &st) != 0 || !S_ISREG(st.st_mode) ||
      st.st_size > SourceIndexCopy::kMaxBytes) {
    return 1;
  }
  // The clone's .git, made by git clone as this user a moment ago; nothing is followed.
  base::UniqueFd git_dir(::openat(ws_fd, ".git", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!git_dir) return 1;
  base::UniqueFd to(::openat(git_dir.get(), kCopyName,
                             O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!to) return 1;
  off_t left = st.st_size;
  while (left > 0) {
    ssize_t n =
        ::copy_file_range(from.get(), nullptr, to.get(), nullptr, static_cast<size_t>(left), 0);
    if (n <= 0) return 1;  // a file that shrank meanwhile, or an error: no copy
    left -= n;
  }
  const struct timespec times[2] = {st.st_atim, st.st_mtim};
  return ::futimens(to.get(), times) == 0 ? 0 : 1;
}

}  // namespace

SourceIndexCopy SourceIndexCopy::Make(const std::string& source_git_dir, int ws_fd,
                                      const RunAsIds& ids) {
  SourceIndexCopy copy;
  copy.ws_fd_ = ws_fd;
  copy.ids_ = ids;
  auto status = RunInChildAs(ids, [&] { return CopyIndex(source_git_dir, ws_fd); });
  if (status && WIFEXITED(*status) && WEXITSTATUS(*status) == 0) {
    copy.file_ = std::string(".git/") + kCopyName;
  } else {
    copy.Drop();  // a partial copy
  }
  return copy;
}

SourceIndexCopy::SourceIndexCopy(SourceIndexCopy&& other) noexcept
    : ws_fd_(std::exchange(other.ws_fd_, -1)),
      ids_(other.ids_),
      file_(std::exchange(other.file_, std::string())) {}

void SourceIndexCopy::Drop() {
  if (ws_fd_ < 0) return;
  const int ws_fd = std::exchange(ws_fd_, -1);
  file_.clear();
  // In the clone, which is the dispatch's user's: removed as that user.
  (void)RunInChildAs(ids_, [ws_fd] {
    base::UniqueFd git_dir(
        ::openat(ws_fd, ".git", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!git_dir) return 1;
    (void)::unlinkat(git_dir.get(), kCopyName, 0);
    (void)::unlinkat(git_dir.get(), (std::string(kCopyName) + ".lock").c_str(), 0);
    return 0;
  });
}

}  // namespace sbx::dispatch
