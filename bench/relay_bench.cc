// relay_bench: the network tunnel's cost on loopback, in one run, side by side:
//   direct  client -TCP-> server
//   tunnel  client -TCP-> listener handed over on route-0.sock, accepted by HostRelay
//           -TCP-> server (HostRelay on one EventLoop in a forked child)
//   socat   client -TCP-> socat TCP-LISTEN,fork -UDS-> socat UNIX-LISTEN,fork -TCP-> server
// Metrics: bulk throughput, 1-byte round trip, new connections per second (1 and 8 clients,
// with the slowest single connect()), and relay memory per idle connection (Pss of the relay
// processes before/after opening N connections). Everything binds 127.0.0.1 and every phase
// is bounded in bytes, rounds or seconds, so the bench stops by itself.
//
// Each metric is measured --samples times (default 5) per path, the paths interleaved: sample
// k runs the paths in an order rotated by k (direct tunnel socat, tunnel socat direct, ...),
// so a change in the machine's load falls on every path alike. The table shows each path's
// median and, per pair of paths, the median of the per-sample ratios.
//
//   relay_bench [--samples N] [--bulk-mib N] [--rtt-rounds N] [--cps-seconds S]
//               [--idle-conns N] [--socat PATH]
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "bench/relay_bench_procs.h"
#include "bench/relay_bench_server.h"
#include "relay/endpoint.h"
#include "relay/event_loop.h"
#include "relay/handoff.h"
#include "relay/host_relay.h"
#include "relay/relay.h"

namespace {

using Clock = std::chrono::steady_clock;
using bench::ConnectLoopback;
using bench::ReadExact;
using bench::Spawn;
using bench::StopProcess;
using bench::TreePssKiB;
using bench::WriteAll;

struct Config {
  int samples = 5;
  uint64_t bulk_bytes = uint64_t{2} << 30;
  int rtt_rounds = 20000;
  double cps_seconds = 3.0;
  int idle_conns = 1000;
  std::string socat = "socat";
};

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// ---- metrics, each against one entry port ----

double BulkGbps(uint16_t port, uint64_t total) {
  double connect_ms = 0;
  int fd = ConnectLoopback(port, &connect_ms);
  if (fd < 0) return -1;
  std::vector<char> chunk(size_t{256} * 1024, 'b');
  chunk[0] = 'S';  // the server's sink mode: discard, answer one byte at EOF
  auto start = Clock::now();
  bool ok = true;
  for (uint64_t sent = 0; ok && sent < total; sent += chunk.size()) {
    ok = WriteAll(fd, chunk.data(), chunk.size());
    chunk[0] = 'b';
  }
  char ack = 0;
  ok = ok && ::shutdown(fd, SHUT_WR) == 0 && ReadExact(fd, &ack, 1);
  double secs = Seconds(Clock::now() - start);
  ::close(fd);
  return ok ? static_cast<double>(total) * 8 / secs / 1e9 : -1;
}

double RttMedianUs(uint16_t port, int rounds) {
  double connect_ms = 0;
  int fd = ConnectLoopback(port, &connect_ms);
  if (fd < 0) return -1;
  std::vector<double> us;
  us.reserve(static_cast<size_t>(rounds));
  char c = 'x';
  for (int i = 0; i < rounds + 200; ++i) {  // the first 200 warm up
    auto t0 = Clock::now();
    if (!WriteAll(fd, &c, 1) || !ReadExact(fd, &c, 1)) break;
    if (i >= 200) us.push_back(Seconds(Clock::now() - t0) * 1e6);
  }
  ::close(fd);
  if (us.size() != static_cast<size_t>(rounds)) return -1;
  std::nth_element(us.begin(), us.begin() + rounds / 2, us.end());
  return us[static_cast<size_t>(rounds / 2)];
}

struct CpsResult {
  double per_sec = 0;
  double max_connect_ms = 0;
  uint64_t failures = 0;
};

// `clients` threads each loop: connect, send 1 byte, receive 1 byte, close.
CpsResult ConnectionsPerSecond(uint16_t port, int clients, double seconds) {
  constexpr uint64_t kMaxPerClient = 200000;  // bound even on a very fast host
  std::atomic<uint64_t> done{0};
  std::atomic<uint64_t> failures{0};
  std::vector<double> max_ms(static_cast<size_t>(clients), 0);
  auto start = Clock::now();
  auto deadline =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(clients));
  for (int t = 0; t < clients; ++t) {
    threads.emplace_back([&, t] {
      for (uint64_t n = 0; n < kMaxPerClient && Clock::now() < deadline; ++n) {
        double connect_ms = 0;
        int fd = ConnectLoopback(port, &connect_ms);
        max_ms[static_cast<size_t>(t)] = std::max(max_ms[static_cast<size_t>(t)], connect_ms);
        char c = 'x';
        bool ok = fd >= 0 && WriteAll(fd, &c, 1) && ReadExact(fd, &c, 1);
        if (fd >= 0) ::close(fd);
        ++(ok ? done : failures);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  CpsResult result;
  result.per_sec = static_cast<double>(done.load()) / Seconds(Clock::now() - start);
  result.max_connect_ms = *std::max_element(max_ms.begin(), max_ms.end());
  result.failures = failures.load();
  return result;
}

// Opens `count` connections, each exchanging one byte (so every hop dialled), keeps them open
// and returns the Pss growth of the relay processes per connection.
double KiBPerIdleConnection(uint16_t port, int count, const std::set<pid_t>& relay_pids) {
  uint64_t before = TreePssKiB(relay_pids);
  std::vector<int> fds;
  for (int i = 0; i < count; ++i) {
    double connect_ms = 0;
    int fd = ConnectLoopback(port, &connect_ms);
    char c = 'x';
    if (fd < 0 || !WriteAll(fd, &c, 1) || !ReadExact(fd, &c, 1)) {
      if (fd >= 0) ::close(fd);
      break;
    }
    fds.push_back(fd);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // let the relays settle
  uint64_t after = TreePssKiB(relay_pids);
  size_t opened = fds.size();
  for (int fd : fds) ::close(fd);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // let the chains wind down
  if (opened != static_cast<size_t>(count)) return -1;
  return static_cast<double>(after > before ? after - before : 0) / count;
}

// ---- the tunnel: both relays of the product on one EventLoop, in a child process ----

// Runs in the forked child. Writes the entry port to `ready_fd`, returns at EOF on `stop_fd`.
int RunTunnel(const std::string& dir, uint16_t server_port, int ready_fd, int stop_fd) {
  using namespace sbx::relay;
  auto loop = EventLoop::Create();
  if (!loop) return 1;
  Limits limits;
  limits.max_connections = 8192;  // the bench opens --idle-conns at once
  auto upstream = SocketAddress::FromIp("127.0.0.1", server_port);
  if (!upstream) return 1;
  Route route;
  route.index = 0;
  route.host = "bench.invalid";
  route.port = server_port;
  route.kind = RouteKind::kTcp;         // the bench speaks plain bytes, not TLS
  route.upstream_override = *upstream;  // loopback on purpose
  auto host =
      HostRelay::Create(loop->get(), {dir, {route}, limits, "", std::nullopt, nullptr, {}, {}});
  if (!host) return 2;
  // SocketAddress takes ports 1..65535 only: pick one that was free a moment ago.
  auto listen_at = SocketAddress::FromIp("127.0.0.1", bench::FreeLoopbackPort());
  auto target = Endpoint::Unix(dir + "/" + RouteSocketName(0));
  if (!listen_at || !target) return 3;
  auto listener = Endpoint::Tcp(*listen_at).Listen();
  if (!listener) return 3;
  uint16_t port = bench::LocalPort(listener->get());
  // The supervisor's side: hand the listener over the route's channel, close both. The host
  // relay then accepts from it itself, as in the product.
  auto channel = target->Connect(std::chrono::seconds(5));
  if (!channel) return 4;
  if (!SendSocket(channel->get(), listener->get())) return 4;
  listener->reset();
  channel->reset();
  if (!(*loop)->WatchCallback(stop_fd, EPOLLIN, [&](uint32_t) { (*loop)->Stop(); })) return 5;
  if (::write(ready_fd, &port, sizeof(port)) != sizeof(port)) return 6;
  if (!(*loop)->Run()) return 7;
  host->reset();
  return 0;
}

struct Tunnel {
  pid_t pid = -1;
  int stop_fd = -1;  // closing it stops the child
  uint16_t port = 0;
};

// Must be called before any thread starts: the child keeps running library code after fork.
std::optional<Tunnel> StartTunnel(const std::string& dir, uint16_t server_port, int server_fd) {
  int ready[2];
  int stop[2];
  if (::pipe2(ready, O_CLOEXEC) < 0 || ::pipe2(stop, O_CLOEXEC) < 0) return std::nullopt;
  pid_t pid = ::fork();
  if (pid < 0) return std::nullopt;
  if (pid == 0) {
    ::close(server_fd);
    ::close(ready[0]);
    ::close(stop[1]);
    ::_exit(RunTunnel(dir, server_port, ready[1], stop[0]));
  }
  ::close(ready[1]);
  ::close(stop[0]);
  Tunnel tunnel{pid, stop[1], 0};
  bool ok = ::read(ready[0], &tunnel.port, sizeof(tunnel.port)) == sizeof(tunnel.port);
  ::close(ready[0]);
  if (!ok) {
    ::close(tunnel.stop_fd);
    int status = 0;
    ::waitpid(pid, &status, 0);
    std::fprintf(stderr, "relay_bench: tunnel child exited with %d\n",
                 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return std::nullopt;
  }
  return tunnel;
}

// ---- the socat chain, with socat's default options ----

bool WaitUntil(const std::function<bool()>& ready) {
  for (int i = 0; i < 500; ++i) {  // 5 s
    if (ready()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

struct Socat {
  pid_t unix_side = -1;
  pid_t tcp_side = -1;
  uint16_t port = 0;
};

std::optional<Socat> StartSocat(const Config& config, const std::string& dir,
                                uint16_t server_port) {
  std::string sock = dir + "/socat.sock";
  Socat socat;
  socat.unix_side = Spawn({config.socat, "UNIX-LISTEN:" + sock + ",fork",
                           "TCP:127.0.0.1:" + std::to_string(server_port)});
  if (socat.unix_side < 0) return std::nullopt;
  struct stat st {};
  if (!WaitUntil([&] { return ::stat(sock.c_str(), &st) == 0; })) return std::nullopt;
  socat.port = bench::FreeLoopbackPort();
  // bind=127.0.0.1 only keeps the listener off other interfaces; the rest is socat's default.
  socat.tcp_side =
      Spawn({config.socat,
             "TCP-LISTEN:" + std::to_string(socat.port) + ",fork,reuseaddr," + "bind=127.0.0.1",
             "UNIX-CONNECT:" + sock});
  if (socat.tcp_side < 0) return std::nullopt;
  bool up = WaitUntil([&] {
    double ms = 0;
    int fd = ConnectLoopback(socat.port, &ms);
    char c = 'x';
    bool ok = fd >= 0 && WriteAll(fd, &c, 1) && ReadExact(fd, &c, 1);
    if (fd >= 0) ::close(fd);
    return ok;
  });
  if (!up) return std::nullopt;
  return socat;
}

// ---- report ----

// Per path (direct, tunnel, socat), one value per sample; < 0 or no values: not measured or
// not applicable.
using Samples = std::array<std::vector<double>, 3>;

struct Row {
  std::string name;
  Samples v;
  int decimals;
};

double Median(std::vector<double> values) {
  values.erase(std::remove_if(values.begin(), values.end(), [](double x) { return x < 0; }),
               values.end());
  if (values.empty()) return -1;
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// The median over samples of a[i] / b[i] (the ratio within each interleaved sample).
double MedianRatio(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> ratios;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (a[i] >= 0 && b[i] > 0) ratios.push_back(a[i] / b[i]);
  }
  return Median(ratios);
}

std::string Cell(double v, int decimals) {
  if (v < 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, v);
  return buf;
}

void PrintTable(const std::vector<Row>& rows, int samples) {
  std::printf("\nmedians of %d interleaved samples per path; ratios: median of per-sample ratios\n",
              samples);
  std::printf("%-40s %10s %10s %10s %14s %13s %13s\n", "metric", "direct", "tunnel", "socat",
              "tunnel/direct", "socat/direct", "socat/tunnel");
  for (const Row& r : rows) {
    std::printf(
        "%-40s %10s %10s %10s %14s %13s %13s\n", r.name.c_str(),
        Cell(Median(r.v[0]), r.decimals).c_str(), Cell(Median(r.v[1]), r.decimals).c_str(),
        Cell(Median(r.v[2]), r.decimals).c_str(), Cell(MedianRatio(r.v[1], r.v[0]), 2).c_str(),
        Cell(MedianRatio(r.v[2], r.v[0]), 2).c_str(), Cell(MedianRatio(r.v[2], r.v[1]), 2).c_str());
  }
}

// Runs `measure(path)` `samples` times for each of `paths`, sample k in the order rotated by
// k, and returns the values per path in sample order.
template <typename T>
std::array<std::vector<T>, 3> Interleave(int samples, const std::vector<int>& paths,
                                         const std::function<T(int)>& measure) {
  std::array<std::vector<T>, 3> out;
  for (int k = 0; k < samples; ++k) {
    for (size_t j = 0; j < paths.size(); ++j) {
      int path = paths[(static_cast<size_t>(k) + j) % paths.size()];
      out[static_cast<size_t>(path)].push_back(measure(path));
    }
  }
  return out;
}

bool ParseArgs(int argc, char** argv, Config& config) {
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    const char* value = argv[i + 1];
    if (flag == "--samples") {
      config.samples = std::atoi(value);
    } else if (flag == "--bulk-mib") {
      config.bulk_bytes = std::strtoull(value, nullptr, 10) << 20;
    } else if (flag == "--rtt-rounds") {
      config.rtt_rounds = std::atoi(value);
    } else if (flag == "--cps-seconds") {
      config.cps_seconds = std::atof(value);
    } else if (flag == "--idle-conns") {
      config.idle_conns = std::atoi(value);
    } else if (flag == "--socat") {
      config.socat = value;
    } else {
      return false;
    }
  }
  return argc % 2 == 1 && config.samples > 0 && config.samples <= 50 && config.bulk_bytes > 0 &&
         config.rtt_rounds > 0 && config.cps_seconds > 0 && config.cps_seconds <= 60 &&
         config.idle_conns > 0 && config.idle_conns <= 5000;
}

// The connections/s and max connect() rows, 1 and 8 clients, for `paths` (interleaved);
// returns the failed connections.
uint64_t AddConnectionRateRows(const std::array<uint16_t, 3>& ports, const std::vector<int>& paths,
                               int samples, double seconds, std::vector<Row>& rows) {
  uint64_t failures = 0;
  for (int clients : {1, 8}) {
    auto r = Interleave<CpsResult>(samples, paths, [&](int path) {
      return ConnectionsPerSecond(ports[static_cast<size_t>(path)], clients, seconds);
    });
    auto pick = [&](auto field) {
      Samples v;
      for (size_t p = 0; p < r.size(); ++p) {
        for (const CpsResult& one : r[p]) v[p].push_back(one.*field);
      }
      return v;
    };
    for (const auto& per_path : r) {
      for (const CpsResult& one : per_path) failures += one.failures;
    }
    std::string n = std::to_string(clients) + (clients == 1 ? " client" : " clients");
    rows.push_back({"connections/s, " + n, pick(&CpsResult::per_sec), 0});
    rows.push_back({"max connect() ms, " + n, pick(&CpsResult::max_connect_ms), 2});
  }
  return failures;
}

}  // namespace

int main(int argc, char** argv) {
  Config config;
  if (!ParseArgs(argc, argv, config)) {
    std::fprintf(stderr,
                 "usage: relay_bench [--samples N<=50] [--bulk-mib N] [--rtt-rounds N]"
                 " [--cps-seconds S<=60] [--idle-conns N<=5000] [--socat PATH]\n");
    return 2;
  }
  ::signal(SIGPIPE, SIG_IGN);
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);  // socat's orphaned forks are reaped here, see below
  bench::RaiseFdLimit(6 * config.idle_conns + 1024);
  char dir_template[] = "/tmp/relaybench-XXXXXX";
  if (::mkdtemp(dir_template) == nullptr) return 1;
  std::string dir = dir_template;

  bench::Server server;
  if (!server.Listen()) return 1;
  auto tunnel = StartTunnel(dir, server.port(), server.listen_fd());  // before any thread
  if (!tunnel) {
    std::fprintf(stderr, "relay_bench: can't start the relay tunnel\n");
    std::filesystem::remove_all(dir);
    return 1;
  }
  server.Start();
  auto socat = StartSocat(config, dir, server.port());
  if (!socat) std::fprintf(stderr, "relay_bench: can't start socat; its column stays empty\n");

  std::array<uint16_t, 3> ports = {server.port(), tunnel->port, socat ? socat->port : uint16_t{0}};
  std::vector<int> paths = {0, 1};
  if (socat) paths.push_back(2);
  auto each = [&](const std::function<double(uint16_t)>& metric) {
    return Interleave<double>(config.samples, paths,
                              [&](int path) { return metric(ports[static_cast<size_t>(path)]); });
  };
  std::printf(
      "relay_bench: %d samples per path, interleaved; bulk %llu MiB, %d round trips, %.1f s per"
      " connection-rate run, %d idle connections; loopback 127.0.0.1\n",
      config.samples, static_cast<unsigned long long>(config.bulk_bytes >> 20), config.rtt_rounds,
      config.cps_seconds, config.idle_conns);
  std::fflush(stdout);

  std::vector<Row> rows;
  rows.push_back({"bulk throughput (Gbit/s)",
                  each([&](uint16_t p) { return BulkGbps(p, config.bulk_bytes); }), 2});
  rows.push_back({"1-byte RTT median (us)",
                  each([&](uint16_t p) { return RttMedianUs(p, config.rtt_rounds); }), 1});
  uint64_t failures = AddConnectionRateRows(ports, paths, config.samples, config.cps_seconds, rows);
  // Direct loopback has no relay process: memory is measured for the tunnel and socat only,
  // and once: the relay's heap keeps what a first batch of connections freed, so a second
  // batch would reuse it and show no growth at all.
  std::vector<int> relays = {1};
  if (socat) relays.push_back(2);
  Samples memory = Interleave<double>(1, relays, [&](int path) {
    if (path == 1) return KiBPerIdleConnection(tunnel->port, config.idle_conns, {tunnel->pid});
    return KiBPerIdleConnection(socat->port, config.idle_conns,
                                {socat->unix_side, socat->tcp_side});
  });
  rows.push_back({"relay Pss per idle conn (KiB), 1 sample", memory, 2});
  PrintTable(rows, config.samples);
  std::printf("failed connections (all runs): %llu\n", static_cast<unsigned long long>(failures));

  if (socat) {
    StopProcess(socat->tcp_side);
    StopProcess(socat->unix_side);
  }
  ::close(tunnel->stop_fd);
  int status = 0;
  ::waitpid(tunnel->pid, &status, 0);
  bench::ReapChildren();
  server.Stop();
  std::filesystem::remove_all(dir);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
