// Fuzzes the connection ledger's line writer (relay::FormatLedgerLine): any host and
// upstream text, any numbers, any end reason and errno. Each entry must be exactly one line
// holding one JSON object.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_input.h"
#include "fuzz/json_check.h"
#include "relay/ledger.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return -1;
  sbx::fuzz::InputReader input(data, size);
  sbx::relay::LedgerEntry entry;
  entry.route = static_cast<int>(input.U64());
  sbx::relay::ConnectionRecord& r = entry.record;
  // Any instant the clock can hold: system_clock counts nanoseconds in 64 bits, so about
  // 139 years either side of 1970 (2^42 ms), as milliseconds.
  r.start = std::chrono::system_clock::time_point(
      std::chrono::milliseconds(static_cast<int64_t>(input.U64() % (1ULL << 43)) - (1LL << 42)));
  r.duration = std::chrono::milliseconds(static_cast<int64_t>(input.U64()));
  r.bytes_up = input.U64();
  r.bytes_down = input.U64();
  r.end = static_cast<sbx::relay::EndReason>(input.Byte() % 11);
  r.err = static_cast<int>(input.Byte()) - 8;  // negative, zero, every errno and unknown ones
  entry.host = input.Word();
  entry.upstream = std::string(input.Rest());

  const std::string line = sbx::relay::FormatLedgerLine(entry);
  sbx::fuzz::Check(!line.empty() && line.back() == '\n', "line without its newline");
  sbx::fuzz::Check(std::count(line.begin(), line.end(), '\n') == 1, "entry spans lines");
  sbx::fuzz::Check(sbx::fuzz::IsJson(line), "ledger line is not JSON");
  return 0;
}
