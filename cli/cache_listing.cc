#include "cli/cache_listing.h"

#include <ctime>

#include <fmt/format.h>

#include "dispatch/record/caches.h"
#include "dispatch/request/human_units.h"
#include "dispatch/sys/caller_stderr.h"

namespace sbx::cli {
namespace {

constexpr int kFailureExit = 125;

int Fail(const char* command, const std::string& message) {
  fmt::print(stderr, "ateam-sandbox {}: {}\n", command, dispatch::EscapeForTerminal(message));
  return kFailureExit;
}

int64_t AgeOf(const dispatch::CacheInfo& cache) {
  int64_t age = static_cast<int64_t>(std::time(nullptr)) - cache.used.tv_sec;
  return age < 0 ? 0 : age;
}

}  // namespace

void AddCacheRootOption(CLI::App& app, std::optional<std::string>& cache_root) {
  app.add_option("--cache-root", cache_root,
                 "the object cache root `run` was given (default: run's default for this caller)");
}

int PrintCaches(const std::optional<std::string>& cache_root) {
  auto root = dispatch::OpenCallerCacheRoot(cache_root);
  if (!root) return Fail("ls", root.error().Render());
  if (!*root) return 0;
  auto caches = dispatch::ListCaches(**root);
  if (!caches) return Fail("ls", caches.error().Render());
  if (caches->empty()) return 0;
  fmt::print("{:<24}  {:>4}  {:>5}  {}\n", "CACHE", "USED", "SIZE", "SOURCE");
  uint64_t total = 0;
  for (const auto& cache : *caches) {
    fmt::print("{:<24}  {:>4}  {:>5}  {}\n", cache.name,
               cache.in_use ? std::string("now") : dispatch::FormatAge(AgeOf(cache)),
               dispatch::FormatSize(cache.bytes),
               dispatch::EscapeForTerminal(cache.source.empty() ? "?" : cache.source));
    total += cache.bytes;
  }
  fmt::print("{} cache{}, {} in {}\n", caches->size(), caches->size() == 1 ? "" : "s",
             dispatch::FormatSize(total), (*root)->path);
  return 0;
}

int CollectCaches(const std::optional<std::string>& cache_root, int64_t min_age, bool dry_run) {
  auto root = dispatch::OpenCallerCacheRoot(cache_root);
  if (!root) return Fail("gc", root.error().Render());
  if (!*root) return 0;
  auto caches = dispatch::ListCaches(**root);
  if (!caches) return Fail("gc", caches.error().Render());
  bool failed = false;
  for (const auto& cache : *caches) {
    if (AgeOf(cache) < min_age) continue;
    if (cache.in_use) {
      fmt::print("kept cache {}: a run borrows from it\n", cache.name);
      continue;
    }
    if (!dry_run) {
      auto removed = dispatch::RemoveCacheIfUnused(**root, cache.name);
      if (!removed) {
        fmt::print(stderr, "ateam-sandbox gc: {}\n",
                   dispatch::EscapeForTerminal(removed.error().Render()));
        failed = true;
        continue;
      }
      if (!*removed) {
        fmt::print("kept cache {}: a run borrows from it\n", cache.name);
        continue;
      }
    }
    fmt::print("{} cache {}  {:>5}  {}\n", dry_run ? "would remove" : "removed", cache.name,
               dispatch::FormatSize(cache.bytes), dispatch::EscapeForTerminal(cache.source));
  }
  return failed ? kFailureExit : 0;
}

}  // namespace sbx::cli
