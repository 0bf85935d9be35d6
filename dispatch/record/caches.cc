#include "dispatch/record/caches.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>

#include <fmt/format.h>

#include "base/safe_path.h"
#include "base/unique_fd.h"
#include "dispatch/host/prepare.h"
#include "dispatch/record/alternates.h"
#include "dispatch/sys/at_file.h"
#include "dispatch/sys/caller_stderr.h"
#include "runtime/host_facts.h"

namespace sbx::dispatch {

base::Result<std::optional<CacheRoot>> OpenCallerCacheRoot(
    const std::optional<std::string>& cache_root) {
  auto host = runtime::ProbeHostFacts();
  if (!host) return host.error();
  // The same choice `run` makes: a root caller is one whose sandbox runs as other ids.
  auto run_as = ResolveRunAs(DispatchRequest{}, *host);
  const bool root_caller = run_as && run_as->has_value();
  std::string path;
  if (cache_root) {
    char cwd[PATH_MAX];
    if (cache_root->starts_with('/')) {
      path = *cache_root;
    } else if (::getcwd(cwd, sizeof(cwd)) != nullptr) {
      path = fmt::format("{}/{}", cwd, *cache_root);
    } else {
      return base::ErrnoError("Can't find the current directory for", *cache_root);
    }
  } else {
    auto chosen = DefaultObjectCacheRoot(root_caller);
    if (!chosen) return chosen.error();
    path = *chosen;
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 && errno == ENOENT) return std::optional<CacheRoot>();
  auto root = OpenCacheRoot(path, root_caller);
  if (!root) return root.error();
  return std::optional<CacheRoot>(std::move(*root));
}

namespace {

// The cache `store` of a workspace's alternates, verified: its path.
base::Result<std::string> VerifiedBorrowedCache(const AlternateStore& store,
                                                const std::optional<std::string>& cache_root) {
  const std::string cache = store.cache();
  auto refuse = [&](const std::string& why) {
    return base::Error::Message(fmt::format("the workspace borrows objects from {}/objects: {}",
                                            EscapeForTerminal(cache), why));
  };
  if (cache_root) {
    char real[PATH_MAX];
    if (::realpath(cache_root->c_str(), real) == nullptr || store.root != real) {
      return refuse(fmt::format("not in --cache-root {}", EscapeForTerminal(*cache_root)));
    }
  }
  // Every component root's or the caller's, none a symlink, the root itself writable by
  // its owner only.
  auto root_fd = base::OpenTrustedDir(store.root, ::geteuid());
  if (!root_fd) return refuse(root_fd.error().Render());
  struct stat root_st {};
  if (::fstat(root_fd->get(), &root_st) != 0) return refuse("its cache root can't be read");
  const uid_t owner = root_st.st_uid;
  if (owner != ::geteuid() && owner != 0) return refuse("a cache root of another user's");
  auto fd = base::OpenBeneath(root_fd->get(), store.name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  if (!fd) return refuse(fd.error().Render());
  // Root's caches are readable by the dispatch's user; a user's are its own.
  if (auto problem = CacheProblemAt(fd->get(), owner == 0, owner)) {
    return refuse("it fails the object cache's checks: " + *problem);
  }
  return cache;
}

}  // namespace

base::Result<std::vector<std::string>> BorrowedCachesOf(
    const std::string& workspace, const std::optional<std::string>& cache_root) {
  std::vector<std::string> caches;
  base::UniqueFd ws(::open(workspace.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!ws) return caches;
  auto info = OpenDirBeneath(ws.get(), ".git/objects/info");
  if (!info) return caches;  // no store of its own to borrow into: git says what it lacks
  if (!StatAt(info->get(), "alternates")) return caches;
  auto text = ReadFileAt(info->get(), "alternates", 64 << 10);
  if (!text) return text.error().WithContext("the workspace's .git/objects/info/alternates");
  auto stores = ParseWorkspaceAlternates(*text);
  if (!stores) return stores.error();
  for (const auto& store : *stores) {
    auto cache = VerifiedBorrowedCache(store, cache_root);
    if (!cache) return cache.error();
    caches.push_back(*cache);
  }
  return caches;
}

}  // namespace sbx::dispatch
