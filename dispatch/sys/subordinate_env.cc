#include "dispatch/sys/subordinate_env.h"

#include <unistd.h>

#include <charconv>
#include <cstdlib>
#include <fstream>
#include <string_view>

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

}  // namespace sbx::dispatch
