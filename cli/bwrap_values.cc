#include "cli/bwrap_values.h"

#include <strings.h>
#include <sys/capability.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdlib>

#include "base/unique_fd.h"

namespace sbx::cli::internal {
namespace {

// bwrap stores strtol's long into an int: the conversion wraps modulo 2^32 (defined in
// C++20), which is exactly what bwrap's implicit conversion does on Linux.
std::optional<int> ParseWrappedInt(const std::string& text) {
  char* end = nullptr;
  const long value = std::strtol(text.c_str(), &end, 10);
  const int truncated = static_cast<int>(value);
  if (text.empty() || *end != '\0' || truncated < 0) return std::nullopt;
  return truncated;
}

bool ValidEnvName(const std::string& name) {
  return !name.empty() && name.find('=') == std::string::npos;
}

bool HasName(const std::string& entry, const std::string& name) {
  return entry.size() > name.size() && entry.compare(0, name.size(), name) == 0 &&
         entry[name.size()] == '=';
}

}  // namespace

std::optional<int> ParseBwrapFd(const std::string& text) { return ParseWrappedInt(text); }

std::optional<uint32_t> ParseBwrapId(const std::string& text) {
  std::optional<int> value = ParseWrappedInt(text);
  if (!value) return std::nullopt;
  return static_cast<uint32_t>(*value);
}

std::optional<mode_t> ParseBwrapOctal(const std::string& text) {
  char* end = nullptr;
  const unsigned long value = std::strtoul(text.c_str(), &end, 8);
  if (text.empty() || *end != '\0' || value > 07777) return std::nullopt;
  return static_cast<mode_t>(value);
}

base::Result<uint64_t> ParseBwrapSize(const std::string& text) {
  // bwrap's limit is SIZE_MAX / 2, printed with %zu.
  constexpr uint64_t kMaxTmpfsBytes = SIZE_MAX / 2;
  char* end = nullptr;
  errno = 0;
  const unsigned long long value = std::strtoull(text.c_str(), &end, 0);
  // Requiring a leading digit also rejects "-1" (which strtoull would negate) and blanks.
  const bool leading_digit = !text.empty() && std::isdigit(static_cast<unsigned char>(text[0]));
  if (errno != 0 || !leading_digit || *end != '\0' || value == 0) {
    return base::Error::Message("--size takes a non-zero number of bytes");
  }
  if (value > kMaxTmpfsBytes) {
    return base::Error::Message("--size (for tmpfs) is limited to " +
                                std::to_string(kMaxTmpfsBytes));
  }
  return static_cast<uint64_t>(value);
}

base::Result<std::optional<int>> ParseBwrapCap(const std::string& text) {
  if (strcasecmp(text.c_str(), "ALL") == 0) return std::optional<int>();
  cap_value_t cap = 0;
  if (cap_from_name(text.c_str(), &cap) < 0) {
    return base::Error::Message("unknown cap: " + text);
  }
  return std::optional<int>(cap);
}

bool SetEnv(std::vector<std::string>& env, const std::string& name, const std::string& value) {
  if (!ValidEnvName(name)) return false;
  std::string entry = name + "=" + value;
  auto it =
      std::find_if(env.begin(), env.end(), [&](const std::string& e) { return HasName(e, name); });
  if (it != env.end()) {
    *it = std::move(entry);
  } else {
    env.push_back(std::move(entry));
  }
  return true;
}

bool UnsetEnv(std::vector<std::string>& env, const std::string& name) {
  if (!ValidEnvName(name)) return false;
  std::erase_if(env, [&](const std::string& e) { return HasName(e, name); });
  return true;
}

base::Result<std::string> ReadFdToEndAndClose(int fd, std::string what) {
  base::UniqueFd owned(fd);  // consumed whether or not the read succeeds
  std::string data;
  char buffer[8192];
  while (true) {
    const ssize_t n = ::read(owned.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return base::ErrnoError(std::move(what));
    if (n == 0) return data;
    data.append(buffer, static_cast<size_t>(n));
  }
}

std::vector<std::string> SplitNulSeparated(std::string_view data) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < data.size()) {
    size_t nul = data.find('\0', pos);
    if (nul == std::string_view::npos) nul = data.size();
    out.emplace_back(data.substr(pos, nul - pos));
    pos = nul + 1;
  }
  return out;
}

}  // namespace sbx::cli::internal
