// CheckedCache (object_cache.h): a cache is used only when it still is exactly what this
// process made: the files a cache has and nothing else, each the caller's, no symlink, no
// other link, nothing writable by others, and the pack files the manifest recorded (name,
// size, modification time) when they were copied in.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "base/safe_path.h"
#include "dispatch/git/object_cache.h"
#include "dispatch/git/object_cache_manifest.h"
#include "dispatch/sys/at_file.h"

namespace sbx::dispatch {
namespace {

// What each directory of a cache may hold: its files and its subdirectories.
struct Expected {
  const char* dir;
  std::set<std::string> files;
  std::set<std::string> dirs;
};

const std::vector<Expected>& Layout() {
  static const std::vector<Expected> layout = {
      {".",
       {"HEAD", "config", "packed-refs", kCacheManifestName, kCacheStampName},
       {"refs", "objects"}},
      {"refs", {}, {"heads", "tags"}},
      {"refs/heads", {}, {}},
      {"refs/tags", {}, {}},
      {"objects", {}, {"info", "pack"}},
      {"objects/info", {}, {}},
      {"objects/pack", {}, {}},  // pack files only (IsPackFileName)
  };
  return layout;
}

// One entry's stat against the rules; the reason when it fails.
std::optional<std::string> BadEntry(const struct stat& st, const std::string& rel, bool dir,
                                    bool shared, uid_t owner) {
  if (S_ISLNK(st.st_mode)) return fmt::format("{} is a symlink", rel);
  if (dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)) {
    return fmt::format("{} is not a {}", rel, dir ? "directory" : "regular file");
  }
  if (st.st_uid != owner) return fmt::format("{} belongs to uid {}", rel, st.st_uid);
  mode_t forbidden = shared ? 0022 : 0077;
  if ((st.st_mode & forbidden) != 0)
    return fmt::format("{} has mode {:o}", rel, st.st_mode & 07777);
  if (!dir && st.st_nlink != 1) return fmt::format("{} has {} links", rel, st.st_nlink);
  return std::nullopt;
}

}  // namespace

std::optional<std::string> CacheProblemAt(int fd, bool shared, uid_t owner) {
  struct stat top {};
  if (::fstat(fd, &top) != 0) return "its directory can't be read";
  if (auto bad = BadEntry(top, ".", true, shared, owner)) return bad;
  std::vector<std::string> packs;
  for (const auto& expected : Layout()) {
    std::string where = expected.dir;
    auto dir = where == "." ? OpenDirAt(fd, ".") : OpenDirBeneath(fd, where);
    if (!dir) return fmt::format("{} can't be opened", where);
    auto names = ListDirAt(dir->get());
    if (!names) return fmt::format("{} can't be listed", where);
    for (const auto& name : *names) {
      std::string rel = where == "." ? name : fmt::format("{}/{}", where, name);
      bool is_pack = where == "objects/pack" && IsPackFileName(name);
      bool file = expected.files.count(name) != 0 || is_pack;
      if (!file && expected.dirs.count(name) == 0) return fmt::format("{} does not belong", rel);
      struct stat st {};
      if (::fstatat(dir->get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
        return fmt::format("{} can't be read", rel);
      }
      if (auto bad = BadEntry(st, rel, !file, shared, owner)) return bad;
      if (is_pack) packs.push_back(name);
    }
  }
  auto text = ReadFileAt(fd, kCacheManifestName, 1 << 20);
  auto manifest = text ? ParseCacheManifest(*text) : std::nullopt;
  if (!manifest) return "its manifest is missing or unreadable";
  std::vector<std::string> recorded;
  auto pack_dir = OpenDirBeneath(fd, "objects/pack");
  if (!pack_dir) return "objects/pack can't be opened";
  for (const auto& file : manifest->files) {
    recorded.push_back(file.name);
    auto st = StatAt(pack_dir->get(), file.name);
    if (!st || st->st_size != file.size || st->st_mtim.tv_sec != file.mtime.tv_sec ||
        st->st_mtim.tv_nsec != file.mtime.tv_nsec) {
      return fmt::format("objects/pack/{} is not as it was copied in", file.name);
    }
  }
  std::sort(recorded.begin(), recorded.end());
  if (recorded != packs) return "its packs are not the ones its manifest names";
  return std::nullopt;
}

base::Result<std::optional<std::string>> CheckedCache(const CacheRoot& root,
                                                      const std::string& name, std::string* why) {
  int root_fd = root.fd.get();
  auto st = StatAt(root_fd, name);
  if (!st) return std::optional<std::string>();
  std::optional<std::string> problem;
  if (S_ISDIR(st->st_mode)) {
    auto fd = base::OpenBeneath(root_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
    problem =
        fd ? CacheProblemAt(fd->get(), root.shared, ::geteuid()) : "its directory can't be opened";
  } else {
    problem = "it is not a directory";
  }
  if (!problem) return std::optional<std::string>(root.path + "/" + name);
  if (why != nullptr) *why = *problem;
  // Never trusted again: moved aside at once (the name is free for the new one), then
  // removed; what cannot be removed stays aside for `gc`.
  auto aside = RenameAsideAt(root_fd, name, name + ".stale");
  if (!aside) return aside.error().WithContext("--object-cache: can't move aside a bad cache");
  (void)RemoveTreeAt(root_fd, *aside);
  return std::optional<std::string>();
}

}  // namespace sbx::dispatch
