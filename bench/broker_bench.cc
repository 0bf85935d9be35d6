// broker_bench: what a broker route costs against a tls route to the same HTTPS server, in
// one run, side by side (both relays on one EventLoop in a thread of this process, as in
// `run`; everything on 127.0.0.1):
//   tls     client -TLS-> relay (ClientHello check, bytes passed on) -> server
//   broker  client -plain HTTP-> relay (parse, rewrite, secret, TLS of its own) -> server
// Metrics, each --samples times per route, the routes interleaved (sample k starts with the
// other route than sample k-1):
//   new     one GET on a new connection, to its last response byte (connect, handshakes)
//   warm    one GET on a kept-alive connection (the median of --warm-rounds requests)
//   stream  MiB/s of a chunked response of --stream-mib MiB read to its end
// The table shows each route's median and the median of the per-sample broker/tls ratios.
// The server and the test CA come from the openssl CLI (a throwaway directory).
//
//   broker_bench [--samples N] [--warm-rounds N] [--stream-mib N]
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "relay/broker_connection.h"
#include "relay/broker_memory.h"
#include "relay/broker_tls.h"
#include "relay/event_loop.h"
#include "relay/relay.h"

namespace {

using Clock = std::chrono::steady_clock;
using namespace sbx::relay;  // NOLINT(google-build-using-namespace): a bench's main file

constexpr char kHost[] = "api.bench.test";

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "broker_bench: %s\n", what.c_str());
  std::exit(1);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

int ListenLoopback(uint16_t* port, bool nonblocking = false) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | (nonblocking ? SOCK_NONBLOCK : 0), 0);
  // Inherited by accepted sockets, as on the supervisor's listeners in `run`.
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(fd, 512) != 0)
    Die("listen");
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  *port = ntohs(addr.sin_port);
  return fd;
}

int ConnectLoopback(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) Die("connect");
  return fd;
}

// A byte stream: plain fd or TLS over it, blocking.
struct Stream {
  int fd = -1;
  SSL* ssl = nullptr;
  ~Stream() {
    if (ssl != nullptr) SSL_free(ssl);
    if (fd >= 0) ::close(fd);
  }
  ssize_t Read(char* buf, size_t n) const {
    return ssl != nullptr ? SSL_read(ssl, buf, static_cast<int>(n)) : ::read(fd, buf, n);
  }
  [[nodiscard]] bool WriteAll(const std::string& data) const {
    size_t done = 0;
    while (done < data.size()) {
      ssize_t n = ssl != nullptr
                      ? SSL_write(ssl, data.data() + done, static_cast<int>(data.size() - done))
                      : ::write(fd, data.data() + done, data.size() - done);
      if (n <= 0) return false;
      done += static_cast<size_t>(n);
    }
    return true;
  }
};

// The HTTPS server: GET /small answers 64 bytes; GET /stream/N streams N MiB in 16 KiB
// chunks. Keep-alive; one thread per connection.
class Server {
 public:
  Server(const std::string& cert, const std::string& key) : ctx_(SSL_CTX_new(TLS_server_method())) {
    if (SSL_CTX_use_certificate_chain_file(ctx_, cert.c_str()) != 1 ||
        SSL_CTX_use_PrivateKey_file(ctx_, key.c_str(), SSL_FILETYPE_PEM) != 1)
      Die("server certificate");
    fd_ = ListenLoopback(&port_);
    thread_ = std::thread([this] { Accept(); });
  }
  ~Server() {
    stop_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    thread_.join();
    ::close(fd_);
  }
  [[nodiscard]] uint16_t port() const { return port_; }

 private:
  void Accept() {
    while (!stop_) {
      int fd = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) break;
      std::thread([this, fd] { Serve(fd); }).detach();
    }
  }
  void Serve(int fd) {
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    Stream s;
    s.fd = fd;
    s.ssl = SSL_new(ctx_);
    SSL_set_fd(s.ssl, fd);
    if (SSL_accept(s.ssl) != 1) return;
    std::string in;
    char buf[16384];
    const std::string chunk = std::string("4000\r\n") + std::string(16384, 'x') + "\r\n";
    for (;;) {
      size_t end;
      while ((end = in.find("\r\n\r\n")) == std::string::npos) {
        ssize_t n = s.Read(buf, sizeof(buf));
        if (n <= 0) return;
        in.append(buf, static_cast<size_t>(n));
      }
      std::string head = in.substr(0, end);
      in.erase(0, end + 4);
      if (head.starts_with("GET /stream/")) {
        long mib = std::atol(head.c_str() + 12);
        if (!s.WriteAll("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                        "Transfer-Encoding: chunked\r\n\r\n"))
          return;
        for (long i = 0; i < mib * 64; ++i) {
          if (!s.WriteAll(chunk)) return;
        }
        if (!s.WriteAll("0\r\n\r\n")) return;
      } else {
        if (!s.WriteAll("HTTP/1.1 200 OK\r\nContent-Length: 64\r\n\r\n" + std::string(64, 'y')))
          return;
      }
    }
  }
  SSL_CTX* ctx_;
  int fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Reads one response whose end is known by its shape (the bench server's two kinds).
bool ReadResponse(const Stream& s, std::string& pending, bool chunked, uint64_t* body_bytes) {
  char buf[65536];
  const std::string end_marker = chunked ? "\r\n0\r\n\r\n" : std::string(64, 'y');
  uint64_t total = 0;
  for (;;) {
    size_t at = pending.find(end_marker);
    if (at != std::string::npos) {
      pending.erase(0, at + end_marker.size());
      if (body_bytes != nullptr) *body_bytes = total;
      return true;
    }
    // Keep only what could start the marker.
    if (pending.size() > end_marker.size()) {
      total += pending.size() - end_marker.size();
      pending.erase(0, pending.size() - end_marker.size());
    }
    ssize_t n = s.Read(buf, sizeof(buf));
    if (n <= 0) return false;
    pending.append(buf, static_cast<size_t>(n));
  }
}

struct Route {
  const char* name;
  uint16_t port;
  bool tls;
};

std::unique_ptr<Stream> Open(const Route& route, SSL_CTX* client) {
  auto s = std::make_unique<Stream>();
  s->fd = ConnectLoopback(route.port);
  if (route.tls) {
    s->ssl = SSL_new(client);
    SSL_set_fd(s->ssl, s->fd);
    SSL_ctrl(s->ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
             const_cast<char*>(kHost));
    SSL_set1_host(s->ssl, kHost);
    if (SSL_connect(s->ssl) != 1) Die("client TLS to the tls route");
  }
  return s;
}

std::string Get(const std::string& path) {
  return "GET " + path + " HTTP/1.1\r\nHost: " + kHost + "\r\nx-api-key: placeholder\r\n\r\n";
}

// A test CA and the bench server's certificate for kHost in `d`; the CA's PEM.
std::string MakeCertificates(const std::string& d) {
  const std::string script =
      "set -e; cd " + d +
      "; openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 1 -subj "
      "/CN=bench-ca 2>/dev/null"
      "; openssl req -newkey rsa:2048 -nodes -keyout srv.key -out srv.csr -subj /CN=" +
      kHost + " 2>/dev/null; printf 'subjectAltName=DNS:" + kHost +
      "\\n' > ext"
      "; openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out srv.pem -days "
      "1 -extfile ext 2>/dev/null";
  if (std::system(script.c_str()) != 0) Die("openssl could not make the test certificates");
  std::ifstream ca_file(d + "/ca.pem");
  std::stringstream ca_pem;
  ca_pem << ca_file.rdbuf();
  return ca_pem.str();
}

// Each route's figures, one per sample.
struct Samples {
  std::vector<double> fresh;   // a request on a new connection, µs
  std::vector<double> warm;    // the median request on a kept-alive connection, µs
  std::vector<double> stream;  // a streamed answer, MiB/s
};

// One sample of every metric on `route`.
void MeasureRoute(const Route& route, SSL_CTX* client, int warm_rounds, int stream_mib,
                  Samples* out) {
  // new: connect, (TLS,) one request, its whole answer.
  auto t0 = Clock::now();
  {
    auto s = Open(route, client);
    std::string pending;
    if (!s->WriteAll(Get("/small")) || !ReadResponse(*s, pending, false, nullptr))
      Die(std::string("new request on ") + route.name);
  }
  out->fresh.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  // warm: requests on one kept-alive connection.
  auto s = Open(route, client);
  std::string pending;
  std::vector<double> rounds;
  for (int i = 0; i < warm_rounds; ++i) {
    auto t1 = Clock::now();
    if (!s->WriteAll(Get("/small")) || !ReadResponse(*s, pending, false, nullptr))
      Die(std::string("warm request on ") + route.name);
    rounds.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t1).count());
  }
  out->warm.push_back(Median(rounds));
  // stream: one long chunked answer.
  auto t2 = Clock::now();
  uint64_t bytes = 0;
  if (!s->WriteAll(Get("/stream/" + std::to_string(stream_mib))) ||
      !ReadResponse(*s, pending, true, &bytes))
    Die(std::string("stream on ") + route.name);
  const double secs = std::chrono::duration<double>(Clock::now() - t2).count();
  out->stream.push_back(static_cast<double>(bytes) / (1024.0 * 1024.0) / secs);
}

// The medians per route and the median of the per-sample ratios.
void PrintResults(const Samples (&of)[2], int samples, int warm_rounds, int stream_mib) {
  auto ratio = [](const std::vector<double>& tls, const std::vector<double>& broker) {
    std::vector<double> v;
    for (size_t i = 0; i < tls.size(); ++i) v.push_back(broker[i] / tls[i]);
    return Median(v);
  };
  std::printf(
      "broker_bench: %d samples, interleaved; warm = median of %d requests; stream = %d MiB\n",
      samples, warm_rounds, stream_mib);
  std::printf("%-24s %12s %12s %14s\n", "metric", "tls", "broker", "broker/tls");
  std::printf("%-24s %12.1f %12.1f %14.2f\n", "new request (us)", Median(of[0].fresh),
              Median(of[1].fresh), ratio(of[0].fresh, of[1].fresh));
  std::printf("%-24s %12.1f %12.1f %14.2f\n", "warm request (us)", Median(of[0].warm),
              Median(of[1].warm), ratio(of[0].warm, of[1].warm));
  std::printf("%-24s %12.1f %12.1f %14.2f\n", "stream (MiB/s)", Median(of[0].stream),
              Median(of[1].stream), ratio(of[0].stream, of[1].stream));
}

// The command line: --samples N, --warm-rounds N, --stream-mib N.
struct BenchOptions {
  int samples = 7;
  int warm_rounds = 200;
  int stream_mib = 64;
};

BenchOptions ParseOptions(int argc, char** argv) {
  BenchOptions options;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    int value = std::atoi(argv[i + 1]);
    if (flag == "--samples")
      options.samples = value;
    else if (flag == "--warm-rounds")
      options.warm_rounds = value;
    else if (flag == "--stream-mib")
      options.stream_mib = value;
    else
      Die("unknown flag " + flag);
  }
  return options;
}

int Run(int argc, char** argv) {
  const auto [samples, warm_rounds, stream_mib] = ParseOptions(argc, argv);
  ::signal(SIGPIPE, SIG_IGN);
  auto dir =
      std::filesystem::temp_directory_path() / ("broker_bench." + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string d = dir.string();
  const std::string ca_pem = MakeCertificates(d);

  Server server(d + "/srv.pem", d + "/srv.key");
  auto loop = EventLoop::Create();
  if (!loop) Die("event loop");
  SocketAddress upstream = *SocketAddress::Parse("127.0.0.1:" + std::to_string(server.port()));
  Limits limits;

  uint16_t tls_port = 0;
  uint16_t broker_port = 0;
  // The relays' listeners are non-blocking, as Relay requires.
  int tls_listener = ListenLoopback(&tls_port, true);
  int broker_listener = ListenLoopback(&broker_port, true);
  RelayOptions tls_options{Endpoint::Tcp(upstream),       limits, {},      false,
                           DialPolicy::kAfterClientHello, kHost,  nullptr, {}};
  auto tls_relay =
      Relay::Create(loop->get(), sbx::base::UniqueFd(tls_listener), std::move(tls_options));
  if (!tls_relay) Die("tls relay: " + tls_relay.error().Render());
  auto ctx = MakeBrokerTlsContext(ca_pem);
  if (!ctx) Die(ctx.error().Render());
  auto secret = BrokerSecret::Make("sk-bench-secret");
  if (!secret) Die(secret.error().Render());
  BrokerRoute broker;
  broker.host = kHost;
  broker.header = "x-api-key";
  broker.secret = &*secret;
  broker.tls = ctx->get();
  broker.target = Endpoint::Tcp(upstream);
  broker.limits = limits;
  EventLoop* raw_loop = loop->get();
  RelayOptions broker_options{Endpoint::Tcp(upstream),  limits, {},      false,
                              DialPolicy::kOnFirstByte, kHost,  nullptr, {}};
  broker_options.make_connection = [raw_loop, &broker](sbx::base::UniqueFd fd,
                                                       ConnectionOwner* owner) {
    return std::unique_ptr<RelayedConnection>(
        BrokerConnection::Make(raw_loop, &broker, std::move(fd), owner));
  };
  auto broker_relay =
      Relay::Create(loop->get(), sbx::base::UniqueFd(broker_listener), std::move(broker_options));
  if (!broker_relay) Die("broker relay: " + broker_relay.error().Render());

  // The loop runs in its own thread; it is stopped by a timer it polls.
  std::atomic<bool> stop{false};
  std::thread loop_thread([&] {
    while (!stop) (void)(*loop)->RunOnce(std::chrono::milliseconds(50));
  });

  SSL_CTX* client = SSL_CTX_new(TLS_client_method());
  SSL_CTX_load_verify_locations(client, (d + "/ca.pem").c_str(), nullptr);
  SSL_CTX_set_verify(client, SSL_VERIFY_PEER, nullptr);

  const Route routes[2] = {{"tls", tls_port, true}, {"broker", broker_port, false}};
  Samples samples_of[2];
  for (int k = 0; k < samples; ++k) {
    for (int j = 0; j < 2; ++j) {
      const int r = (k + j) % 2;
      MeasureRoute(routes[r], client, warm_rounds, stream_mib, &samples_of[r]);
    }
  }
  stop = true;
  loop_thread.join();

  PrintResults(samples_of, samples, warm_rounds, stream_mib);
  SSL_CTX_free(client);
  std::filesystem::remove_all(dir);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "broker_bench: %s\n", e.what());
    return 1;
  }
}
