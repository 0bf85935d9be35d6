// JSON string escaping, shared by every JSON document the project writes (the run status,
// the connection ledger, doctor --json).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace sbx::base {

// The length of the well-formed UTF-8 sequence at text[i] (RFC 3629: no overlong form, no
// surrogate, nothing above U+10FFFF), or 0 when the byte there does not start one.
size_t Utf8SequenceAt(std::string_view text, size_t i);

// The body of a JSON string (no surrounding quotes): `"` and `\` escaped, the usual short
// escapes for \n \r \t \b \f, \u00XX for other control characters and DEL; well-formed
// UTF-8 as it is; every byte that is not part of well-formed UTF-8 as the text \xHH (a
// backslash, x and two hex digits), so the result is valid UTF-8 whatever `text` held.
std::string JsonEscape(std::string_view text);

// JsonEscape with the quotes.
inline std::string JsonQuote(std::string_view text) { return '"' + JsonEscape(text) + '"'; }

}  // namespace sbx::base
