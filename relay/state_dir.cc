#include "relay/state_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <utility>
#include <vector>

#include "base/c_handle.h"

namespace sbx::relay {
namespace {

using DirHandle = base::CHandle<DIR, ::closedir>;

base::Status CheckStat(const struct stat& st, const std::string& path, uid_t uid) {
  if (S_ISLNK(st.st_mode)) return base::Error(ELOOP, "Refusing state directory (a symlink)", path);
  if (!S_ISDIR(st.st_mode)) return base::Error(ENOTDIR, "Refusing state directory", path);
  if (st.st_uid != uid) {
    return base::Error(EPERM,
                       "Refusing state directory (owned by uid " + std::to_string(st.st_uid) +
                           ", not " + std::to_string(uid) + ")",
                       path);
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return base::Error(EPERM, "Refusing state directory (writable by group or other)", path);
  }
  return {};
}

}  // namespace

base::Status CheckPrivateDir(const std::string& path, uid_t uid) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) < 0) return base::ErrnoError("Can't lstat state directory", path);
  return CheckStat(st, path, uid);
}

base::Result<std::string> EnsureUserBaseDir(const std::string& tmp_root, uid_t uid, mode_t mode) {
  std::string path = tmp_root + "/ateam-sandbox-" + std::to_string(uid);
  // mkdir never follows a symlink at the last component: it fails with EEXIST, and the check
  // below then refuses the link.
  if (::mkdir(path.c_str(), mode) == 0) {
    // A root caller making the directory for the uid its sandbox runs as hands it over.
    if (::geteuid() != uid && ::chown(path.c_str(), uid, static_cast<gid_t>(-1)) < 0) {
      return base::ErrnoError("Can't hand over state directory", path);
    }
  } else if (errno != EEXIST) {
    return base::ErrnoError("Can't create state directory", path);
  }
  if (auto checked = CheckPrivateDir(path, uid); !checked) return checked.error();
  return path;
}

base::Result<StateDir> StateDir::Create(const StateDirOptions& options) {
  std::string base_dir;
  if (!options.xdg_runtime_dir.empty()) {
    if (auto checked = CheckPrivateDir(options.xdg_runtime_dir, options.uid); !checked) {
      return checked.error();
    }
    base_dir = options.xdg_runtime_dir;
  }
  mode_t mode = options.traversable ? 0711 : 0700;
  std::string tmpl;
  if (base_dir.empty()) {
    auto user_dir = EnsureUserBaseDir(options.tmp_root, options.uid, mode);
    // Blocked by what somebody else put at the name: a fresh directory of our own instead.
    tmpl = user_dir ? *user_dir + "/dispatch-XXXXXX"
                    : options.tmp_root + "/ateam-sandbox-" + std::to_string(options.uid) +
                          "-dispatch-XXXXXX";
    base_dir = user_dir ? *user_dir : options.tmp_root;
  } else {
    tmpl = base_dir + "/dispatch-XXXXXX";
  }
  if (::mkdtemp(tmpl.data()) == nullptr) {
    return base::ErrnoError("Can't create dispatch directory in", base_dir);
  }
  // Hold the directory open: Remove() then unlinks entries relative to this very directory.
  base::UniqueFd fd(::open(tmpl.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) {
    base::Error error = base::ErrnoError("Can't open dispatch directory", tmpl);
    ::rmdir(tmpl.c_str());
    return error;
  }
  if (options.traversable && ::fchmod(fd.get(), 0711) < 0) {
    base::Error error = base::ErrnoError("Can't chmod dispatch directory", tmpl);
    ::rmdir(tmpl.c_str());
    return error;
  }
  if (::geteuid() != options.uid && ::fchown(fd.get(), options.uid, static_cast<gid_t>(-1)) < 0) {
    base::Error error = base::ErrnoError("Can't hand over dispatch directory", tmpl);
    ::rmdir(tmpl.c_str());
    return error;
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) < 0 || !CheckStat(st, tmpl, options.uid)) {
    ::rmdir(tmpl.c_str());
    return base::Error(EPERM, "Dispatch directory is not private", tmpl);
  }
  // Locked for as long as this descriptor or a copy lives (a janitor's): `gc` removes only
  // a state directory nobody holds the lock of, one no dispatch owns any more. Waiting,
  // not trying: a `gc` that lists the base tests each directory's lock and lets go at
  // once, and a try that met its test would leave this dispatch unheld for good.
  while (::flock(fd.get(), LOCK_EX) != 0) {
    if (errno != EINTR) {
      base::Error error = base::ErrnoError("Can't lock dispatch directory", tmpl);
      ::rmdir(tmpl.c_str());
      return error;
    }
  }
  return StateDir(std::move(tmpl), std::move(fd));
}

StateDir::StateDir(StateDir&& other) noexcept
    : path_(std::move(other.path_)), dir_fd_(std::move(other.dir_fd_)) {
  other.path_.clear();
}

StateDir& StateDir::operator=(StateDir&& other) noexcept {
  if (this != &other) {
    (void)Remove();
    path_ = std::exchange(other.path_, {});
    dir_fd_ = std::move(other.dir_fd_);
  }
  return *this;
}

StateDir::~StateDir() { (void)Remove(); }

base::Status StateDir::Remove() {
  if (!dir_fd_) return {};
  // Read the names first, unlink after: unlinking while readdir walks is allowed but makes
  // the walk's result unspecified.
  std::vector<std::string> names;
  if (DirHandle dir(::fdopendir(::fcntl(dir_fd_.get(), F_DUPFD_CLOEXEC, 0))); dir) {
    while (const dirent* entry = ::readdir(dir.get())) {
      if (entry->d_type != DT_DIR) names.emplace_back(entry->d_name);
    }
  }
  base::Status status;
  for (const std::string& name : names) {
    if (::unlinkat(dir_fd_.get(), name.c_str(), 0) < 0 && errno != ENOENT && status) {
      status = base::ErrnoError("Can't remove", path_ + "/" + name);
    }
  }
  dir_fd_.reset();
  if (::rmdir(path_.c_str()) < 0 && errno != ENOENT && status) {
    status = base::ErrnoError("Can't remove state directory", path_);
  }
  return status;
}

}  // namespace sbx::relay
