#include "dispatch/host/stale_state.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>

#include <fmt/format.h>

#include "base/unique_fd.h"
#include "dispatch/sys/at_file.h"

namespace sbx::dispatch {
namespace {

// A state directory younger than this is left alone: it may be one a run has just made
// and not locked yet.
constexpr int64_t kMinAgeSeconds = 60;

}  // namespace

std::vector<std::string> StateDirBases() {
  const uid_t me = ::geteuid();
  if (me == 0) return {"/run/ateam-sandbox-0"};
  std::vector<std::string> bases;
  const char* runtime_dir = std::getenv("XDG_RUNTIME_DIR");  // NOLINT(concurrency-mt-unsafe)
  if (runtime_dir != nullptr && *runtime_dir == '/') bases.emplace_back(runtime_dir);
  bases.push_back(fmt::format("/tmp/ateam-sandbox-{}", me));
  return bases;
}

base::UniqueFd OpenPrivateBase(const std::string& base) {
  base::UniqueFd base_fd(::open(base.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  struct stat top {};
  if (!base_fd || ::fstat(base_fd.get(), &top) != 0 || top.st_uid != ::geteuid() ||
      (top.st_mode & 022) != 0) {
    return {};
  }
  return base_fd;
}

namespace {

void SweepBase(const std::string& base, bool dry_run, StaleStateReport* report) {
  const uid_t me = ::geteuid();
  base::UniqueFd base_fd = OpenPrivateBase(base);
  if (!base_fd) return;
  auto names = ListDirAt(base_fd.get());
  if (!names) return;
  const auto now = static_cast<int64_t>(std::time(nullptr));
  for (const auto& name : *names) {
    if (!name.starts_with("dispatch-") || name.size() != 15) continue;  // mkdtemp's XXXXXX
    auto dir = OpenDirAt(base_fd.get(), name);
    if (!dir) continue;
    struct stat st {};
    if (::fstat(dir->get(), &st) != 0 || st.st_uid != me ||
        now - static_cast<int64_t>(st.st_mtim.tv_sec) < kMinAgeSeconds) {
      continue;
    }
    // Held by a dispatch or its janitor: in use.
    if (::flock(dir->get(), LOCK_EX | LOCK_NB) != 0) continue;
    const std::string path = fmt::format("{}/{}", base, name);
    if (!dry_run) {
      if (auto removed = RemoveTreeAt(base_fd.get(), name); !removed) {
        report->failed.push_back(fmt::format("{}: {}", path, removed.error().Render()));
        continue;
      }
    }
    report->removed.push_back(path);
  }
}

}  // namespace

StaleStateReport RemoveStaleState(bool dry_run) {
  StaleStateReport report;
  for (const auto& base : StateDirBases()) SweepBase(base, dry_run, &report);
  return report;
}

}  // namespace sbx::dispatch
