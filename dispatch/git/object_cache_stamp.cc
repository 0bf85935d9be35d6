// The source stamp a cache keeps (object_cache.h, source_stamp.h).
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "base/unique_fd.h"
#include "dispatch/git/object_cache.h"
#include "dispatch/git/object_cache_manifest.h"
#include "dispatch/git/source_stamp.h"
#include "dispatch/sys/at_file.h"

namespace sbx::dispatch {

std::string ReadCacheStamp(const CacheRoot& root, const std::string& name) {
  auto dir = OpenDirBeneath(root.fd.get(), name);
  if (!dir) return "";
  auto text = ReadFileAt(dir->get(), kCacheStampName, kMaxStampBytes);
  return text ? *text : "";
}

base::Status WriteCacheStamp(const CacheRoot& root, const std::string& name,
                             const std::string& stamp) {
  auto dir = OpenDirBeneath(root.fd.get(), name);
  if (!dir) return dir.error();
  if (::unlinkat(dir->get(), kCacheStampName, 0) != 0 && errno != ENOENT) {
    return base::ErrnoError("Can't replace in the object cache", kCacheStampName);
  }
  base::UniqueFd fd(::openat(dir->get(), kCacheStampName,
                             O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) return base::ErrnoError("Can't create in the object cache", kCacheStampName);
  if (int err = WriteAllTo(fd.get(), stamp); err != 0) {
    return base::Error(err, "Can't write in the object cache", kCacheStampName);
  }
  if (::fchmod(fd.get(), CacheFileMode(root)) != 0) {
    return base::ErrnoError("Can't chmod in the object cache", kCacheStampName);
  }
  return {};
}

}  // namespace sbx::dispatch
