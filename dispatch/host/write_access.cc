#include "dispatch/host/write_access.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>

#include "base/unique_fd.h"
#include "dispatch/sys/run_as_child.h"

namespace sbx::dispatch {
namespace {

std::string Who(const RunAsIds& run_as) {
  return fmt::format("uid {} (the sandbox's)", run_as ? run_as->uid : ::geteuid());
}

std::string OwnerAndMode(int dirfd, const char* path) {
  struct stat st {};
  if (::fstatat(dirfd, path, &st, AT_SYMLINK_NOFOLLOW) != 0) return "";
  return fmt::format(" (owner uid {}, mode {:04o})", st.st_uid, st.st_mode & 07777);
}

// In the child, as the sandbox's ids: one line per place it cannot write.
std::string CheckAsSandbox(const DispatchRequest& request, const DispatchDirs& dirs,
                           const RunAsIds& run_as) {
  std::string lines;
  const std::string who = Who(run_as);
  // --run-as is a root caller's; an unprivileged caller's sandbox is itself.
  const std::string or_owner = run_as ? ", or give --run-as its owner" : "";
  for (const std::string& path : request.rw_paths) {
    if (::faccessat(AT_FDCWD, path.c_str(), W_OK, AT_EACCESS) == 0) continue;
    const int err = errno;
    lines += fmt::format(
        "warning: --rw {}: {} can't write it{}: {}; it is bound read-write, but writes there "
        "fail inside (make it writable to that uid{})\n",
        path, who, OwnerAndMode(AT_FDCWD, path.c_str()), std::strerror(err),
        or_owner);  // NOLINT(concurrency-mt-unsafe)
  }
  if (!dirs.given_workspace) return lines;
  // Its top is lent to the sandbox's ids for the dispatch; what is inside keeps its owner.
  // The top level is looked at, not the whole tree: that is where a root-made .git is.
  const std::string& top = dirs.given_workspace->path();
  base::UniqueFd dir_fd(
      ::openat(dirs.given_workspace->fd(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  DIR* dir = dir_fd ? ::fdopendir(dir_fd.get()) : nullptr;
  if (dir == nullptr) {
    return lines + fmt::format("warning: --workspace {}: {} can't read it: {}\n", top, who,
                               std::strerror(errno));  // NOLINT(concurrency-mt-unsafe)
  }
  (void)dir_fd.release();  // the DIR owns it now
  int total = 0;
  int unwritable = 0;
  std::string first;
  std::string first_owner;
  while (const dirent* entry = ::readdir(dir)) {  // NOLINT(concurrency-mt-unsafe)
    const std::string name = entry->d_name;
    if (name == "." || name == "..") continue;
    struct stat st {};
    if (::fstatat(::dirfd(dir), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        S_ISLNK(st.st_mode)) {
      continue;
    }
    ++total;
    if (::faccessat(::dirfd(dir), name.c_str(), W_OK, AT_EACCESS) == 0) continue;
    if (++unwritable == 1 || name < first) {
      first = name;
      first_owner = OwnerAndMode(::dirfd(dir), name.c_str());
    }
  }
  ::closedir(dir);
  if (unwritable > 0) {
    lines += fmt::format(
        "warning: --workspace {}: {} can't write {} of its {} top-level entries (such as "
        "{}{}); the agent cannot change them (make them that uid's{})\n",
        top, who, unwritable, total, first, first_owner,
        run_as ? ", or give --run-as their owner" : "");
  }
  return lines;
}

}  // namespace

std::vector<std::string> UnwritablePlaces(const DispatchRequest& request, const DispatchDirs& dirs,
                                          const RunAsIds& run_as) {
  if (request.rw_paths.empty() && !dirs.given_workspace) return {};
  auto pipe = base::MakePipe();
  if (!pipe) return {};
  const int write_fd = pipe->write_end.get();
  std::string text;
  auto status = RunInChildAs(
      run_as,
      [&]() -> int {
        std::string lines = CheckAsSandbox(request, dirs, run_as);
        const char* data = lines.data();
        size_t left = lines.size();
        while (left > 0) {
          ssize_t n = ::write(write_fd, data, left);
          if (n < 0 && errno == EINTR) continue;
          if (n <= 0) return 1;
          data += n;
          left -= static_cast<size_t>(n);
        }
        return 0;
      },
      [&](pid_t /*child*/) {
        pipe->write_end.reset();
        char buf[4096];
        ssize_t n = 0;
        while ((n = ::read(pipe->read_end.get(), buf, sizeof(buf))) > 0 ||
               (n < 0 && errno == EINTR)) {
          if (n > 0 && text.size() < 65536) text.append(buf, static_cast<size_t>(n));
        }
      });
  std::vector<std::string> warnings;
  if (!status) return warnings;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    if (end > start) warnings.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return warnings;
}

void WarnUnwritablePlaces(const DispatchRequest& request, const DispatchDirs& dirs,
                          const RunAsIds& run_as) {
  for (const std::string& line : UnwritablePlaces(request, dirs, run_as)) {
    fmt::print(stderr, "ateam-sandbox run: {}\n", line);
  }
}

}  // namespace sbx::dispatch
