#include "dispatch/host/orphan_cgroups.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <set>

#include <fmt/format.h>

#include "base/unique_fd.h"
#include "dispatch/host/cgroup.h"
#include "dispatch/host/stale_state.h"
#include "dispatch/sys/at_file.h"

namespace sbx::dispatch {
namespace {

constexpr const char* kCgroupPrefix = "ateam-sandbox-";
constexpr const char* kRunLeafPrefix = "ateam-sandbox-run-";
constexpr size_t kIdLength = 12;
constexpr int kMaxCgroupDepth = 32;  // systemd nests a few levels; a cgroup tree is shallow

// The dispatches a run or a janitor still holds; `unsure` when one held names none yet.
struct LiveDispatches {
  std::set<std::string> ids;
  bool unsure = false;
};

LiveDispatches FindLiveDispatches() {
  LiveDispatches live;
  for (const auto& base : StateDirBases()) {
    base::UniqueFd base_fd = OpenPrivateBase(base);
    if (!base_fd) continue;
    auto names = ListDirAt(base_fd.get());
    if (!names) continue;
    for (const auto& name : *names) {
      if (!name.starts_with("dispatch-")) continue;
      auto dir = OpenDirAt(base_fd.get(), name);
      if (!dir) continue;
      // Tested, and let go at once: a held lock is a run or its janitor.
      if (::flock(dir->get(), LOCK_EX | LOCK_NB) == 0) {
        ::flock(dir->get(), LOCK_UN);
        continue;
      }
      auto id = ReadFileAt(dir->get(), kStateDirIdFile, 64);
      if (id && id->size() == kIdLength) {
        live.ids.insert(*id);
      } else {
        live.unsure = true;
      }
    }
  }
  return live;
}

// The dispatch id in a cgroup's name, or "" when it is not a dispatch's.
std::string DispatchIdOf(const std::string& name) {
  std::string id;
  if (name.starts_with(kRunLeafPrefix)) {
    id = name.substr(std::string_view(kRunLeafPrefix).size());
  } else if (name.starts_with(kCgroupPrefix)) {
    id = name.substr(std::string_view(kCgroupPrefix).size());
  }
  if (id.size() != kIdLength) return "";
  for (char c : id) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return "";
  }
  return id;
}

// The mounted cgroup hierarchies: each v1 controller's and the unified one.
std::vector<std::string> CgroupMounts() {
  std::vector<std::string> mounts;
  auto is = [](const std::string& path, long magic) {
    struct statfs fs {};
    return ::statfs(path.c_str(), &fs) == 0 && static_cast<long>(fs.f_type) == magic;
  };
  const std::string root = "/sys/fs/cgroup";
  if (is(root, CGROUP2_SUPER_MAGIC)) return {root};
  for (const char* sub : {"memory", "pids", "cpu", "unified"}) {
    const std::string path = root + "/" + sub;
    if (is(path, CGROUP_SUPER_MAGIC) || is(path, CGROUP2_SUPER_MAGIC)) mounts.push_back(path);
  }
  return mounts;
}

// Every directory below `dir` named like a dispatch's cgroup and owned by the caller.
void FindDispatchCgroups(const std::string& dir, int depth,
                         std::vector<std::pair<std::string, std::string>>* found) {
  if (depth > kMaxCgroupDepth) return;
  base::UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return;
  auto entries = ListDirTypedAt(fd.get());
  if (!entries) return;
  for (const auto& entry : *entries) {
    if (entry.type != DT_DIR) continue;
    const std::string path = dir + "/" + entry.name;
    const std::string id = DispatchIdOf(entry.name);
    if (id.empty()) {
      FindDispatchCgroups(path, depth + 1, found);
      continue;
    }
    struct stat st {};
    if (::fstatat(fd.get(), entry.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        st.st_uid == ::geteuid()) {
      found->emplace_back(path, id);
    }
  }
}

}  // namespace

base::Status MarkStateDirDispatch(const std::string& state_dir, const std::string& id) {
  base::UniqueFd dir(::open(state_dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir) return base::ErrnoError("Can't open the state directory", state_dir);
  return WriteFileAt(dir.get(), kStateDirIdFile, id);
}

OrphanCgroupReport RemoveOrphanCgroups(bool dry_run) {
  OrphanCgroupReport report;
  std::vector<std::pair<std::string, std::string>> found;
  for (const auto& mount : CgroupMounts()) FindDispatchCgroups(mount, 0, &found);
  if (found.empty()) return report;
  // After the cgroups were listed: a run that started since has its state directory
  // locked and named by now, or its cgroup was not listed.
  const LiveDispatches live = FindLiveDispatches();
  if (live.unsure) {
    for (const auto& [path, id] : found) {
      if (!live.ids.contains(id)) ++report.kept_unsure;
    }
    return report;
  }
  for (const auto& [path, id] : found) {
    if (live.ids.contains(id)) continue;
    if (!dry_run) {
      RemoveCgroupDirs({path}, 2);
      struct stat st {};
      if (::stat(path.c_str(), &st) == 0) {
        report.failed.push_back(fmt::format("{}: can't remove the orphaned cgroup", path));
        continue;
      }
    }
    report.removed.push_back(path);
  }
  return report;
}

}  // namespace sbx::dispatch
