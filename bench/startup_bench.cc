// Startup-to-exit of `true` under the typical bwrap profile, for two sandbox binaries
// measured interleaved (A B A B ...) in one run, so machine noise hits both alike.
// Prints each side's median and the median of the per-pair ratios A/B.
//
//   startup_bench --a NAME=PATH --b NAME=PATH [--runs N] [--warmup N]
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

namespace {

struct Side {
  std::string name;
  std::string path;
  std::vector<double> ms;
};

// The profile is grouped by option, not by column.
// clang-format off
const std::vector<std::string> kProfile = {
    "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib",
    "--symlink", "usr/lib64", "/lib64", "--ro-bind", "/etc", "/etc", "--tmpfs", "/tmp",
    "--tmpfs", "/home", "--proc", "/proc", "--dev", "/dev", "--unshare-all",
    "--die-with-parent", "--new-session", "true"};
// clang-format on

double NowMs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

// One run of `path PROFILE...`; returns elapsed milliseconds, exits on failure.
double RunOnce(const std::string& path) {
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(path.c_str()));
  for (const auto& a : kProfile) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  double start = NowMs();
  pid_t pid = fork();
  if (pid == 0) {
    execv(path.c_str(), argv.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  double elapsed = NowMs() - start;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "%s failed (status %d)\n", path.c_str(), status);
    std::exit(1);
  }
  return elapsed;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

bool ParseSide(const char* arg, Side* side) {
  std::string s = arg;
  auto eq = s.find('=');
  if (eq == std::string::npos) return false;
  side->name = s.substr(0, eq);
  side->path = s.substr(eq + 1);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Side a, b;
  int runs = 200;
  int warmup = 10;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    bool ok = true;
    if (flag == "--a")
      ok = ParseSide(argv[i + 1], &a);
    else if (flag == "--b")
      ok = ParseSide(argv[i + 1], &b);
    else if (flag == "--runs")
      runs = std::atoi(argv[i + 1]);
    else if (flag == "--warmup")
      warmup = std::atoi(argv[i + 1]);
    else
      ok = false;
    if (!ok) {
      std::fprintf(stderr, "usage: startup_bench --a NAME=PATH --b NAME=PATH [--runs N]\n");
      return 2;
    }
  }
  if (a.path.empty() || b.path.empty() || runs < 1) {
    std::fprintf(stderr, "usage: startup_bench --a NAME=PATH --b NAME=PATH [--runs N]\n");
    return 2;
  }
  for (int i = 0; i < warmup; ++i) {
    RunOnce(a.path);
    RunOnce(b.path);
  }
  std::vector<double> ratios;
  for (int i = 0; i < runs; ++i) {
    // Alternate which side goes first so neither always follows the other.
    bool a_first = i % 2 == 0;
    double first = RunOnce(a_first ? a.path : b.path);
    double second = RunOnce(a_first ? b.path : a.path);
    double ta = a_first ? first : second;
    double tb = a_first ? second : first;
    a.ms.push_back(ta);
    b.ms.push_back(tb);
    ratios.push_back(ta / tb);
  }
  std::printf("uid %d, %d interleaved pairs\n", static_cast<int>(getuid()), runs);
  std::printf("%-10s median %7.3f ms\n", a.name.c_str(), Median(a.ms));
  std::printf("%-10s median %7.3f ms\n", b.name.c_str(), Median(b.ms));
  std::printf("ratio %s/%s: median of per-pair ratios %.3f, ratio of medians %.3f\n",
              a.name.c_str(), b.name.c_str(), Median(ratios), Median(a.ms) / Median(b.ms));
  return 0;
}
