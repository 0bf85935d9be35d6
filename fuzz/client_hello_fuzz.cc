// Fuzzes the ClientHello reader of the tunnel's SNI check (relay/client_hello.h) with hostile
// first bytes of an agent's connection. The first input byte picks how the rest is cut into
// reads (1 to 256 bytes each); the outcome must not depend on the cut, and what a complete
// hello yields must hold to what the reader promises.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "relay/client_hello.h"

namespace {

void Check(bool condition) {
  if (!condition) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t chunk = size_t{data[0]} + 1;
  std::string_view stream(reinterpret_cast<const char*>(data + 1), size - 1);

  sbx::relay::ClientHelloReader whole;
  whole.Update(stream);
  sbx::relay::ClientHelloReader pieces;
  for (size_t have = 0; have < stream.size();) {
    have = have + chunk < stream.size() ? have + chunk : stream.size();
    pieces.Update(stream.substr(0, have));
  }
  Check(whole.status() == pieces.status());
  Check(whole.server_name() == pieces.server_name());

  if (whole.status() == sbx::relay::HelloStatus::kComplete) {
    Check(whole.consumed() <= stream.size());
    Check(whole.consumed() <= sbx::relay::kMaxClientHelloBytes);
    if (const auto& name = whole.server_name(); name) {
      Check(!name->empty() && name->size() <= 255);
      Check(name->find('\0') == std::string::npos);
      Check(sbx::relay::ServerNameMatches(*name, *name) == (*name != "."));
    }
  } else {
    Check(!whole.server_name().has_value());
  }
  return 0;
}
