#include "dispatch/git/object_cache_manifest.h"

#include <cstdlib>

#include <fmt/format.h>

namespace sbx::dispatch {
namespace {

constexpr std::string_view kHeader = "ateam-sandbox object cache 1";

bool AllHex(std::string_view text) {
  return !text.empty() && text.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

std::vector<std::string> Words(const std::string& line) {
  std::vector<std::string> words;
  size_t start = 0;
  while (start <= line.size()) {
    size_t end = line.find(' ', start);
    if (end == std::string::npos) end = line.size();
    words.push_back(line.substr(start, end - start));
    start = end + 1;
  }
  return words;
}

std::optional<long long> Number(const std::string& text) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos ||
      text.size() > 18) {
    return std::nullopt;
  }
  return std::strtoll(text.c_str(), nullptr, 10);
}

}  // namespace

bool IsObjectId(const std::string& text) {
  return (text.size() == 40 || text.size() == 64) && AllHex(text);
}

bool IsPackFileName(const std::string& name) {
  for (std::string_view suffix : {".pack", ".idx"}) {
    if (!name.starts_with("pack-") || !name.ends_with(suffix)) continue;
    return IsObjectId(name.substr(5, name.size() - 5 - suffix.size()));
  }
  return false;
}

bool IsCacheRefName(const std::string& name) {
  if (!name.starts_with("refs/heads/") && !name.starts_with("refs/tags/")) return false;
  if (name.size() > 1024 || name.ends_with('/') || name.ends_with('.') ||
      name.find("..") != std::string::npos || name.find("@{") != std::string::npos ||
      name.find("//") != std::string::npos) {
    return false;
  }
  for (char c : name) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f || std::string_view(" ~^:?*[\\").find(c) != std::string_view::npos) {
      return false;
    }
  }
  size_t start = 0;
  while (start < name.size()) {
    size_t end = name.find('/', start);
    if (end == std::string::npos) end = name.size();
    std::string_view part(name.data() + start, end - start);
    if (part.starts_with('.') || part.ends_with(".lock")) return false;
    start = end + 1;
  }
  return true;
}

std::string RenderCacheManifest(const CacheManifest& manifest) {
  std::string text = fmt::format("{}\nsource {}\n", kHeader, manifest.source);
  for (const auto& file : manifest.files) {
    text += fmt::format("file {} {} {} {}\n", file.name, file.size, file.mtime.tv_sec,
                        file.mtime.tv_nsec);
  }
  return text;
}

std::optional<CacheManifest> ParseCacheManifest(const std::string& text) {
  CacheManifest manifest;
  size_t start = 0;
  int line_no = 0;
  bool have_source = false;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) return std::nullopt;  // every line ends
    std::string line = text.substr(start, end - start);
    start = end + 1;
    if (line_no++ == 0) {
      if (line != kHeader) return std::nullopt;
      continue;
    }
    if (line.starts_with("source ") && !have_source) {
      manifest.source = line.substr(7);
      have_source = true;
      continue;
    }
    auto words = Words(line);
    if (words.size() != 5 || words[0] != "file" || !IsPackFileName(words[1])) return std::nullopt;
    auto size = Number(words[2]);
    auto sec = Number(words[3]);
    auto nsec = Number(words[4]);
    if (!size || !sec || !nsec) return std::nullopt;
    CachedFile file{.name = words[1], .size = static_cast<off_t>(*size), .mtime = {}};
    file.mtime.tv_sec = static_cast<time_t>(*sec);
    file.mtime.tv_nsec = static_cast<long>(*nsec);
    manifest.files.push_back(std::move(file));
  }
  if (!have_source) return std::nullopt;
  return manifest;
}

}  // namespace sbx::dispatch
