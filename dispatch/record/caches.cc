#include "dispatch/record/caches.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>

#include <fmt/format.h>

#include "base/unique_fd.h"
#include "dispatch/host/prepare.h"
#include "dispatch/sys/at_file.h"
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

std::vector<std::string> BorrowedCachesOf(const std::string& workspace,
                                          const std::optional<std::string>& cache_root) {
  std::vector<std::string> caches;
  base::UniqueFd ws(::open(workspace.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!ws) return caches;
  auto info = OpenDirBeneath(ws.get(), ".git/objects/info");
  auto text = info ? ReadFileAt(info->get(), "alternates", 64 << 10)
                   : base::Result<std::string>(info.error());
  if (!text) return caches;
  auto root = OpenCallerCacheRoot(cache_root);
  if (!root || !*root) return caches;
  size_t start = 0;
  while (start < text->size()) {
    size_t end = text->find('\n', start);
    if (end == std::string::npos) end = text->size();
    std::string line = text->substr(start, end - start);
    start = end + 1;
    std::string prefix = (*root)->path + "/";
    if (!line.starts_with(prefix) || !line.ends_with("/objects")) continue;
    std::string name = line.substr(prefix.size(), line.size() - prefix.size() - 8);
    if (name.empty() || name.find('/') != std::string::npos || name.starts_with('.')) continue;
    auto checked = CheckedCache(**root, name);
    if (checked && *checked) caches.push_back(**checked);
  }
  return caches;
}

}  // namespace sbx::dispatch
