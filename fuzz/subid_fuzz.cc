// Fuzzes the /etc/subuid and /etc/subgid reader (dispatch::ParseSubordinateRanges) and the
// ATEAM_SANDBOX_ID_RANGE value: any text gives ranges with a count of at least one, or a
// one-line error; a parsed environment value always passes the range checks.
#include <cstddef>
#include <cstdint>
#include <string>

#include "dispatch/identity/id_range.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 16384) return -1;
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto ranges = sbx::dispatch::ParseSubordinateRanges(text, "ateam-sandbox", 999);
  if (ranges) {
    for (const auto& range : *ranges) sbx::fuzz::Check(range.count > 0, "a range of no ids");
  } else {
    sbx::fuzz::Check(ranges.error().Render().find('\n') == std::string::npos,
                     "error message spans lines");
  }
  auto value = sbx::dispatch::ParseIdRangeValue(text);
  if (value) {
    sbx::fuzz::Check(sbx::dispatch::CheckIdRange(*value).ok(), "a parsed range fails the checks");
    sbx::fuzz::Check(value->first_uid > 0 && value->count > 0, "id 0 or no ids");
  }
  return 0;
}
