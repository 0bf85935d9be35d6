// Fuzzes the reading of a source's `git ls-remote --symref` listing and of a cache's
// packed-refs and HEAD (dispatch::ParseRemoteListing, ParseCacheRefs): any text gives refs
// the cache would take (refs/heads/ or refs/tags/ names, object ids) or nullopt, and refs
// compare equal to themselves.
#include <cstddef>
#include <cstdint>
#include <string>

#include "dispatch/git/object_cache_current.h"
#include "dispatch/git/object_cache_manifest.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 65536) return -1;
  sbx::fuzz::InputReader input(data, size);
  const std::string head = input.Word();
  const std::string text(input.Rest());
  if (auto listed = sbx::dispatch::ParseRemoteListing(text)) {
    for (const auto& [id, name] : listed->refs) {
      sbx::fuzz::Check(sbx::dispatch::IsObjectId(id), "a listed ref without an object id");
      sbx::fuzz::Check(name.starts_with("refs/heads/") || name.starts_with("refs/tags/"),
                       "a listed ref outside refs/heads and refs/tags");
      sbx::fuzz::Check(!name.ends_with("^{}"), "a peeled tag line taken as a ref");
    }
    sbx::fuzz::Check(sbx::dispatch::SameRefs(*listed, *listed), "refs unequal to themselves");
  }
  if (auto cached = sbx::dispatch::ParseCacheRefs(text, head)) {
    for (const auto& [id, name] : cached->refs) {
      sbx::fuzz::Check(sbx::dispatch::IsObjectId(id) && sbx::dispatch::IsCacheRefName(name),
                       "a cache ref the cache would not take");
    }
    sbx::fuzz::Check(!cached->head.empty(), "a cache without a HEAD");
  }
  return 0;
}
