// HostRelay: route sockets in a private state dir, pinned upstreams, the ledger, teardown.
#include "relay/host_relay.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "relay/handoff.h"
#include "relay/state_dir.h"
#include "tests/relay/relay_test_util.h"
#include "tests/relay/tls_samples.h"

namespace sbx::relay {
namespace {

using namespace std::chrono_literals;
using testing::RunClients;
using testing::RunLoopUntil;
using testing::RunWithLoop;
using testing::TempDir;
using testing::TestServer;

std::vector<std::string> ReadLines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// The supervisor's side of one route: a loopback listener handed over on a channel to the
// route socket, both closed right after, as the supervisor does.
class Handoff {
 public:
  explicit Handoff(const std::string& route_socket) {
    base::UniqueFd channel = testing::ConnectUnix(route_socket);
    base::UniqueFd listener = testing::ListenLoopback();
    address_ = testing::LocalAddress(listener.get());
    sent_ = channel && SendSocket(channel.get(), listener.get()).ok();
  }
  // The client end of a new connection, which the host relay accepts and serves.
  [[nodiscard]] base::UniqueFd Connect() const {
    return sent_ ? testing::ConnectTcp(address_) : base::UniqueFd();
  }

 private:
  SocketAddress address_;
  bool sent_ = false;
};

class HostRelayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto loop = EventLoop::Create();
    ASSERT_TRUE(loop);
    loop_ = std::move(*loop);
    auto dir = StateDir::Create({"", root_.path(), ::geteuid()});
    ASSERT_TRUE(dir) << dir.error().Render();
    state_dir_.emplace(std::move(*dir));
    ledger_path_ = root_.path() + "/ledger.jsonl";
  }

  Route MakeRoute(int index, const std::string& host, const SocketAddress& upstream,
                  RouteKind kind = RouteKind::kTcp) {
    Route route;
    route.index = index;
    route.host = host;
    route.kind = kind;
    route.upstream_override = upstream;
    return route;
  }

  base::Result<std::unique_ptr<HostRelay>> Start(std::vector<Route> routes) {
    HostRelayOptions options;
    options.state_dir = state_dir_->path();
    options.routes = std::move(routes);
    options.ledger_path = ledger_path_;
    return HostRelay::Create(loop_.get(), std::move(options));
  }

  TempDir root_;
  std::unique_ptr<EventLoop> loop_;
  std::optional<StateDir> state_dir_;
  std::string ledger_path_;
};

TEST_F(HostRelayTest, RelaysEachRouteToItsOwnUpstreamAndRecordsIt) {
  TestServer api;
  auto host = Start({MakeRoute(0, "api.example.test", api.address()),
                     MakeRoute(1, "down.example.test", testing::UnusedLoopbackAddress())});
  ASSERT_TRUE(host) << host.error().Render();
  const auto& routes = (*host)->routes();
  ASSERT_EQ(routes.size(), 2u);
  EXPECT_EQ(routes[0].socket_path, state_dir_->path() + "/route-0.sock");
  struct stat st {};
  ASSERT_EQ(::stat(routes[0].socket_path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(st.st_uid, ::geteuid());

  // The supervisor's channel to each route is its readiness probe: it dials nothing.
  Handoff route0(routes[0].socket_path);
  Handoff route1(routes[1].socket_path);
  std::vector<std::string> ok;
  std::vector<std::string> down;
  RunWithLoop(*loop_, [&] {
    ok = RunClients([&] { return route0.Connect(); }, {"hello"});
    down = RunClients([&] { return route1.Connect(); }, {"hello"});
  });
  EXPECT_EQ(ok.at(0), "hello");
  EXPECT_EQ(down.at(0), "");
  EXPECT_EQ(api.accepted(), 1) << "the channel did not dial";
  ASSERT_TRUE(RunLoopUntil(*loop_, [&] { return ReadLines(ledger_path_).size() == 2; }));

  std::vector<std::string> lines = ReadLines(ledger_path_);
  const std::string& api_line = Contains(lines[0], "api.example.test") ? lines[0] : lines[1];
  const std::string& down_line = Contains(lines[0], "api.example.test") ? lines[1] : lines[0];
  EXPECT_TRUE(Contains(api_line, "\"route\":0,\"host\":\"api.example.test\",\"upstream\":\"" +
                                     api.address().ToString() + "\""))
      << api_line;
  EXPECT_TRUE(Contains(api_line, "\"bytes_up\":5,\"bytes_down\":5,\"end\":\"closed\"")) << api_line;
  EXPECT_TRUE(Contains(down_line, "\"route\":1,\"host\":\"down.example.test\"")) << down_line;
  EXPECT_TRUE(Contains(down_line, "\"end\":\"upstream-refused\"")) << down_line;
  EXPECT_TRUE((*host)->ledger_status());

  std::string socket0 = routes[0].socket_path;
  host->reset();
  EXPECT_NE(::access(socket0.c_str(), F_OK), 0) << "sockets are unlinked at teardown";
}

TEST_F(HostRelayTest, ConnectAndCloseDialsOnATcpRouteOnly) {
  TestServer tcp_upstream;
  TestServer tls_upstream;
  auto host = Start({MakeRoute(0, "git.example.test", tcp_upstream.address(), RouteKind::kTcp),
                     MakeRoute(1, "api.example.test", tls_upstream.address(), RouteKind::kTls)});
  ASSERT_TRUE(host) << host.error().Render();
  Handoff tcp_route((*host)->routes()[0].socket_path);
  Handoff tls_route((*host)->routes()[1].socket_path);
  (void)tcp_route.Connect();  // closed at once, without a byte
  (void)tls_route.Connect();
  // The tcp route dialled when it accepted (that is what lets a server speak first), so its
  // connect-and-close cost an upstream connection and a ledger line; the tls one neither.
  ASSERT_TRUE(RunLoopUntil(*loop_, [&] { return ReadLines(ledger_path_).size() == 1; }));
  ASSERT_TRUE(RunLoopUntil(*loop_, [&] {
    return (*host)->routes()[0].relay->active_connections() == 0 &&
           (*host)->routes()[1].relay->stats().undialed == 1;
  }));
  EXPECT_EQ(tcp_upstream.accepted(), 1);
  EXPECT_EQ(tls_upstream.accepted(), 0);
  std::vector<std::string> lines = ReadLines(ledger_path_);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(Contains(lines[0], "\"host\":\"git.example.test\"")) << lines[0];
  EXPECT_TRUE(Contains(lines[0], "\"bytes_up\":0,")) << lines[0];
}

TEST_F(HostRelayTest, TlsRouteDialsOnlyForAHelloNamingItsHost) {
  TestServer api;
  auto host = Start({MakeRoute(0, "api.example.test", api.address(), RouteKind::kTls)});
  ASSERT_TRUE(host) << host.error().Render();
  Handoff route0((*host)->routes()[0].socket_path);
  std::string good = testing::tls::OpensslHello();  // names api.example.test
  std::string other = testing::tls::Hello({testing::tls::Sni("other.test")});
  std::vector<std::string> received;
  RunWithLoop(*loop_, [&] {
    received = RunClients([&] { return route0.Connect(); }, {good, other, "GET / HTTP/1.0\r\n"});
  });
  EXPECT_EQ(received.at(0), good) << "the echo server got the hello as it was sent";
  EXPECT_EQ(received.at(1), "");
  EXPECT_EQ(received.at(2), "");
  EXPECT_EQ(api.accepted(), 1);
  ASSERT_TRUE(RunLoopUntil(*loop_, [&] { return ReadLines(ledger_path_).size() == 3; }));
  std::string all;
  for (const std::string& line : ReadLines(ledger_path_)) all += line + "\n";
  EXPECT_TRUE(Contains(all, "\"end\":\"closed\"")) << all;
  EXPECT_TRUE(Contains(all, "\"end\":\"sni-mismatch\",\"sni\":\"other.test\"")) << all;
  EXPECT_TRUE(Contains(all, "\"end\":\"not-tls\"")) << all;
}

TEST_F(HostRelayTest, OpenConnectionAtTeardownIsRecordedAsShutdown) {
  TestServer api;
  auto host = Start({MakeRoute(0, "api.example.test", api.address())});
  ASSERT_TRUE(host) << host.error().Render();
  Handoff route0((*host)->routes()[0].socket_path);
  base::UniqueFd client = route0.Connect();
  ASSERT_EQ(::send(client.get(), "x", 1, 0), 1);
  ASSERT_TRUE(RunLoopUntil(*loop_, [&] { return api.accepted() == 1; }));
  host->reset();
  std::vector<std::string> lines = ReadLines(ledger_path_);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(Contains(lines[0], "\"end\":\"shutdown\"")) << lines[0];
}

TEST_F(HostRelayTest, LoopbackNameWithoutOverrideIsRefusedBeforeAnySocketExists) {
  Route route;
  route.index = 0;
  route.host = "localhost";
  auto host = Start({route});
  ASSERT_FALSE(host);
  EXPECT_TRUE(Contains(host.error().Render(), "loopback")) << host.error().Render();
  EXPECT_NE(::access((state_dir_->path() + "/route-0.sock").c_str(), F_OK), 0);
}

TEST_F(HostRelayTest, DuplicateRouteIndexIsRefused) {
  TestServer api;
  auto host = Start({MakeRoute(0, "a.example.test", api.address()),
                     MakeRoute(0, "b.example.test", api.address())});
  EXPECT_FALSE(host);
}

}  // namespace
}  // namespace sbx::relay
