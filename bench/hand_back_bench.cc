// hand_back_bench: the cost of handing a leased identity's tree back to the caller
// (dispatch/identity/ownership_pass.h) per 10,000 entries. As root: builds DIRS directories
// of FILES files each under a scratch directory on the filesystem of ROOT (default
// /var/tmp), gives them to a leased-range uid, then times the pass back, ROUNDS times, and
// prints every round and the median in milliseconds per 10,000 entries.
//   hand_back_bench [ROOT] [DIRS] [FILES] [ROUNDS]
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "base/unique_fd.h"
#include "dispatch/identity/ownership_pass.h"

int main(int argc, char** argv) {
  if (::geteuid() != 0) {
    std::fprintf(stderr, "hand_back_bench: run as root (it chowns to other uids)\n");
    return 2;
  }
  const std::string root = argc > 1 ? argv[1] : "/var/tmp";
  const int dirs = argc > 2 ? std::atoi(argv[2]) : 100;
  const int files = argc > 3 ? std::atoi(argv[3]) : 100;
  const int rounds = argc > 4 ? std::atoi(argv[4]) : 7;
  std::string top = root + "/hand-back-bench-XXXXXX";
  if (::mkdtemp(top.data()) == nullptr) return 2;
  for (int d = 0; d < dirs; ++d) {
    const std::string dir = top + "/d" + std::to_string(d);
    ::mkdir(dir.c_str(), 0755);
    for (int f = 0; f < files; ++f) {
      const std::string file = dir + "/f" + std::to_string(f);
      int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
      if (fd >= 0) ::close(fd);
    }
  }
  const double entries = static_cast<double>(dirs) * (files + 1) + 1;
  const sbx::runtime::SandboxSpec::HostIds leased{1879048192, 1879048192};
  const sbx::runtime::SandboxSpec::HostIds caller{0, 0};
  sbx::base::UniqueFd fd(::open(top.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  std::vector<double> per_10k;
  for (int r = 0; r < rounds; ++r) {
    // Lent first (untimed), so that each timed round hands back the whole tree.
    (void)sbx::dispatch::PassOwnership(fd.get(), {caller, leased, false});
    auto start = std::chrono::steady_clock::now();
    auto count = sbx::dispatch::PassOwnership(fd.get(), {leased, caller, false});
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (!count) {
      std::fprintf(stderr, "hand_back_bench: %s\n", count.error().Render().c_str());
      return 1;
    }
    per_10k.push_back(ms * 10000.0 / entries);
    std::printf("round %d: %zu entries in %.1f ms (%.1f ms per 10k)\n", r, count->changed, ms,
                per_10k.back());
  }
  std::sort(per_10k.begin(), per_10k.end());
  std::printf("median: %.1f ms per 10k entries (%d rounds, %.0f entries)\n",
              per_10k[per_10k.size() / 2], rounds, entries);
  std::error_code ec;
  std::filesystem::remove_all(top, ec);
  return 0;
}
