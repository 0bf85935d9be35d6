// Fuzzes the --status-json writer of `run` (dispatch::RenderStatusJson) with any text in
// every string field and any numbers. The document must always be valid JSON.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "dispatch/record/record.h"
#include "dispatch/record/status_json.h"
#include "fuzz/fuzz_input.h"
#include "fuzz/json_check.h"

namespace {

// Any finite double: the timings are differences of clock readings, never NaN or infinite.
double AnyDouble(sbx::fuzz::InputReader& input) {
  const uint64_t bits = input.U64();
  double value = 0;
  std::memcpy(&value, &bits, sizeof(value));
  return std::isfinite(value) ? value : 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 8192) return -1;
  sbx::fuzz::InputReader input(data, size);
  sbx::dispatch::DispatchResult r;
  const uint8_t flags = input.Byte();
  r.backend = (flags & 1) != 0 ? sbx::dispatch::DispatchBackend::kBwrap
                               : sbx::dispatch::DispatchBackend::kNative;
  if ((flags & 2) != 0) r.signal = static_cast<int>(input.U64());
  r.exit_code = static_cast<int>(input.U64());
  r.setup_ms = AnyDouble(input);
  r.total_ms = AnyDouble(input);
  r.id = input.Word();
  r.workspace = input.Word();
  r.out = input.Word();
  r.error = input.Word();
  r.started_at = input.Word();
  if ((flags & 4) != 0) r.labels.push_back({input.Word(), input.Word()});
  for (size_t routes = flags >> 4; routes > 0 && !input.empty(); --routes) {
    sbx::dispatch::DispatchRoute route;
    route.port = static_cast<int>(input.U64());
    route.host = input.Word();
    route.sandbox_address = input.Word();
    route.upstream = input.Word();
    r.routes.push_back(std::move(route));
  }

  const std::string document = sbx::dispatch::RenderStatusJson(r);
  sbx::fuzz::Check(sbx::fuzz::IsJson(document), "status document is not JSON");
  // What `ls` reads back of it: a record, and labels `run --label` takes as they were (other
  // bytes come back escaped).
  auto record = sbx::dispatch::ParseDispatchRecord(document);
  sbx::fuzz::Check(record.has_value(), "status document not read back as a record");
  const bool valid_labels = std::all_of(r.labels.begin(), r.labels.end(), [](const auto& l) {
    return sbx::dispatch::ParseLabel(l.key + "=" + l.value).ok();
  });
  if (valid_labels) sbx::fuzz::Check(record->labels == r.labels, "labels not read back");
  return 0;
}
