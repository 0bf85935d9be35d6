#include "bench/dispatch_bench_procs.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace dbench {

double MonoMs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

pid_t SpawnToFiles(const std::vector<std::string>& argv, const std::string& out_path,
                   const std::string& err_path) {
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) {
    std::perror("fork");
    std::exit(1);
  }
  if (pid == 0) {
    int in = open("/dev/null", O_RDONLY);
    int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (in < 0 || out < 0 || err < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0) {
      _exit(126);
    }
    execv(args[0], args.data());
    _exit(127);
  }
  return pid;
}

Reaped Reap(pid_t pid, bool nohang) {
  Reaped r;
  rusage usage{};
  for (;;) {
    r.pid = wait4(pid, &r.status, nohang ? WNOHANG : 0, &usage);
    if (r.pid >= 0 || errno != EINTR) break;
  }
  r.end_ms = MonoMs();
  if (r.pid <= 0) {
    r.pid = -1;
    return r;
  }
  r.maxrss_kib = usage.ru_maxrss;
  return r;
}

std::optional<double> ParseStampMs(const std::string& text) {
  auto at = text.find("stamp_ns: ");
  if (at == std::string::npos) return std::nullopt;
  long long ns = std::atoll(text.c_str() + at + 10);
  if (ns <= 0) return std::nullopt;
  return static_cast<double>(ns) / 1e6;
}

namespace {

// The "Name: N kB" value of `key` in a /proc file's text, or -1.
double KibField(const std::string& text, const char* key) {
  auto at = text.find(key);
  if (at == std::string::npos) return -1;
  return std::atof(text.c_str() + at + std::strlen(key));
}

// pid -> parent pid for every process.
std::map<pid_t, pid_t> ParentMap() {
  std::map<pid_t, pid_t> parents;
  DIR* dir = opendir("/proc");
  if (dir == nullptr) return parents;
  while (dirent* entry = readdir(dir)) {
    pid_t pid = std::atoi(entry->d_name);
    if (pid <= 0) continue;
    std::string stat = ReadWholeFile("/proc/" + std::string(entry->d_name) + "/stat");
    // "pid (comm) state ppid ...": comm may hold blanks and parentheses; the last ')' ends it.
    auto close = stat.rfind(')');
    if (close == std::string::npos || close + 4 > stat.size()) continue;
    parents[pid] = std::atoi(stat.c_str() + close + 4);
  }
  closedir(dir);
  return parents;
}

}  // namespace

MemorySample SampleDescendants() {
  std::map<pid_t, pid_t> parents = ParentMap();
  std::set<pid_t> tree = {getpid()};
  // Parents are listed before most of their children but not always: repeat to a fixpoint.
  for (size_t size = 0; size != tree.size();) {
    size = tree.size();
    for (const auto& [pid, ppid] : parents) {
      if (tree.count(ppid) != 0) tree.insert(pid);
    }
  }
  tree.erase(getpid());
  MemorySample sample;
  for (pid_t pid : tree) {
    std::string rollup = ReadWholeFile("/proc/" + std::to_string(pid) + "/smaps_rollup");
    double pss = KibField(rollup, "\nPss:");
    double rss = KibField(rollup, "\nRss:");
    if (rollup.empty()) continue;  // a zombie or already gone: holds no memory
    if (pss < 0 || rss < 0) {
      ++sample.unreadable;
      continue;
    }
    sample.pss_kib += pss;
    sample.rss_kib += rss;
    ++sample.processes;
  }
  return sample;
}

double SystemUsedKib() {
  std::string info = ReadWholeFile("/proc/meminfo");
  return KibField(info, "MemTotal:") - KibField(info, "MemAvailable:");
}

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void Shell(const std::string& command) {
  if (std::system(command.c_str()) != 0) {  // NOLINT(concurrency-mt-unsafe)
    std::fprintf(stderr, "dispatch_bench: setup failed: %s\n", command.c_str());
    std::exit(1);
  }
}

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

}  // namespace dbench
