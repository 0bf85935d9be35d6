#include "dispatch/sys/subordinate_env.h"

#include <unistd.h>

#include <charconv>
#include <cstdlib>
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
      count_end != text.data() + text.size() || ns.count == 0) {
    return std::nullopt;
  }
  return ns;
}

}  // namespace sbx::dispatch
