#include "dispatch/request/credentials_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "base/safe_path.h"
#include "base/unique_fd.h"

namespace sbx::dispatch {
namespace {

std::string Why(int err) { return std::strerror(err); }  // NOLINT(concurrency-mt-unsafe)

// Walks up from `dir` to / by "..", never by name: the directories the open really went
// through. Each must belong to root or `owner` and be writable by nobody else (sticky
// ones excepted, where nobody else can rename or replace another's entry).
base::Status CheckChainAbove(int dir, uid_t owner) {
  base::UniqueFd fd(::fcntl(dir, F_DUPFD_CLOEXEC, 0));
  if (!fd) return base::ErrnoError("Can't dup directory fd");
  for (int depth = 0; depth < 4096; ++depth) {
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return base::ErrnoError("Can't stat directory");
    auto shown = base::FdPath(fd.get());
    if (!base::CheckDirStat(st, {owner, false, /*as_ancestor=*/true}, "")) {
      bool foreign = st.st_uid != 0 && st.st_uid != owner;
      return base::Error::Message(fmt::format("{} is {}",
                                              shown ? *shown : std::string("a directory above it"),
                                              foreign ? fmt::format("owned by uid {}", st.st_uid)
                                                      : std::string("writable by group or other")));
    }
    base::UniqueFd up(::openat(fd.get(), "..", O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!up) return base::ErrnoError("Can't open ..");
    struct stat up_st {};
    if (::fstat(up.get(), &up_st) != 0) return base::ErrnoError("Can't stat ..");
    if (up_st.st_dev == st.st_dev && up_st.st_ino == st.st_ino) return {};  // reached /
    fd = std::move(up);
  }
  return base::Error(ELOOP, "Directory nesting too deep");
}

}  // namespace

base::Result<std::string> ReadCredentialsFile(const std::string& path,
                                              const std::string& flag_value, bool root_caller,
                                              std::string_view flag) {
  auto refuse = [&](const std::string& why) {
    return base::Error::Message(fmt::format("{} {}: {}", flag, flag_value, why));
  };
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return refuse("give the file by an absolute path");
  const std::string parent_path = slash == 0 ? std::string("/") : path.substr(0, slash);
  const std::string name = path.substr(slash + 1);
  if (name.empty() || name == "." || name == "..") return refuse("not a regular file");
  // The directories above follow symlinks as the caller's own shell would; the file itself
  // is never a symlink, and its type is known before it is opened (no FIFO, no device).
  base::UniqueFd parent(::open(parent_path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!parent) return refuse(Why(errno));
  struct stat st {};
  if (::fstatat(parent.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    return refuse(Why(errno));
  }
  if (S_ISLNK(st.st_mode)) return refuse("is a symlink; give the file it points to");
  if (!S_ISREG(st.st_mode)) return refuse("not a regular file");
  if (root_caller) {
    if (auto chain = CheckChainAbove(parent.get(), st.st_uid); !chain) {
      return refuse(
          fmt::format("{}: a root caller reads it only through directories that "
                      "belong to root or the file's owner and nobody else can write",
                      chain.error().Render()));
    }
  }
  base::UniqueFd fd(::openat(parent.get(), name.c_str(),
                             O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (!fd) {
    int err = errno;
    return refuse(err == EACCES ? Why(err) + " (the caller must be able to read it)" : Why(err));
  }
  struct stat opened {};
  if (::fstat(fd.get(), &opened) != 0) return refuse(Why(errno));
  if (!S_ISREG(opened.st_mode) || opened.st_ino != st.st_ino || opened.st_dev != st.st_dev) {
    return refuse("changed while it was opened");
  }
  auto too_big = [&](unsigned long long size) {
    return refuse(fmt::format("{} bytes, more than the {} KiB a credentials file may have", size,
                              kMaxCredentialsBytes / 1024));
  };
  if (static_cast<unsigned long long>(opened.st_size) > kMaxCredentialsBytes) {
    return too_big(static_cast<unsigned long long>(opened.st_size));
  }
  std::string content;
  char buf[16384];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return refuse(Why(errno));
    if (n == 0) break;
    content.append(buf, static_cast<size_t>(n));
    if (content.size() > kMaxCredentialsBytes) return too_big(content.size());
  }
  return content;
}

}  // namespace sbx::dispatch
