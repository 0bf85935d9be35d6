#include "base/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <random>

#include <fmt/format.h>

namespace sbx::base {
namespace {

std::string RandomSuffix() {
  std::random_device device;
  return fmt::format("{:08x}{:08x}", device(), device());
}

}  // namespace

Result<OutputFile> OutputFile::Prepare(const std::string& flag, const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? std::string(".")
                          : slash == 0               ? std::string("/")
                                                     : path.substr(0, slash);
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  if (name.empty() || name == "." || name == "..") {
    return Error::Message(fmt::format("{} {}: not a file name", flag, path));
  }
  UniqueFd dir_fd(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!dir_fd) return ErrnoError(flag, path);
  struct stat st {};
  if (::fstat(dir_fd.get(), &st) != 0) return ErrnoError(flag, dir);
  const uid_t me = ::geteuid();
  if (st.st_uid != me && st.st_uid != 0) {
    return Error::Message(fmt::format(
        "{} {}: the directory {} belongs to uid {}: write it in a directory of your own", flag,
        path, dir, st.st_uid));
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0 && (st.st_mode & S_ISVTX) == 0) {
    return Error::Message(fmt::format(
        "{} {}: others can write to {} (and it is not sticky): write it in a directory of "
        "your own",
        flag, path, dir));
  }
  OutputFile file(flag, path, name, std::move(dir_fd));
  if (auto checked = file.CheckName(); !checked) return checked.error();
  return file;
}

Status OutputFile::CheckName() const {
  struct stat st {};
  if (::fstatat(dir_.get(), name_.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return {};
    return ErrnoError(flag_, path_);
  }
  if (S_ISLNK(st.st_mode)) {
    return Error(ELOOP, fmt::format("{} {}: exists as a symlink (refused)", flag_, path_));
  }
  if (!S_ISREG(st.st_mode)) {
    return Error::Message(
        fmt::format("{} {}: exists and is not a regular file (refused)", flag_, path_));
  }
  if (st.st_uid != ::geteuid()) {
    return Error::Message(fmt::format("{} {}: exists and belongs to uid {}, not to you (refused)",
                                      flag_, path_, st.st_uid));
  }
  return {};
}

Result<UniqueFd> OutputFile::CreateTemp(mode_t mode) {
  Abort();
  std::string temp = fmt::format(".{}.{}.tmp", name_, RandomSuffix());
  UniqueFd fd(::openat(dir_.get(), temp.c_str(),
                       O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
  if (!fd) return ErrnoError(fmt::format("{}: can't create a file beside", flag_), path_);
  // The mode asked for, whatever the umask took away.
  (void)::fchmod(fd.get(), mode);
  temp_ = std::move(temp);
  return fd;
}

Status OutputFile::Commit(int fd) {
  if (temp_.empty()) return Error::Message(flag_ + ": nothing to commit");
  if (::fsync(fd) != 0) {
    Status failed = ErrnoError(fmt::format("{}: can't write", flag_), path_);
    Abort();
    return failed;
  }
  // Whatever was put at the name since Prepare is replaced, never written through.
  if (::renameat(dir_.get(), temp_.c_str(), dir_.get(), name_.c_str()) != 0) {
    Status failed = ErrnoError(fmt::format("{}: can't rename into place", flag_), path_);
    Abort();
    return failed;
  }
  temp_.clear();
  return {};
}

void OutputFile::Abort() {
  if (temp_.empty() || !dir_) return;
  (void)::unlinkat(dir_.get(), temp_.c_str(), 0);
  temp_.clear();
}

Result<UniqueFd> OutputFile::OpenForAppend(mode_t mode) const {
  for (int attempt = 0; attempt < 8; ++attempt) {
    // O_NONBLOCK: a FIFO planted after the check must not hold the writer.
    UniqueFd fd(::openat(dir_.get(), name_.c_str(),
                         O_WRONLY | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
    if (fd) {
      struct stat st {};
      if (::fstat(fd.get(), &st) != 0) return ErrnoError(flag_, path_);
      if (!S_ISREG(st.st_mode)) {
        return Error::Message(
            fmt::format("{} {}: exists and is not a regular file (refused)", flag_, path_));
      }
      if (st.st_uid != ::geteuid()) {
        return Error::Message(fmt::format(
            "{} {}: exists and belongs to uid {}, not to you (refused)", flag_, path_, st.st_uid));
      }
      return fd;
    }
    if (errno == ELOOP) {
      return Error(ELOOP, fmt::format("{} {}: exists as a symlink (refused)", flag_, path_));
    }
    if (errno != ENOENT) return ErrnoError(flag_, path_);
    fd.reset(::openat(dir_.get(), name_.c_str(),
                      O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
    if (fd) return fd;
    if (errno != EEXIST) return ErrnoError(flag_, path_);
    // Made by somebody else in between: look at it again.
  }
  return Error::Message(fmt::format("{} {}: the name keeps changing (refused)", flag_, path_));
}

}  // namespace sbx::base
