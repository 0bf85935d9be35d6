#include "base/lexical_path.h"

namespace sbx::base {

std::optional<std::vector<std::string>> LexicalComponents(std::string_view path,
                                                          bool above_top_is_error) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    std::string_view part = path.substr(start, end - start);
    start = end + 1;
    if (part.empty() || part == ".") continue;
    if (part != "..") {
      parts.emplace_back(part);
    } else if (!parts.empty()) {
      parts.pop_back();
    } else if (above_top_is_error) {
      return std::nullopt;
    }
  }
  return parts;
}

}  // namespace sbx::base
