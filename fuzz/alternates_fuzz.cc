// Fuzzes the reader of a finished workspace's .git/objects/info/alternates
// (dispatch::ParseWorkspaceAlternates), which the agent could have written: any text gives
// at most kMaxAlternateStores stores, each an absolute root with no empty, "." or ".."
// component and a plain name that together give back a line of the text, or a one-line
// error with no control character.
#include <cstddef>
#include <cstdint>
#include <string>

#include "dispatch/record/alternates.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 16384) return -1;
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto stores = sbx::dispatch::ParseWorkspaceAlternates(text);
  if (!stores) {
    const std::string message = stores.error().Render();
    for (unsigned char c : message) sbx::fuzz::Check(c >= 0x20 && c != 0x7f, "control in error");
    return 0;
  }
  sbx::fuzz::Check(stores->size() <= sbx::dispatch::kMaxAlternateStores, "too many stores");
  for (const auto& store : *stores) {
    sbx::fuzz::Check(store.root.starts_with('/'), "a relative root");
    sbx::fuzz::Check(store.root.find("//") == std::string::npos, "an empty component");
    sbx::fuzz::Check(store.root.find("/./") == std::string::npos &&
                         store.root.find("/../") == std::string::npos &&
                         !store.root.ends_with("/..") && !store.root.ends_with("/."),
                     "a dot component");
    sbx::fuzz::Check(!store.name.empty() && store.name.find('/') == std::string::npos &&
                         !store.name.starts_with('.'),
                     "a name that is no plain component");
    sbx::fuzz::Check(text.find(store.cache() + "/objects") != std::string::npos,
                     "a store the text does not name");
  }
  return 0;
}
