// Fuzzes the pack index reader (dispatch::PackIndexCount, PackIndexNamesFit,
// PackIndexHasName) that root runs over the .idx the dispatch's user wrote when it repacks
// a root caller's object cache: any bytes give either no count, or a count whose names fit
// in the input, and names that fit are each found again.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "dispatch/git/pack_index.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > (1 << 20)) return -1;
  const std::string_view file(reinterpret_cast<const char*>(data), size);
  auto count = sbx::dispatch::PackIndexCount(file, size);
  if (!count) return 0;
  const size_t names_bytes = size_t{*count} * sbx::dispatch::kPackIndexNameBytes;
  sbx::fuzz::Check(
      sbx::dispatch::kPackIndexHeaderBytes + names_bytes + sbx::dispatch::kPackIndexTrailerBytes <=
          size,
      "a count the file has no room for");
  const std::string_view names = file.substr(sbx::dispatch::kPackIndexHeaderBytes, names_bytes);
  if (!sbx::dispatch::PackIndexNamesFit(file, names)) return 0;
  for (size_t i = 0; i < *count; ++i) {
    sbx::fuzz::Check(
        sbx::dispatch::PackIndexHasName(names, names.substr(i * sbx::dispatch::kPackIndexNameBytes,
                                                            sbx::dispatch::kPackIndexNameBytes)),
        "a listed name not found");
  }
  return 0;
}
