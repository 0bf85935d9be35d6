#include "cli/cache_listing.h"

#include <fcntl.h>
#include <unistd.h>

#include <ctime>

#include <fmt/format.h>

#include "base/json.h"
#include "base/safe_path.h"
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

std::optional<std::string> CachesJson(const std::optional<std::string>& cache_root,
                                      std::vector<std::string>* objects) {
  using base::JsonQuote;
  auto root = dispatch::OpenCallerCacheRoot(cache_root);
  if (!root) return root.error().Render();
  if (!*root) return std::nullopt;
  auto caches = dispatch::ListCaches(**root);
  if (!caches) return caches.error().Render();
  for (const auto& cache : *caches) {
    // Read only: `ls` moves nothing aside (the next run does).
    auto dir =
        base::OpenBeneath((*root)->fd.get(), cache.name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
    std::optional<std::string> problem =
        dir ? dispatch::CacheProblemAt(dir->get(), (*root)->shared, ::geteuid())
            : std::optional<std::string>("its directory can't be opened");
    objects->push_back(fmt::format(
        R"({{"kind": "cache", "name": {}, "path": {}, "source": {}, "size_bytes": {}, )"
        R"("unused_seconds": {}, "in_use": {}, "check_problem": {}}})",
        JsonQuote(cache.name), JsonQuote((*root)->path + "/" + cache.name),
        cache.source.empty() ? "null" : JsonQuote(cache.source), cache.bytes, AgeOf(cache),
        cache.in_use ? "true" : "false", problem ? JsonQuote(*problem) : "null"));
  }
  return std::nullopt;
}

Collected CollectOne(bool busy, bool dry_run, const std::string& kept_line, const std::string& what,
                     const std::function<base::Result<bool>()>& remove) {
  if (busy) {
    fmt::print("{}\n", kept_line);
    return Collected::kKept;
  }
  if (!dry_run) {
    auto removed = remove();
    if (!removed) {
      fmt::print(stderr, "ateam-sandbox gc: {}\n",
                 dispatch::EscapeForTerminal(removed.error().Render()));
      return Collected::kFailed;
    }
    if (!*removed) {
      fmt::print("{}\n", kept_line);
      return Collected::kKept;
    }
  }
  fmt::print("{} {}\n", dry_run ? "would remove" : "removed", what);
  return Collected::kRemoved;
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
    auto done = CollectOne(
        cache.in_use, dry_run, fmt::format("kept cache {}: a run borrows from it", cache.name),
        fmt::format("cache {}  {:>5}  {}", cache.name, dispatch::FormatSize(cache.bytes),
                    dispatch::EscapeForTerminal(cache.source)),
        [&] { return dispatch::RemoveCacheIfUnused(**root, cache.name); });
    if (done == Collected::kFailed) failed = true;
  }
  return failed ? kFailureExit : 0;
}

}  // namespace sbx::cli
