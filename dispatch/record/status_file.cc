#include "dispatch/record/status_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include <fmt/format.h>

#include "base/safe_path.h"
#include "dispatch/git/workspace.h"

namespace sbx::dispatch {

base::Result<StatusFile> StatusFile::Open(const std::string& path) {
  auto slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  if (name.empty() || name == "." || name == "..") {
    return base::Error::Message(fmt::format("--status-json {}: not a file name", path));
  }
  base::UniqueFd dir_fd(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!dir_fd) return base::ErrnoError("--status-json", path);
  base::UniqueFd existing(
      ::openat(dir_fd.get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!existing && errno != ENOENT) {
    if (errno == ELOOP) {
      return base::Error::Message(fmt::format("--status-json {}: is a symlink", path));
    }
    return base::ErrnoError("--status-json", path);
  }
  struct stat st {};
  if (existing && (::fstat(existing.get(), &st) != 0 || !S_ISREG(st.st_mode))) {
    return base::Error::Message(fmt::format("--status-json {}: not a regular file", path));
  }
  return StatusFile(path, name, std::move(dir_fd));
}

base::Status StatusFile::Write(const std::string& text, const std::string& workspace,
                               const std::string& out) const {
  for (const std::string& top : {workspace, out}) {
    struct stat st {};
    if (top.empty() || ::stat(top.c_str(), &st) != 0) continue;
    // The dispatch refused such a name before it started, with its own line; nothing is
    // written there.
    auto below = base::IsDirBelow(dir_.get(), st);
    if (!below || *below) return {};
  }
  std::string temp = fmt::format(".{}.{}.tmp", name_, NewDispatchId());
  base::UniqueFd fd(::openat(dir_.get(), temp.c_str(),
                             O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (!fd) return base::ErrnoError("Can't write", path_);
  bool written = ::write(fd.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size());
  int err = errno;
  if (!written || ::fsync(fd.get()) != 0 ||
      ::renameat(dir_.get(), temp.c_str(), dir_.get(), name_.c_str()) != 0) {
    if (written) err = errno;
    ::unlinkat(dir_.get(), temp.c_str(), 0);
    return base::Error(err, "Can't write", path_);
  }
  return {};
}

}  // namespace sbx::dispatch
