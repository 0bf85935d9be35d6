#include "dispatch/workspace.h"

#include <fcntl.h>
#include <ftw.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <vector>

#include <fmt/format.h>

#include "base/unique_fd.h"

namespace sbx::dispatch {

std::string NewDispatchId() {
  unsigned char bytes[6] = {};
  if (::getrandom(bytes, sizeof(bytes), 0) != sizeof(bytes)) {
    auto now = static_cast<uint64_t>(::time(nullptr)) ^ static_cast<uint64_t>(::getpid());
    for (auto& b : bytes) {
      b = static_cast<unsigned char>(now & 0xff);
      now >>= 8;
    }
  }
  std::string id;
  for (unsigned char b : bytes) id += fmt::format("{:02x}", b);
  return id;
}

base::Status CloneRepository(const std::string& source, const std::string& dest) {
  // A repository owned by another user is still cloned (the clone is ours); git checks
  // the owner in its helper processes too, and there only honours system or global
  // configuration: give the clone a system configuration that says so.
  std::string config = dest + ".gitconfig";
  {
    base::UniqueFd fd(::open(config.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    const std::string text = "[safe]\n\tdirectory = *\n";
    if (!fd || ::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
      return base::ErrnoError("Can't write", config);
    }
  }
  pid_t pid = ::fork();
  if (pid < 0) return base::ErrnoError("fork for git clone");
  if (pid == 0) {
    ::setenv("GIT_CONFIG_SYSTEM", config.c_str(), 1);
    ::setenv("GIT_TERMINAL_PROMPT", "0", 1);
    const char* argv[] = {
        "git", "-c",           "safe.directory=*", "clone", "--quiet", "--no-hardlinks",
        "--",  source.c_str(), dest.c_str(),       nullptr};
    ::execvp("git", const_cast<char* const*>(argv));
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return base::ErrnoError("waitpid for git clone");
  }
  ::unlink(config.c_str());
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return {};
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
    return base::Error::Message("cannot clone the repository: git is not installed");
  }
  return base::Error::Message(fmt::format("git clone of {} failed (exit status {})", source,
                                          WIFEXITED(status) ? WEXITSTATUS(status) : 128));
}

base::Result<std::string> MakeDirectories(const std::string& path, mode_t mode) {
  std::string absolute = path;
  if (!absolute.starts_with('/')) {
    char cwd[PATH_MAX];
    if (::getcwd(cwd, sizeof(cwd)) == nullptr) return base::ErrnoError("getcwd");
    absolute = fmt::format("{}/{}", cwd, path);
  }
  for (size_t pos = 1; pos <= absolute.size(); ++pos) {
    if (pos != absolute.size() && absolute[pos] != '/') continue;
    std::string prefix = absolute.substr(0, pos);
    if (::mkdir(prefix.c_str(), mode) != 0 && errno != EEXIST) {
      return base::ErrnoError("Can't create directory", prefix);
    }
  }
  struct stat st {};
  if (::stat(absolute.c_str(), &st) != 0)
    return base::ErrnoError("Can't create directory", absolute);
  if (!S_ISDIR(st.st_mode)) return base::Error(ENOTDIR, "Can't use directory", absolute);
  char resolved[PATH_MAX];
  if (::realpath(absolute.c_str(), resolved) == nullptr)
    return base::ErrnoError("realpath", absolute);
  return std::string(resolved);
}

namespace {
uid_t g_chown_uid = 0;  // nftw has no user pointer; ChownTree runs single-threaded
gid_t g_chown_gid = 0;

int ChownEntry(const char* path, const struct stat*, int, FTW*) {
  return ::lchown(path, g_chown_uid, g_chown_gid) == 0 ? 0 : errno;
}
}  // namespace

base::Status ChownTree(const std::string& path, uid_t uid, gid_t gid) {
  g_chown_uid = uid;
  g_chown_gid = gid;
  int rc = ::nftw(path.c_str(), ChownEntry, 32, FTW_PHYS);
  if (rc != 0) return base::Error(rc > 0 ? rc : errno, "Can't change the owner of", path);
  return {};
}

std::string DefaultWorkspaceRoot() {
  const char* cache = std::getenv("XDG_CACHE_HOME");
  std::string base;
  if (cache != nullptr && *cache == '/') {
    base = cache;
  } else {
    const char* home = std::getenv("HOME");
    base = fmt::format("{}/.cache", home != nullptr && *home == '/' ? home : "/tmp");
  }
  return base + "/ateam-sandbox/dispatches";
}

}  // namespace sbx::dispatch
