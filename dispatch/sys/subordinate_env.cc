#include "dispatch/sys/subordinate_env.h"

#include <unistd.h>

#include <charconv>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string_view>

#include <fmt/format.h>

namespace sbx::dispatch {

std::optional<SubordinateNamespace> InSubordinateNamespace() {
  const char* value = std::getenv(kSubordinateEnv);  // NOLINT(concurrency-mt-unsafe)
  if (value == nullptr || ::geteuid() != 0) return std::nullopt;
  const std::string_view text(value);
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  SubordinateNamespace ns;
  auto [uid_end, uid_ec] = std::from_chars(text.data(), text.data() + colon, ns.caller_uid);
  auto [count_end, count_ec] =
      std::from_chars(text.data() + colon + 1, text.data() + text.size(), ns.count);
  if (uid_ec != std::errc() || uid_end != text.data() + colon || count_ec != std::errc() ||
      count_end != text.data() + text.size() || ns.count == 0 || ns.caller_uid == 0) {
    return std::nullopt;
  }
  // The variable alone proves nothing (host root may have inherited it): this namespace's
  // uid 0 must be the caller's uid, and its ids 1..count a block of one range.
  std::ifstream map("/proc/self/uid_map");
  bool root_is_caller = false;
  bool range_mapped = false;
  for (uint64_t inside = 0, outside = 0, count = 0; map >> inside >> outside >> count;) {
    if (inside == 0 && outside == ns.caller_uid && count == 1) root_is_caller = true;
    if (inside == 1 && count >= ns.count) range_mapped = true;
    if (inside == 0 && count > 1) return std::nullopt;
  }
  if (!root_is_caller || !range_mapped) return std::nullopt;
  return ns;
}

std::string SubordinateWorkspaceRoot(uid_t caller_uid) {
  return fmt::format("/var/tmp/ateam-sandbox-{}/dispatches", caller_uid);
}

std::vector<base::DirIdentity> VouchedHostRootDirs() {
  const char* value = std::getenv(kSubordinateRootDirsEnv);  // NOLINT(concurrency-mt-unsafe)
  std::vector<base::DirIdentity> dirs;
  std::stringstream list(value != nullptr ? value : "");
  for (std::string word; std::getline(list, word, ',');) {
    const size_t dot = word.find('.');
    uint64_t dev = 0;
    uint64_t ino = 0;
    const char* end = word.data() + word.size();
    if (dot == std::string::npos) return {};
    auto [dev_end, dev_ec] = std::from_chars(word.data(), word.data() + dot, dev);
    auto [ino_end, ino_ec] = std::from_chars(word.data() + dot + 1, end, ino);
    if (dev_ec != std::errc() || dev_end != word.data() + dot || ino_ec != std::errc() ||
        ino_end != end) {
      return {};
    }
    dirs.push_back({static_cast<dev_t>(dev), static_cast<ino_t>(ino)});
  }
  return dirs;
}

}  // namespace sbx::dispatch
