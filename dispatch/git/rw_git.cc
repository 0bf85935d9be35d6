#include "dispatch/git/rw_git.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>

#include <fmt/format.h>

#include "base/unique_fd.h"
#include "dispatch/git/git_walk.h"
#include "dispatch/sys/at_file.h"

namespace sbx::dispatch {

base::Status RefuseRwInsideGitDir(const std::string& path) {
  char real[PATH_MAX];
  if (::realpath(path.c_str(), real) == nullptr) return {};  // its own check reports it
  std::string resolved = real;
  auto refuse = [&](const std::string& git_dir) {
    return base::Error::Message(fmt::format(
        "--rw {}: inside the git directory {}: a hook or config written there would run on "
        "the host; give the repository's top directory instead (its .git is guarded)",
        path, git_dir));
  };
  if (BaseNameOf(resolved) == ".git") {
    struct stat st {};
    if (::lstat(real, &st) == 0 && !S_ISDIR(st.st_mode)) return refuse(resolved);
  }
  // Every directory above it: named .git, or laid out like a bare repository.
  std::string dir = resolved;
  while (true) {
    auto slash = dir.rfind('/');
    if (slash == std::string::npos || dir == "/") break;
    dir = slash == 0 ? "/" : dir.substr(0, slash);
    if (BaseNameOf(dir) == ".git") return refuse(dir);
    base::UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd) continue;
    auto entries = ListDirTypedAt(fd.get());
    if (entries && LooksLikeBareRepository(fd.get(), *entries)) return refuse(dir);
    if (dir == "/") break;
  }
  return {};
}

}  // namespace sbx::dispatch
