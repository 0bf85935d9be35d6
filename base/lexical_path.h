// Paths folded by their spelling alone: no file system is consulted.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sbx::base {

// The components of `path` with empty ones, "." and ".." folded. A ".." with nothing left
// to remove: nullopt when `above_top_is_error` (a relative path that climbs out of its
// base), otherwise it is dropped, as the kernel does at "/".
std::optional<std::vector<std::string>> LexicalComponents(std::string_view path,
                                                          bool above_top_is_error);

}  // namespace sbx::base
