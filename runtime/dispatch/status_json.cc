// The --status-json document of `ateam-sandbox run`.
#include <fmt/format.h>

#include "runtime/dispatch/dispatch.h"

namespace sbx::runtime {
namespace {

std::string Quote(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

}  // namespace

std::string RenderStatusJson(const DispatchResult& r) {
  std::string routes;
  for (const auto& route : r.routes) {
    if (!routes.empty()) routes += ", ";
    routes += fmt::format(R"({{"host": {}, "port": {}, "sandbox_address": {}, "upstream": {}}})",
                          Quote(route.host), route.port, Quote(route.sandbox_address),
                          Quote(route.upstream));
  }
  std::string signal = r.signal ? fmt::format("{}", *r.signal) : "null";
  std::string error = r.error.empty() ? "null" : Quote(r.error);
  return fmt::format(
      "{{\n"
      "  \"dispatch_id\": {},\n"
      "  \"workspace\": {},\n"
      "  \"out\": {},\n"
      "  \"backend\": {},\n"
      "  \"routes\": [{}],\n"
      "  \"exit_code\": {},\n"
      "  \"signal\": {},\n"
      "  \"reason\": {},\n"
      "  \"error\": {},\n"
      "  \"started_at\": {},\n"
      "  \"timings_ms\": {{\"setup\": {:.1f}, \"total\": {:.1f}}}\n"
      "}}\n",
      Quote(r.id), Quote(r.workspace), Quote(r.out),
      Quote(r.backend == DispatchBackend::kNative ? "native" : "bwrap"), routes, r.exit_code,
      signal, Quote(r.reason), error, Quote(r.started_at), r.setup_ms, r.total_ms);
}

}  // namespace sbx::runtime
