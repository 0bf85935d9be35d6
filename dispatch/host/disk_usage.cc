#include "dispatch/host/disk_usage.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>
#include <utility>

namespace sbx::dispatch {
namespace {

// The open directories from a root down to the one being read; closed on every path out.
class DirStack {
 public:
  DirStack() = default;
  DirStack(const DirStack&) = delete;
  DirStack& operator=(const DirStack&) = delete;
  ~DirStack() {
    for (DIR* dir : dirs_) ::closedir(dir);
  }
  // Takes `fd` (closed when it cannot be made a DIR).
  bool Push(int fd) {
    DIR* dir = ::fdopendir(fd);
    if (dir == nullptr) {
      ::close(fd);
      return false;
    }
    dirs_.push_back(dir);
    return true;
  }
  void Pop() {
    ::closedir(dirs_.back());
    dirs_.pop_back();
  }
  [[nodiscard]] bool empty() const { return dirs_.empty(); }
  [[nodiscard]] DIR* top() const { return dirs_.back(); }
  [[nodiscard]] size_t depth() const { return dirs_.size(); }

 private:
  std::vector<DIR*> dirs_;
};

bool Above(const DiskUsage& usage, const DiskUsage& limit) {
  return usage.bytes > limit.bytes || usage.names > limit.names;
}

base::Error CantOpen(int err, size_t depth) {
  if (err == EMFILE || err == ENFILE) {
    return {err, "can't measure the workspace and out dir: a tree deeper than",
            std::to_string(depth) + " levels"};
  }
  return {err, "can't measure the workspace and out dir: a directory there can't be opened"};
}

}  // namespace

base::Result<DiskUsage> MeasureTrees(const std::vector<int>& root_fds, DiskUsage stop_above) {
  DiskUsage usage;
  std::set<std::pair<dev_t, ino_t>> linked;  // files of several links, counted once
  for (int root_fd : root_fds) {
    struct stat root {};
    if (::fstat(root_fd, &root) != 0) return base::ErrnoError("fstat");
    usage.bytes += static_cast<uint64_t>(root.st_blocks) * 512;
    DirStack stack;
    // A descriptor of its own for the walk: the root's stays open for the next pass.
    int first = ::openat(root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (first < 0 || !stack.Push(first)) return CantOpen(errno, 0);
    while (!stack.empty()) {
      errno = 0;
      const dirent* entry = ::readdir(stack.top());
      if (entry == nullptr) {
        if (errno != 0) return base::ErrnoError("readdir");
        stack.Pop();
        continue;
      }
      const char* name = entry->d_name;
      if (std::strcmp(name, ".") == 0 || std::strcmp(name, "..") == 0) continue;
      const int dir_fd = ::dirfd(stack.top());
      struct stat st {};
      if (::fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT) continue;  // removed since the directory was read
        return base::ErrnoError("fstatat");
      }
      ++usage.names;
      if (S_ISDIR(st.st_mode) || st.st_nlink < 2 || linked.emplace(st.st_dev, st.st_ino).second) {
        usage.bytes += static_cast<uint64_t>(st.st_blocks) * 512;
      }
      if (Above(usage, stop_above)) return usage;
      if (!S_ISDIR(st.st_mode) || st.st_dev != root.st_dev) continue;
      // O_NOFOLLOW and the check of what opened: a directory swapped for a link or a
      // mount since the fstatat is not entered.
      int sub = ::openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub < 0) {
        if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP) continue;
        return CantOpen(errno, stack.depth());
      }
      struct stat opened {};
      if (::fstat(sub, &opened) != 0 || opened.st_dev != st.st_dev || opened.st_ino != st.st_ino) {
        ::close(sub);
        continue;
      }
      if (!stack.Push(sub)) return CantOpen(errno, stack.depth());
    }
  }
  return usage;
}

}  // namespace sbx::dispatch
