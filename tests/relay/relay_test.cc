// Relay end to end over loopback and Unix sockets in a temp dir: the supervisor-side shape
// (TCP -> Unix) chained to the host-side shape (Unix -> TCP), plus failure paths.
#include "relay/relay.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "tests/relay/relay_test_util.h"

namespace sbx::relay {
namespace {

using namespace std::chrono_literals;
using testing::RunClients;
using testing::RunLoopUntil;
using testing::RunWithLoop;
using testing::TempDir;
using testing::TestServer;

class RelayTest : public ::testing::Test {
 protected:
  // Every client got its payload back whole, and every relayed connection (both relays of
  // the chain) was recorded as closed with `bytes` each way.
  void ExpectEchoedAndRecorded(const std::vector<std::string>& payloads,
                               const std::vector<std::string>& received, size_t records,
                               uint64_t bytes) {
    ASSERT_EQ(received.size(), payloads.size());
    for (size_t i = 0; i < payloads.size(); ++i) {
      EXPECT_EQ(received[i].size(), payloads[i].size()) << "client " << i;
      EXPECT_EQ(testing::Checksum(received[i]), testing::Checksum(payloads[i])) << "client " << i;
    }
    ASSERT_TRUE(RunLoopUntil(*loop_, [&] { return records_.size() == records; }));
    for (const ConnectionRecord& r : records_) {
      EXPECT_EQ(r.end, EndReason::kClosed) << EndReasonName(r.end);
      EXPECT_EQ(r.bytes_up, bytes);
      EXPECT_EQ(r.bytes_down, bytes);
    }
  }

  void SetUp() override {
    auto loop = EventLoop::Create();
    ASSERT_TRUE(loop);
    loop_ = std::move(*loop);
  }

  std::unique_ptr<Relay> MakeRelay(base::UniqueFd listener, const Endpoint& target,
                                   const Limits& limits = {},
                                   DialPolicy dial = DialPolicy::kOnFirstByte,
                                   const std::string& server_name = "") {
    RelayOptions options{target,
                         limits,
                         [this](const ConnectionRecord& r) { records_.push_back(r); },
                         /*handoff=*/false,
                         dial,
                         server_name,
                         nullptr,
                         {}};
    auto relay = Relay::Create(loop_.get(), std::move(listener), std::move(options));
    EXPECT_TRUE(relay) << relay.error().Render();
    return relay ? std::move(*relay) : nullptr;
  }

  // A TCP relay on an ephemeral loopback port: the supervisor's listener.
  std::unique_ptr<Relay> MakeTcpRelay(const Endpoint& target, const Limits& limits = {}) {
    base::UniqueFd listener = testing::ListenLoopback();
    tcp_address_ = testing::LocalAddress(listener.get());
    return MakeRelay(std::move(listener), target, limits);
  }

  // A Unix relay in the temp dir: the host's route socket.
  std::unique_ptr<Relay> MakeUnixRelay(const Endpoint& target, const Limits& limits = {}) {
    auto endpoint = Endpoint::Unix(dir_.path() + "/route-0.sock");
    EXPECT_TRUE(endpoint);
    unix_path_ = endpoint->unix_path();
    auto listener = endpoint->Listen();
    EXPECT_TRUE(listener) << listener.error().Render();
    return MakeRelay(std::move(*listener), target, limits);
  }

  std::function<base::UniqueFd()> TcpClient() {
    return [address = tcp_address_] { return testing::ConnectTcp(address); };
  }
  std::function<base::UniqueFd()> UnixClient() {
    return [path = unix_path_] { return testing::ConnectUnix(path); };
  }

  TempDir dir_;
  std::unique_ptr<EventLoop> loop_;
  std::vector<ConnectionRecord> records_;
  SocketAddress tcp_address_;
  std::string unix_path_;
};

std::vector<std::string> Payloads(size_t count, size_t size) {
  std::vector<std::string> out;
  for (size_t i = 0; i < count; ++i)
    out.push_back(testing::RandomBytes(size, static_cast<uint32_t>(i + 1)));
  return out;
}

TEST_F(RelayTest, ChainEchoesLargeDataIntactWithHalfCloseBothWays) {
  TestServer upstream;
  // Host side: route-0.sock -> upstream; supervisor side: TCP -> route-0.sock.
  auto host = MakeUnixRelay(Endpoint::Tcp(upstream.address()));
  auto unix_target = Endpoint::Unix(unix_path_);
  ASSERT_TRUE(unix_target);
  auto supervisor = MakeTcpRelay(*unix_target);

  // Each client sends its payload, then shuts down its write side; the echo server sees that
  // EOF only after every byte, echoes, and shuts down in turn; the client reads until EOF.
  std::vector<std::string> payloads = Payloads(3, 8u << 20);
  std::vector<std::string> received;
  RunWithLoop(*loop_, [&] { received = RunClients(TcpClient(), payloads); });
  ExpectEchoedAndRecorded(payloads, received, 6, 8u << 20);
  EXPECT_EQ(host->active_connections(), 0u);
  EXPECT_EQ(supervisor->active_connections(), 0u);
  // SIGPIPE is not ignored here: every byte went through the buffers, none through a pipe.
  EXPECT_EQ(host->stats().spliced_bytes, 0u);
  EXPECT_EQ(supervisor->stats().spliced_bytes, 0u);
}

TEST_F(RelayTest, ChainSplicesBulkWhenSigpipeIsIgnored) {
  // Splice mode is on only when the process ignores SIGPIPE (the supervisor does). Both
  // directions carry bulk, so every Flow of both relays goes through its pipe.
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  struct sigaction saved {};
  ASSERT_EQ(::sigaction(SIGPIPE, &ignore, &saved), 0);
  struct Restore {
    struct sigaction saved;
    ~Restore() { ::sigaction(SIGPIPE, &saved, nullptr); }
  } restore{saved};
  TestServer upstream;
  auto host = MakeUnixRelay(Endpoint::Tcp(upstream.address()));
  auto supervisor = MakeTcpRelay(*Endpoint::Unix(unix_path_));
  std::vector<std::string> payloads = Payloads(4, 6u << 20);
  std::vector<std::string> received;
  RunWithLoop(*loop_, [&] { received = RunClients(TcpClient(), payloads); });
  ExpectEchoedAndRecorded(payloads, received, 8, 6u << 20);
  // splice(2) really carried bytes in both relays, and only as many as were delivered.
  uint64_t delivered = uint64_t{2} * payloads.size() * (6u << 20);  // each way, per relay
  EXPECT_GT(host->stats().spliced_bytes, 0u);
  EXPECT_GT(supervisor->stats().spliced_bytes, 0u);
  EXPECT_LE(host->stats().spliced_bytes, delivered);
  EXPECT_LE(supervisor->stats().spliced_bytes, delivered);
}

TEST_F(RelayTest, TwoHundredConcurrentConnections) {
  // Client, both relays and the server share this process: six fds per connection.
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
  rlimit limit = saved;
  if (limit.rlim_cur < 2048) {
    limit.rlim_cur = std::min<rlim_t>(2048, limit.rlim_max);
    ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &limit), 0);
  }
  if (limit.rlim_cur < 1300) GTEST_SKIP() << "RLIMIT_NOFILE hard limit below 1300";
  struct Restore {
    rlimit saved;
    ~Restore() { ::setrlimit(RLIMIT_NOFILE, &saved); }
  } restore{saved};
  TestServer upstream;
  auto host = MakeUnixRelay(Endpoint::Tcp(upstream.address()));
  auto supervisor = MakeTcpRelay(*Endpoint::Unix(unix_path_));
  std::vector<std::string> payloads = Payloads(200, size_t{48} * 1024);
  std::vector<std::string> received;
  RunWithLoop(*loop_, [&] { received = RunClients(TcpClient(), payloads); });
  for (size_t i = 0; i < payloads.size(); ++i) {
    ASSERT_EQ(received[i], payloads[i]) << "client " << i;
  }
  EXPECT_EQ(upstream.accepted(), 200);
  EXPECT_EQ(supervisor->stats().accepted, 200u);
  EXPECT_EQ(host->stats().shed, 0u);
}

TEST_F(RelayTest, ProbeCostsNoUpstreamConnectionAndNoRecord) {
  TestServer upstream;
  auto host = MakeUnixRelay(Endpoint::Tcp(upstream.address()));
  ASSERT_TRUE(Endpoint::Unix(unix_path_)->Connect(1s));  // closed at once, without a byte
  ASSERT_TRUE(RunLoopUntil(*loop_, [&] { return host->stats().undialed == 1; }));
  EXPECT_EQ(host->active_connections(), 0u);
  EXPECT_EQ(upstream.accepted(), 0);
  EXPECT_TRUE(records_.empty());
  // A real client right after still works and is recorded.
  std::vector<std::string> received;
  RunWithLoop(*loop_, [&] { received = RunClients(UnixClient(), {"ping"}); });
  EXPECT_EQ(received.at(0), "ping");
  EXPECT_EQ(upstream.accepted(), 1);
}

TEST_F(RelayTest, RefusedUpstreamClosesTheClientAndOtherRoutesKeepWorking) {
  TestServer upstream;
  auto refused = MakeUnixRelay(Endpoint::Tcp(testing::UnusedLoopbackAddress()));
  std::string refused_path = unix_path_;
  auto working = MakeTcpRelay(Endpoint::Tcp(upstream.address()));
  std::vector<std::string> from_refused;
  std::vector<std::string> from_working;
  RunWithLoop(*loop_, [&] {
    from_refused = RunClients([&] { return testing::ConnectUnix(refused_path); }, {"a", "b"});
    from_working = RunClients(TcpClient(), {"still here"});
  });
  EXPECT_EQ(from_refused, (std::vector<std::string>{"", ""}));
  EXPECT_EQ(from_working.at(0), "still here");
  ASSERT_TRUE(RunLoopUntil(*loop_, [&] { return records_.size() == 3; }));
  int refusals = 0;
  for (const ConnectionRecord& r : records_) {
    if (r.end == EndReason::kUpstreamRefused) {
      ++refusals;
      EXPECT_EQ(r.err, ECONNREFUSED);
    }
  }
  EXPECT_EQ(refusals, 2);
  EXPECT_EQ(refused->active_connections(), 0u);
}

TEST_F(RelayTest, UpstreamResetIsPassedOnAsAReset) {
  TestServer upstream(TestServer::Mode::kResetAfterRead);
  auto relay = MakeTcpRelay(Endpoint::Tcp(upstream.address()));
  base::UniqueFd client = testing::ConnectTcp(tcp_address_);
  ASSERT_TRUE(client);
  ASSERT_EQ(::send(client.get(), "data", 4, 0), 4);
  ASSERT_TRUE(RunLoopUntil(*loop_, [&] { return records_.size() == 1; }));
  EXPECT_EQ(records_[0].end, EndReason::kReset);
  char buf[16];
  errno = 0;
  EXPECT_EQ(::recv(client.get(), buf, sizeof(buf), 0), -1);
  EXPECT_EQ(errno, ECONNRESET);
}

TEST_F(RelayTest, IdleTimeoutClosesAQuietPair) {
  TestServer upstream;
  Limits limits;
  limits.idle_timeout = 150ms;
  auto relay = MakeTcpRelay(Endpoint::Tcp(upstream.address()), limits);
  base::UniqueFd client = testing::ConnectTcp(tcp_address_);
  ASSERT_TRUE(client);
  ASSERT_EQ(::send(client.get(), "x", 1, 0), 1);
  ASSERT_TRUE(RunLoopUntil(
      *loop_, [&] { return records_.size() == 1; }, 5s));
  EXPECT_EQ(records_[0].end, EndReason::kIdleTimeout);
  char buf[4];
  EXPECT_EQ(::recv(client.get(), buf, sizeof(buf), 0), 1) << "the echo arrived first";
  EXPECT_EQ(::recv(client.get(), buf, sizeof(buf), 0), 0) << "then the close";
}

TEST_F(RelayTest, SilentClientTimesOutWithoutDialling) {
  TestServer upstream;
  Limits limits;
  limits.idle_timeout = 50ms;
  auto relay = MakeTcpRelay(Endpoint::Tcp(upstream.address()), limits);
  base::UniqueFd client = testing::ConnectTcp(tcp_address_);
  ASSERT_TRUE(RunLoopUntil(
      *loop_, [&] { return relay->stats().undialed == 1; }, 5s));
  EXPECT_EQ(upstream.accepted(), 0);
  EXPECT_TRUE(records_.empty());
}

TEST_F(RelayTest, ConnectionsAboveTheLimitAreShedAndRecorded) {
  TestServer upstream;
  Limits limits;
  limits.max_connections = 2;
  auto relay = MakeTcpRelay(Endpoint::Tcp(upstream.address()), limits);
  std::vector<base::UniqueFd> clients;
  for (int i = 0; i < 3; ++i) clients.push_back(testing::ConnectTcp(tcp_address_));
  ASSERT_TRUE(RunLoopUntil(*loop_, [&] { return relay->stats().accepted == 3; }));
  EXPECT_EQ(relay->stats().shed, 1u);
  EXPECT_EQ(relay->active_connections(), 2u);
  ASSERT_EQ(records_.size(), 1u);
  EXPECT_EQ(records_[0].end, EndReason::kLimit);
  char c;
  EXPECT_LE(::recv(clients[2].get(), &c, 1, 0), 0) << "the third client is closed at once";
}

TEST_F(RelayTest, DialThatNeverCompletesTimesOut) {
  // A listener whose accept queue is full drops further SYNs: the dial hangs.
  base::UniqueFd blackhole(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(blackhole.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(blackhole.get(), 0), 0);
  SocketAddress target = testing::LocalAddress(blackhole.get());
  std::vector<base::UniqueFd> fillers;
  for (int i = 0; i < 4; ++i) {
    base::UniqueFd f(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    (void)::connect(f.get(), target.get(), target.size());  // EINPROGRESS: it only fills
    fillers.push_back(std::move(f));
  }
  Limits limits;
  limits.connect_timeout = 200ms;
  auto relay = MakeTcpRelay(Endpoint::Tcp(target), limits);
  base::UniqueFd client = testing::ConnectTcp(tcp_address_);
  ASSERT_EQ(::send(client.get(), "hello", 5, 0), 5);
  ASSERT_TRUE(RunLoopUntil(
      *loop_, [&] { return records_.size() == 1; }, 5s));
  EXPECT_EQ(records_[0].end, EndReason::kUpstreamTimeout);
  EXPECT_EQ(relay->active_connections(), 0u);
}

TEST_F(RelayTest, OutOfFileDescriptorsShedsInsteadOfSpinning) {
  auto relay = MakeTcpRelay(Endpoint::Tcp(testing::UnusedLoopbackAddress()));
  // Accept one connection while fds are plentiful, so the loop has called into the relay
  // before the limit drops. Why: UBSan's vptr check, on the first virtual call for a given
  // dynamic type, probes the vtable's memory through a pipe(2) it opens; with no fd left that
  // probe fails and UBSan reports "member call ... invalid vptr" on a live object (a false
  // positive, not a use-after-free: ASan sees no freed memory). After one checked call the
  // type is cached and no pipe is needed.
  {
    base::UniqueFd warm_up = testing::ConnectTcp(tcp_address_);
    ASSERT_TRUE(RunLoopUntil(*loop_, [&] { return relay->stats().accepted == 1; }));
  }
  ASSERT_TRUE(RunLoopUntil(*loop_, [&] { return relay->active_connections() == 0; }));
  std::vector<base::UniqueFd> clients;
  for (int i = 0; i < 5; ++i) clients.push_back(testing::ConnectTcp(tcp_address_));
  // Lower the soft limit to the lowest free fd number: from here no new fd can be made.
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
  int lowest_free = ::dup(0);
  ASSERT_GE(lowest_free, 0);
  ::close(lowest_free);
  rlimit tight = saved;
  tight.rlim_cur = static_cast<rlim_t>(lowest_free);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &tight), 0);
  int iterations = 0;
  bool done = RunLoopUntil(
      *loop_,
      [&] {
        ++iterations;
        return relay->stats().shed == 5;
      },
      5s);
  ::setrlimit(RLIMIT_NOFILE, &saved);
  ASSERT_TRUE(done);
  EXPECT_LT(iterations, 50) << "the listener must not spin on EMFILE";
  EXPECT_EQ(records_.size(), 5u);
  char c;
  for (auto& client : clients) EXPECT_LE(::recv(client.get(), &c, 1, 0), 0);
  // With fds available again the relay accepts normally (and its reserve is back).
  base::UniqueFd late = testing::ConnectTcp(tcp_address_);
  ASSERT_TRUE(RunLoopUntil(*loop_, [&] { return relay->active_connections() == 1; }));
}

TEST(RelayMemoryTest, PerConnectionStateStaysSmall) {
  // User-space cost of an open connection: this object, one table node and one timer node;
  // the two Flow buffers (Limits::buffer_bytes each) exist only while bytes are in flight.
  RecordProperty("sizeof_connection", static_cast<int>(sizeof(Connection)));
  EXPECT_LE(sizeof(Connection), 512u);
  EXPECT_LE(sizeof(Connection) + 2 * Limits{}.buffer_bytes, 64u * 1024 - 1024);
}

}  // namespace
}  // namespace sbx::relay
