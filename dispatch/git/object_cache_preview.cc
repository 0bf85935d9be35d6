#include "dispatch/git/object_cache_preview.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include <fmt/format.h>

#include "base/safe_path.h"
#include "dispatch/git/object_cache.h"

namespace sbx::dispatch {

base::Result<CachePreview> PreviewObjectCache(const std::string& source,
                                              const std::string& cache_root, bool root_caller) {
  auto key = CacheKeyOf(source);
  if (!key) return key.error();
  CachePreview preview{.path = cache_root + "/" + key->name, .what = {}};
  const std::string fill = fmt::format("would be filled from {}", key->source);
  struct stat st {};
  if (::stat(cache_root.c_str(), &st) != 0 && errno == ENOENT) {
    preview.what = "none yet (nor its cache root): " + fill;
    return preview;
  }
  // The checks a real run makes of an existing root (base/safe_path.h), without making it.
  auto root = base::OpenTrustedDir(cache_root, ::geteuid());
  if (!root) return root.error().WithContext("--object-cache");
  if (::fstat(root->get(), &st) != 0 || st.st_uid != ::geteuid()) {
    return base::Error::Message(
        fmt::format("--object-cache: {} is not a directory of this user's", cache_root));
  }
  auto cache = base::OpenBeneath(root->get(), key->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  if (!cache && cache.error().err() == ENOENT) {
    preview.what = "none yet: " + fill;
  } else if (!cache) {
    preview.what = fmt::format("not a cache ({}): would be moved aside and made anew; {}",
                               cache.error().Render(), fill);
  } else if (auto problem = CacheProblemAt(cache->get(), root_caller, ::geteuid())) {
    preview.what = fmt::format("fails its checks ({}): would be moved aside and made anew; {}",
                               *problem, fill);
  } else {
    preview.what = fmt::format(
        "passes its checks: would be reused, with only what {} has that it lacks "
        "fetched into it",
        key->source);
  }
  return preview;
}

}  // namespace sbx::dispatch
