// A strict JSON syntax check (RFC 8259 grammar) for the fuzzers of the JSON writers.
#pragma once

#include <string_view>

namespace sbx::fuzz {

// True when `text` is exactly one JSON value, with optional surrounding whitespace. String
// contents are checked for the grammar (no raw control characters, only the defined
// escapes, \u with four hex digits); bytes of 0x80 and above are accepted as they are, since
// the writers pass the caller's bytes through (UTF-8 validity is not checked here).
bool IsJson(std::string_view text);

}  // namespace sbx::fuzz
