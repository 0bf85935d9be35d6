#include "dispatch/git/object_cache_current.h"

#include <algorithm>
#include <string_view>

#include "dispatch/git/object_cache_manifest.h"

namespace sbx::dispatch {
namespace {

// The lines of `text` without their newlines; a last line without one counts too.
std::vector<std::string_view> Lines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    size_t end = text.find('\n');
    lines.push_back(text.substr(0, end));
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
  }
  return lines;
}

bool Tracked(std::string_view name) {
  return name.starts_with("refs/heads/") || name.starts_with("refs/tags/");
}

std::vector<std::pair<std::string, std::string>> Sorted(
    std::vector<std::pair<std::string, std::string>> refs) {
  std::sort(refs.begin(), refs.end(), [](const auto& a, const auto& b) {
    return a.second < b.second || (a.second == b.second && a.first < b.first);
  });
  return refs;
}

}  // namespace

std::optional<CacheRefs> ParseRemoteListing(const std::string& listing) {
  CacheRefs refs;
  std::string head_target;
  std::string head_id;
  for (std::string_view line : Lines(listing)) {
    size_t tab = line.find('\t');
    if (tab == std::string_view::npos) return std::nullopt;
    std::string_view left = line.substr(0, tab);
    std::string_view name = line.substr(tab + 1);
    if (left.starts_with("ref: ")) {
      // A symbolic ref's target: only HEAD's is what a clone records as a symbolic ref.
      if (name == "HEAD") head_target = std::string(left.substr(5));
      continue;
    }
    if (!IsObjectId(std::string(left))) return std::nullopt;
    if (name == "HEAD") {
      head_id = std::string(left);
    } else if (Tracked(name) && !name.ends_with("^{}")) {
      refs.refs.emplace_back(std::string(left), std::string(name));
    }
  }
  refs.head = !head_target.empty() ? "ref: " + head_target : head_id;
  return refs;
}

std::optional<CacheRefs> ParseCacheRefs(const std::string& packed_refs, const std::string& head) {
  CacheRefs refs;
  for (std::string_view line : Lines(packed_refs)) {
    if (line.starts_with('#')) continue;  // the header
    size_t space = line.find(' ');
    if (space == std::string_view::npos) return std::nullopt;
    std::string id(line.substr(0, space));
    std::string name(line.substr(space + 1));
    if (!IsObjectId(id) || !IsCacheRefName(name)) return std::nullopt;
    refs.refs.emplace_back(std::move(id), std::move(name));
  }
  auto head_lines = Lines(head);
  if (head_lines.size() != 1) return std::nullopt;
  refs.head = std::string(head_lines.front());
  bool symbolic = refs.head.starts_with("ref: ") && IsCacheRefName(refs.head.substr(5));
  if (!symbolic && !IsObjectId(refs.head)) return std::nullopt;
  return refs;
}

bool SameRefs(const CacheRefs& a, const CacheRefs& b) {
  return a.head == b.head && Sorted(a.refs) == Sorted(b.refs);
}

}  // namespace sbx::dispatch
