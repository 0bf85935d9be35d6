#include "dispatch/record/list.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "base/safe_path.h"
#include "dispatch/host/dir.h"
#include "dispatch/host/lock.h"
#include "dispatch/host/prepare.h"
#include "dispatch/sys/at_file.h"
#include "dispatch/sys/run_as_child.h"
#include "runtime/host_facts.h"

namespace sbx::dispatch {
namespace {

// Deeper than this the walk stops (each level holds a descriptor), as the removal does.
constexpr int kMaxWalkDepth = 256;

bool IsDispatchId(const std::string& name) {
  return name.size() == 12 && name.find_first_not_of("0123456789abcdef") == std::string::npos;
}

// Forward: UsageWalk hands a root caller's sandbox directories to UsageAs.
base::Result<uint64_t> UsageAs(int dispatch_fd, const std::string& name,
                               const runtime::SandboxSpec::HostIds& ids);

struct UsageWalk {
  dev_t dev = 0;
  std::optional<uid_t> walk_uid;
  RunAsIds hand_to;  // directories of these ids right below the top are counted as them
  std::set<std::pair<dev_t, ino_t>> linked;  // files with more than one link, counted once
  uint64_t bytes = 0;

  void Below(int dirfd, int depth) {
    auto names = ListDirAt(dirfd);
    if (!names) return;
    for (const auto& name : *names) {
      auto st = StatAt(dirfd, name);
      if (!st) continue;
      if (!S_ISDIR(st->st_mode) && st->st_nlink > 1 &&
          !linked.insert({st->st_dev, st->st_ino}).second) {
        continue;
      }
      bytes += static_cast<uint64_t>(st->st_blocks) * 512;
      if (!S_ISDIR(st->st_mode) || st->st_dev != dev || depth >= kMaxWalkDepth) continue;
      if (depth == 0 && hand_to && st->st_uid == hand_to->uid) {
        auto theirs = UsageAs(dirfd, name, *hand_to);
        if (theirs) bytes += *theirs;
        continue;
      }
      if (walk_uid && st->st_uid != *walk_uid) continue;
      auto sub = OpenDirAt(dirfd, name);
      if (sub) Below(sub->get(), depth + 1);
    }
  }
};

// The size below the directory `name` in `dispatch_fd` (a root caller's sandbox ids own
// it), counted by a child that became `ids` first. The child hands the number back through
// a shared anonymous page: no pipe to drain, nothing it could block.
base::Result<uint64_t> UsageAs(int dispatch_fd, const std::string& name,
                               const runtime::SandboxSpec::HostIds& ids) {
  auto sub = OpenDirAt(dispatch_fd, name);
  if (!sub) return sub.error();
  void* page =
      ::mmap(nullptr, sizeof(uint64_t), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) return base::ErrnoError("mmap");
  auto* shared = static_cast<uint64_t*>(page);
  *shared = 0;
  int subfd = sub->get();
  auto status = RunInChildAs(ids, [subfd, shared]() -> int {
    *shared = DiskUsageBelow(subfd, std::nullopt);
    return 0;
  });
  uint64_t bytes = *shared;
  ::munmap(page, sizeof(uint64_t));
  if (!status) return status.error();
  if (!WIFEXITED(*status) || WEXITSTATUS(*status) != 0) {
    return base::Error::Message(fmt::format("Can't measure {} as uid {}", name, ids.uid));
  }
  return bytes;
}

// Looks at one <id> the caller owns: its run-as owner, size, lock and record.
DispatchEntry Inspect(const DispatchRoot& root, int dispatch_fd, const std::string& id,
                      const struct stat& st, int64_t now) {
  DispatchEntry entry;
  entry.id = id;
  entry.path = root.path + "/" + id;
  entry.age_seconds = now - static_cast<int64_t>(st.st_mtim.tv_sec);
  const uid_t me = ::geteuid();
  auto names = ListDirAt(dispatch_fd);
  if (names) {
    // A root caller's sandbox ids own workspace/ and out/; a directory of any other uid
    // would be one that root would have to enter to remove: gc leaves such an <id> alone.
    for (const auto& name : *names) {
      auto sub = StatAt(dispatch_fd, name);
      if (!sub || !S_ISDIR(sub->st_mode) || sub->st_uid == me || me != 0) continue;
      if (!entry.owner) {
        entry.owner = runtime::SandboxSpec::HostIds{sub->st_uid, sub->st_gid};
      } else if (entry.owner->uid != sub->st_uid) {
        entry.problem = fmt::format("{} holds directories of uids {} and {}", entry.path,
                                    entry.owner->uid, sub->st_uid);
      }
    }
  } else {
    entry.problem = names.error().Render();
  }
  // Its own blocks, then what is below; each sandbox directory counted by its owner.
  UsageWalk walk;
  walk.dev = st.st_dev;
  if (me == 0) walk.walk_uid = me;
  walk.hand_to = entry.owner;
  walk.Below(dispatch_fd, 0);
  entry.size_bytes = static_cast<uint64_t>(st.st_blocks) * 512 + walk.bytes;
  auto locked = DispatchDirLocked(root.fd.get(), id);
  entry.running = locked && *locked;
  auto text = ReadFileAt(dispatch_fd, kDispatchRecordName);
  if (text) entry.record = ParseDispatchRecord(*text);
  return entry;
}

}  // namespace

base::Result<DispatchRoot> OpenCallerDispatchRoot(
    const std::optional<std::string>& workspace_root) {
  auto host = runtime::ProbeHostFacts();
  if (!host) return host.error();
  // The same choice `run` makes: a root caller is one whose sandbox runs as other ids.
  auto run_as = ResolveRunAs(DispatchRequest{}, *host);
  const bool root_caller = run_as && run_as->has_value();
  DispatchRoot root;
  if (workspace_root) {
    char cwd[PATH_MAX];
    if (workspace_root->starts_with('/')) {
      root.path = *workspace_root;
    } else if (::getcwd(cwd, sizeof(cwd)) != nullptr) {
      root.path = fmt::format("{}/{}", cwd, *workspace_root);
    } else {
      return base::ErrnoError("Can't find the current directory for", *workspace_root);
    }
  } else {
    auto path = DefaultWorkspaceRoot(root_caller);
    if (!path) return path.error();
    root.path = *path;
  }
  while (root.path.size() > 1 && root.path.ends_with('/')) root.path.pop_back();
  struct stat st {};
  if (::stat(root.path.c_str(), &st) != 0 && errno == ENOENT) return root;
  auto opened = base::OpenOrMakeTrustedDir(root.path, root_caller ? 0711 : 0700, ::geteuid());
  if (!opened) return opened.error();
  root.fd = std::move(*opened);
  return root;
}

uint64_t DiskUsageBelow(int dirfd, std::optional<uid_t> walk_uid) {
  struct stat st {};
  if (::fstat(dirfd, &st) != 0) return 0;
  UsageWalk walk;
  walk.dev = st.st_dev;
  walk.walk_uid = walk_uid;
  walk.Below(dirfd, 0);
  return walk.bytes;
}

std::optional<DispatchEntry> FindDispatch(const DispatchRoot& root, const std::string& id,
                                          int64_t now) {
  if (!root.fd || !IsDispatchId(id)) return std::nullopt;
  auto dir = OpenDirAt(root.fd.get(), id);
  if (!dir) return std::nullopt;  // absent, a symlink, or gone since
  struct stat st {};
  if (::fstat(dir->get(), &st) != 0 || st.st_uid != ::geteuid()) return std::nullopt;
  return Inspect(root, dir->get(), id, st, now);
}

base::Result<std::vector<DispatchEntry>> ListDispatches(const DispatchRoot& root, int64_t now) {
  std::vector<DispatchEntry> entries;
  if (!root.fd) return entries;
  auto names = ListDirAt(root.fd.get());
  if (!names) return base::Error(names.error().err(), "Can't list", root.path);
  for (const auto& name : *names) {
    if (auto entry = FindDispatch(root, name, now)) entries.push_back(std::move(*entry));
  }
  std::stable_sort(
      entries.begin(), entries.end(),
      [](const DispatchEntry& a, const DispatchEntry& b) { return a.age_seconds > b.age_seconds; });
  return entries;
}

base::Result<bool> RemoveFinishedDispatch(const DispatchRoot& root, const DispatchEntry& entry) {
  if (!entry.problem.empty()) return base::Error::Message(entry.problem);
  auto locked = TryLockDispatchDir(root.fd.get(), entry.id);
  if (!locked) return locked.error();
  if (!*locked) return false;
  if (auto removed = RemoveDispatchDir(root.fd.get(), entry.id, entry.owner); !removed) {
    return base::Error(removed.error().err(),
                       fmt::format("Can't remove {}: {}", entry.path, removed.error().Render()));
  }
  return true;
}

}  // namespace sbx::dispatch
