// JSON string escaping, shared by every JSON document the project writes (the run status,
// the connection ledger, doctor --json).
#pragma once

#include <string>
#include <string_view>

namespace sbx::base {

// The body of a JSON string (no surrounding quotes): `"` and `\` escaped, the usual short
// escapes for \n \r \t \b \f, \u00XX for other control characters; bytes >= 0x20 as they are
// (UTF-8 passes through).
std::string JsonEscape(std::string_view text);

// JsonEscape with the quotes.
inline std::string JsonQuote(std::string_view text) { return '"' + JsonEscape(text) + '"'; }

}  // namespace sbx::base
