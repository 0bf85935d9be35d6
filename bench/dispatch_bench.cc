// Dispatch overhead of `ateam-sandbox run`, the native backend against the bwrap backend on
// the same plan: the full layout (--repo of a small repository or --workspace, --out,
// --credentials, --agent none, two --allow routes to local listeners).
//
//   * first instruction: CLOCK_MONOTONIC just before the bench forks `run`, to the same
//     clock read by the agent, this binary re-run as `dispatch_bench --stamp` (static, so
//     nothing but the kernel runs before main);
//   * total: to `run` reaped (the stamp agent then exits at once, like `true`);
//   * git clone alone (the clone --repo makes), to say how much of the total it is;
//   * a burst of N dispatches started at once: wall time until the last is reaped, and the
//     peak memory of all their host processes (Pss summed over every descendant of the
//     bench, sampled every 5 ms in a separate burst) divided by N.
// Pairs alternate which backend goes first; medians, and the median of per-pair ratios.
//
//   dispatch_bench --ateam PATH [--bwrap-path PATH] [--runs N] [--warmup N] [--burst N]
//                  [--burst-rounds N] [--modes repo,workspace] [--dir /tmp]
// --dir: where the repository, the clones and the out dirs are made (/dev/shm for tmpfs);
// the relay sockets stay where `run` puts them.
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/dispatch_bench_procs.h"

namespace dbench {
namespace {

struct Config {
  std::string ateam;
  std::string bwrap = "/usr/bin/bwrap";
  int runs = 20;
  int warmup = 2;
  int burst = 32;
  int burst_rounds = 4;  // even: each backend goes first equally often
  std::vector<std::string> modes = {"repo", "workspace"};
  std::string dir = "/tmp";  // where the repository, clones, out dirs go
};

struct Env {
  std::string work, ateam, stamp, repo, cred, roots, outs, logs, workspace;
  int ports[2] = {0, 0};
};

int Listen() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 || listen(fd, 64) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    std::perror("listener");
    std::exit(1);
  }
  return ntohs(addr.sin_port);  // the socket stays open (and listening) for the whole bench
}

// A world-readable work directory (a root caller's sandboxes run as another uid) with
// copies of both binaries, a small repository, a credentials file and two listeners.
Env Setup(const Config& cfg) {
  Env env;
  std::string tmpl = cfg.dir + "/dispatch-bench-XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) {
    std::perror(tmpl.c_str());
    std::exit(1);
  }
  env.work = tmpl;
  chmod(tmpl.c_str(), 0755);
  env.ateam = env.work + "/ateam-sandbox";
  env.stamp = env.work + "/stamp";
  env.repo = env.work + "/repo";
  env.cred = env.work + "/cred.json";
  env.roots = env.work + "/dispatches";
  env.outs = env.work + "/outs";
  env.logs = env.work + "/logs";
  env.workspace = env.work + "/ws";
  Shell("install -m 0755 " + cfg.ateam + " " + env.ateam + " && install -m 0755 /proc/" +
        std::to_string(getpid()) + "/exe " + env.stamp);
  Shell("mkdir -m 0755 " + env.roots + " " + env.outs + " " + env.logs + " " + env.workspace +
        R"( && echo '{"token": "x"}' > )" + env.cred + " && chmod 0644 " + env.cred);
  // A small repository: 40 files of ~2 KiB in a few directories, two commits.
  Shell("set -e; mkdir " + env.repo + "; cd " + env.repo +
        "; git init -q; for d in src doc test; do mkdir $d; for i in $(seq 1 13); do "
        "head -c 1500 /dev/urandom | base64 > $d/f$i.txt; done; done; echo hi > README; "
        "git add -A; git -c user.name=b -c user.email=b@b commit -qm one; echo more >> README; "
        "git -c user.name=b -c user.email=b@b commit -qam two");
  // A root caller's sandbox runs as another uid: each --workspace and --out is made
  // beforehand (MakeOutDirs), the workspace given to 65534 as the tests do, then lent.
  env.ports[0] = Listen();
  env.ports[1] = Listen();
  return env;
}

std::vector<std::string> RunArgv(const Config& cfg, const Env& env, const std::string& backend,
                                 const std::string& mode, int n) {
  std::vector<std::string> argv = {env.ateam, "run", "--backend", backend};
  if (backend == "bwrap") argv.insert(argv.end(), {"--bwrap-path", cfg.bwrap});
  if (mode == "repo") {
    argv.insert(argv.end(), {"--repo", env.repo, "--workspace-root", env.roots});
  } else {
    // A workspace of its own: `run` refuses a second dispatch in a workspace in use.
    argv.insert(argv.end(), {"--workspace", env.workspace + "/" + std::to_string(n)});
  }
  argv.insert(argv.end(), {"--out", env.outs + "/" + std::to_string(n), "--credentials",
                           env.cred + ":creds.json", "--agent", "none", "--allow",
                           "a.bench.test=127.0.0.1:" + std::to_string(env.ports[0]), "--allow",
                           "b.bench.test=127.0.0.1:" + std::to_string(env.ports[1]), "--ro",
                           env.stamp, "--", env.stamp, "--stamp"});
  return argv;
}

// outs/N and ws/N for N below `count`, made before the clock starts: `run` lends a root
// caller's --out to the sandbox's uid, which could not create it in outs/ (root's).
void MakeOutDirs(const Env& env, int count) {
  for (int n = 0; n < count; ++n) {
    for (const std::string& parent : {env.outs, env.workspace}) {
      std::string dir = parent + "/" + std::to_string(n);
      if (mkdir(dir.c_str(), 0755) != 0) {
        std::perror(dir.c_str());
        std::exit(1);
      }
      if (parent == env.workspace && getuid() == 0 && chown(dir.c_str(), 65534, 65534) != 0) {
        std::perror(dir.c_str());
        std::exit(1);
      }
    }
  }
}

void Clean(const Env& env) {
  namespace fs = std::filesystem;
  for (const std::string& dir : {env.roots, env.outs, env.logs, env.workspace}) {
    for (const auto& entry : fs::directory_iterator(dir)) fs::remove_all(entry.path());
  }
}

struct Sample {
  double first_ms = 0;
  double total_ms = 0;
  double maxrss_kib = 0;  // wait4: the largest single process of the dispatch
};

// Checks one finished dispatch: exit 0 and a stamp. Exits the bench with its log when not.
double CheckedStamp(const Env& env, const Reaped& r, int n) {
  std::string log = env.logs + "/" + std::to_string(n);
  auto stamp = ParseStampMs(ReadWholeFile(log + ".out"));
  if (!WIFEXITED(r.status) || WEXITSTATUS(r.status) != 0 || !stamp) {
    std::fprintf(stderr, "dispatch %d failed (status %d): %s\n", n, r.status,
                 ReadWholeFile(log + ".err").c_str());
    std::exit(1);
  }
  return *stamp;
}

Sample RunOne(const Config& cfg, const Env& env, const std::string& backend,
              const std::string& mode) {
  auto argv = RunArgv(cfg, env, backend, mode, 0);
  MakeOutDirs(env, 1);
  double start = MonoMs();
  pid_t pid = SpawnToFiles(argv, env.logs + "/0.out", env.logs + "/0.err");
  Reaped r = Reap(pid);
  Sample s{CheckedStamp(env, r, 0) - start, r.end_ms - start, static_cast<double>(r.maxrss_kib)};
  Clean(env);
  return s;
}

double CloneOnce(const Env& env) {
  std::string dest = env.roots + "/clone";
  double start = MonoMs();
  pid_t pid =
      SpawnToFiles({"/usr/bin/git", "clone", "--quiet", "--no-hardlinks", "--", env.repo, dest},
                   env.logs + "/clone.out", env.logs + "/clone.err");
  Reaped r = Reap(pid);
  double ms = r.end_ms - start;
  Clean(env);
  return ms;
}

void Sequential(const Config& cfg, const Env& env, const std::string& mode) {
  for (int i = 0; i < cfg.warmup; ++i) {
    RunOne(cfg, env, "native", mode);
    RunOne(cfg, env, "bwrap", mode);
  }
  std::vector<double> nf, nt, bf, bt, rf, rt, clone, nrss, brss;
  for (int i = 0; i < cfg.runs; ++i) {
    bool native_first = i % 2 == 0;
    Sample first = RunOne(cfg, env, native_first ? "native" : "bwrap", mode);
    Sample second = RunOne(cfg, env, native_first ? "bwrap" : "native", mode);
    const Sample& n = native_first ? first : second;
    const Sample& b = native_first ? second : first;
    nf.push_back(n.first_ms);
    nt.push_back(n.total_ms);
    bf.push_back(b.first_ms);
    bt.push_back(b.total_ms);
    rf.push_back(n.first_ms / b.first_ms);
    rt.push_back(n.total_ms / b.total_ms);
    nrss.push_back(n.maxrss_kib);
    brss.push_back(b.maxrss_kib);
    if (mode == "repo") clone.push_back(CloneOnce(env));
  }
  std::printf("\n--%s, %d interleaved pairs (ms, medians)\n", mode.c_str(), cfg.runs);
  std::printf("  %-8s first instruction %7.2f   total %7.2f\n", "native", Median(nf), Median(nt));
  std::printf("  %-8s first instruction %7.2f   total %7.2f\n", "bwrap", Median(bf), Median(bt));
  std::printf("  native/bwrap per-pair median: first instruction %.3f, total %.3f\n", Median(rf),
              Median(rt));
  std::printf("  largest single process (wait4 ru_maxrss): native %.0f KiB, bwrap %.0f KiB\n",
              Median(nrss), Median(brss));
  if (!clone.empty()) {
    std::printf(
        "  git clone --no-hardlinks alone: %.2f ms = %.0f%% of native total, %.0f%% of "
        "bwrap total\n",
        Median(clone), 100 * Median(clone) / Median(nt), 100 * Median(clone) / Median(bt));
  }
}

struct BurstResult {
  double wall_ms = 0;
  MemorySample peak;
  double system_delta_kib = 0;
};

// `count` dispatches forked back to back; every one must succeed.
BurstResult Burst(const Config& cfg, const Env& env, const std::string& backend,
                  const std::string& mode, bool sample_memory) {
  BurstResult result;
  // The previous burst's clones and their removal are still being written back: flush them
  // first (untimed), or whichever burst comes first in a round pays for the one before.
  MakeOutDirs(env, cfg.burst);
  sync();
  double system_before = SystemUsedKib();
  double start = MonoMs();
  for (int n = 0; n < cfg.burst; ++n) {
    auto log = env.logs + "/" + std::to_string(n);
    SpawnToFiles(RunArgv(cfg, env, backend, mode, n), log + ".out", log + ".err");
  }
  double last_end = start;
  int left = cfg.burst;
  while (left > 0) {
    Reaped r = Reap(-1, sample_memory);
    if (r.pid > 0) {
      --left;
      last_end = r.end_ms;
      if (!WIFEXITED(r.status) || WEXITSTATUS(r.status) != 0) {
        std::fprintf(stderr, "%s burst: a dispatch failed (status %d)\n", backend.c_str(),
                     r.status);
        std::exit(1);
      }
      continue;
    }
    MemorySample m = SampleDescendants();
    if (m.pss_kib > result.peak.pss_kib) result.peak = m;
    result.system_delta_kib = std::max(result.system_delta_kib, SystemUsedKib() - system_before);
    timespec pause{0, 5'000'000};
    nanosleep(&pause, nullptr);
  }
  result.wall_ms = last_end - start;
  for (int n = 0; n < cfg.burst; ++n) CheckedStamp(env, Reaped{}, n);
  Clean(env);
  return result;
}

void Bursts(const Config& cfg, const Env& env, const std::string& mode) {
  std::vector<double> nw, bw, ratio;
  for (int i = 0; i < cfg.burst_rounds; ++i) {
    bool native_first = i % 2 == 0;
    double first = Burst(cfg, env, native_first ? "native" : "bwrap", mode, false).wall_ms;
    double second = Burst(cfg, env, native_first ? "bwrap" : "native", mode, false).wall_ms;
    nw.push_back(native_first ? first : second);
    bw.push_back(native_first ? second : first);
    ratio.push_back(nw.back() / bw.back());
  }
  std::printf("\n--%s burst of %d, %d interleaved rounds, all succeeded\n", mode.c_str(), cfg.burst,
              cfg.burst_rounds);
  std::printf("  wall median: native %.1f ms, bwrap %.1f ms; native/bwrap per-round median %.3f\n",
              Median(nw), Median(bw), Median(ratio));
  for (const char* backend : {"native", "bwrap"}) {
    BurstResult m = Burst(cfg, env, backend, mode, true);
    std::printf(
        "  %-6s sampled burst (%.0f ms): peak Pss %.0f KiB = %.0f KiB/dispatch "
        "(Rss %.0f KiB/dispatch, %d processes, %d unreadable); system used +%.0f "
        "KiB = %.0f KiB/dispatch\n",
        backend, m.wall_ms, m.peak.pss_kib, m.peak.pss_kib / cfg.burst, m.peak.rss_kib / cfg.burst,
        m.peak.processes, m.peak.unreadable, m.system_delta_kib, m.system_delta_kib / cfg.burst);
  }
}

bool ParseArgs(int argc, char** argv, Config* cfg) {
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--ateam") {
      cfg->ateam = value;
    } else if (flag == "--dir") {
      cfg->dir = value;
    } else if (flag == "--bwrap-path") {
      cfg->bwrap = value;
    } else if (flag == "--runs") {
      cfg->runs = std::atoi(value.c_str());
    } else if (flag == "--warmup") {
      cfg->warmup = std::atoi(value.c_str());
    } else if (flag == "--burst") {
      cfg->burst = std::atoi(value.c_str());
    } else if (flag == "--burst-rounds") {
      cfg->burst_rounds = std::atoi(value.c_str());
    } else if (flag == "--modes") {
      cfg->modes.clear();
      for (size_t at = 0; at <= value.size();) {
        size_t comma = std::min(value.find(',', at), value.size());
        cfg->modes.push_back(value.substr(at, comma - at));
        at = comma + 1;
      }
    } else {
      return false;
    }
  }
  return argc % 2 == 1 && !cfg->ateam.empty() && cfg->runs > 0;
}

}  // namespace
}  // namespace dbench

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "--stamp") {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);  // the agent's first instruction, near enough
    std::printf("stamp_ns: %lld\n", static_cast<long long>(ts.tv_sec) * 1'000'000'000LL +
                                        static_cast<long long>(ts.tv_nsec));
    return 0;
  }
  dbench::Config cfg;
  if (!dbench::ParseArgs(argc, argv, &cfg)) {
    std::fprintf(stderr,
                 "usage: dispatch_bench --ateam PATH [--bwrap-path P] [--runs N] [--warmup N] "
                 "[--burst N] [--burst-rounds N] [--modes repo,workspace] [--dir D]\n");
    return 2;
  }
  dbench::Env env = dbench::Setup(cfg);
  std::printf("uid %d, work dir %s, load average %s", static_cast<int>(getuid()), env.work.c_str(),
              dbench::ReadWholeFile("/proc/loadavg").c_str());
  for (const auto& mode : cfg.modes) dbench::Sequential(cfg, env, mode);
  if (cfg.burst > 0 && cfg.burst_rounds > 0) {
    for (const auto& mode : cfg.modes) dbench::Bursts(cfg, env, mode);
  }
  std::printf("\nload average at the end %s", dbench::ReadWholeFile("/proc/loadavg").c_str());
  std::filesystem::remove_all(env.work);
  return 0;
}
