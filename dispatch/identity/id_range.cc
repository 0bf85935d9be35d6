#include "dispatch/identity/id_range.h"

#include <pwd.h>

#include <cerrno>
#include <charconv>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace sbx::dispatch {
namespace {

// A whole decimal number that fits 32 bits: no sign, no spaces, no trailing text.
std::optional<uint32_t> ParseU32(std::string_view text) {
  if (text.empty() || text.size() > 10) return std::nullopt;
  uint32_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::vector<std::string_view> Split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    const size_t at = text.find(sep, start);
    parts.push_back(text.substr(start, at == std::string_view::npos ? at : at - start));
    if (at == std::string_view::npos) return parts;
    start = at + 1;
  }
}

// The file's text; nullopt when it does not exist (no range there), an error when it
// exists and cannot be read.
base::Result<std::optional<std::string>> ReadOptionalFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    if (errno == ENOENT) return std::optional<std::string>{};
    return base::ErrnoError("Can't read", path);
  }
  std::stringstream text;
  text << in.rdbuf();
  return std::optional<std::string>{text.str()};
}

}  // namespace

base::Result<std::vector<SubordinateRange>> ParseSubordinateRanges(std::string_view text,
                                                                   std::string_view user,
                                                                   std::optional<uid_t> uid) {
  std::vector<SubordinateRange> ranges;
  const std::string uid_text = uid ? std::to_string(*uid) : std::string();
  for (std::string_view line : Split(text, '\n')) {
    if (line.empty() || line.front() == '#') continue;
    const auto fields = Split(line, ':');
    if (fields.size() != 3) continue;
    if (fields[0] != user && (uid_text.empty() || fields[0] != uid_text)) continue;
    auto first = ParseU32(fields[1]);
    auto count = ParseU32(fields[2]);
    if (!first || !count || *count == 0) {
      return base::Error::Message(
          fmt::format("malformed subordinate range for {}: '{}' (want NAME:FIRST:COUNT)", user,
                      line.substr(0, 80)));
    }
    ranges.push_back({*first, *count});
  }
  return ranges;
}

base::Status CheckIdRange(const LeaseIdRange& range) {
  const uint64_t last_uid = uint64_t{range.first_uid} + range.count - 1;
  const uint64_t last_gid = uint64_t{range.first_gid} + range.count - 1;
  if (range.count == 0 || range.first_uid == 0 || range.first_gid == 0 ||
      last_uid >= 0xffffffffULL || last_gid >= 0xffffffffULL) {
    return base::Error::Message(fmt::format(
        "the id range for root's dispatches ({}) is unusable: uid {}, gid {}, {} ids; it must "
        "hold at least one id, start above 0 and end below 4294967295",
        range.source, range.first_uid, range.first_gid, range.count));
  }
  return {};
}

base::Result<LeaseIdRange> ParseIdRangeValue(std::string_view value) {
  const auto fields = Split(value, ':');
  LeaseIdRange range;
  range.source = fmt::format("{}={}", kIdRangeEnv, value.substr(0, 64));
  std::optional<uint32_t> uid;
  std::optional<uint32_t> gid;
  std::optional<uint32_t> count;
  if (fields.size() == 2) {
    uid = gid = ParseU32(fields[0]);
    count = ParseU32(fields[1]);
  } else if (fields.size() == 3) {
    uid = ParseU32(fields[0]);
    gid = ParseU32(fields[1]);
    count = ParseU32(fields[2]);
  }
  if (!uid || !gid || !count) {
    return base::Error::Message(
        fmt::format("{}: want FIRST:COUNT or UID:GID:COUNT (decimal)", range.source));
  }
  range.first_uid = *uid;
  range.first_gid = *gid;
  range.count = *count;
  if (auto st = CheckIdRange(range); !st) return st.error();
  return range;
}

base::Result<LeaseIdRange> ResolveIdRange(const char* env_value, const std::string& subuid,
                                          const std::string& subgid) {
  if (env_value != nullptr) return ParseIdRangeValue(env_value);
  std::optional<uid_t> user_uid;
  if (const passwd* pw = ::getpwnam(kIdUser); pw != nullptr) user_uid = pw->pw_uid;
  auto uid_text = ReadOptionalFile(subuid);
  if (!uid_text) return uid_text.error();
  auto gid_text = ReadOptionalFile(subgid);
  if (!gid_text) return gid_text.error();
  std::vector<SubordinateRange> uids;
  std::vector<SubordinateRange> gids;
  if (*uid_text) {
    auto parsed = ParseSubordinateRanges(**uid_text, kIdUser, user_uid);
    if (!parsed) return parsed.error().WithContext(subuid);
    uids = std::move(*parsed);
  }
  if (*gid_text) {
    auto parsed = ParseSubordinateRanges(**gid_text, kIdUser, user_uid);
    if (!parsed) return parsed.error().WithContext(subgid);
    gids = std::move(*parsed);
  }
  if (uids.empty() && gids.empty()) {
    LeaseIdRange builtin{kBuiltinFirst, kBuiltinFirst, kBuiltinCount, kBuiltinSource};
    return builtin;
  }
  if (uids.empty() || gids.empty()) {
    return base::Error::Message(fmt::format(
        "{} has a subordinate range in {} but none in {}: give it both (usermod "
        "--add-subuids/--add-subgids), or set {}",
        kIdUser, uids.empty() ? subgid : subuid, uids.empty() ? subuid : subgid, kIdRangeEnv));
  }
  // The first range of each: a user with several is given one block, always the same.
  LeaseIdRange range{uids.front().first, gids.front().first,
                     std::min(uids.front().count, gids.front().count),
                     fmt::format("{} in {} and {}", kIdUser, subuid, subgid)};
  if (auto st = CheckIdRange(range); !st) return st.error();
  return range;
}

}  // namespace sbx::dispatch
