// Listener handoff (relay/handoff.h): the supervisor's side (a TCP listener sent over the
// route's channel) chained to a Relay in handoff mode (the host side), and the host side fed
// hostile messages directly.
#include "relay/handoff.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "relay/relay.h"
#include "tests/relay/relay_test_util.h"

namespace sbx::relay {
namespace {

using namespace std::chrono_literals;
using testing::RunClients;
using testing::RunLoopUntil;
using testing::RunWithLoop;
using testing::TempDir;
using testing::TestServer;

// Sends one message: one byte with `fds` (none: a bare byte) in one SCM_RIGHTS message.
void SendRaw(int channel, const std::vector<int>& fds) {
  char byte = kHandoffByte;
  iovec iov{&byte, 1};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  std::vector<char> control(CMSG_SPACE(sizeof(int) * fds.size()));
  if (!fds.empty()) {
    msg.msg_control = control.data();
    msg.msg_controllen = control.size();
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    ASSERT_NE(c, nullptr);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  ASSERT_EQ(::sendmsg(channel, &msg, MSG_NOSIGNAL), 1) << std::strerror(errno);
}

// A connected loopback TCP pair: {client end, accepted server end}.
std::pair<base::UniqueFd, base::UniqueFd> TcpPair(int listener) {
  base::UniqueFd client = testing::ConnectTcp(testing::LocalAddress(listener));
  base::UniqueFd server(::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC));
  return {std::move(client), std::move(server)};
}

class HandoffTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto loop = EventLoop::Create();
    ASSERT_TRUE(loop);
    loop_ = std::move(*loop);
    route_ = dir_.path() + "/route-0.sock";
  }

  // The host side: route-0.sock in handoff mode, relaying to `upstream`.
  void StartHost(const SocketAddress& upstream, const Limits& limits = {}) {
    auto listener = Endpoint::Unix(route_)->Listen();
    ASSERT_TRUE(listener) << listener.error().Render();
    RelayOptions options{Endpoint::Tcp(upstream),
                         limits,
                         [this](const ConnectionRecord& r) { records_.push_back(r); },
                         true,
                         DialPolicy::kOnFirstByte,
                         "",
                         nullptr,
                         {}};
    auto relay = Relay::Create(loop_.get(), std::move(*listener), std::move(options));
    ASSERT_TRUE(relay) << relay.error().Render();
    host_ = std::move(*relay);
  }

  // The supervisor side: a TCP listener handed over on route-0.sock; both closed after.
  void HandOverListener() {
    base::UniqueFd listener = testing::ListenLoopback();
    entry_ = testing::LocalAddress(listener.get());
    auto channel = Endpoint::Unix(route_)->Connect(1s);
    ASSERT_TRUE(channel) << channel.error().Render();
    auto sent = SendSocket(channel->get(), listener.get());
    ASSERT_TRUE(sent) << sent.error().Render();
    ASSERT_TRUE(RunLoopUntil(*loop_, [&] { return host_->has_adopted_listener(); }));
  }

  std::function<base::UniqueFd()> Client() {
    return [address = entry_] { return testing::ConnectTcp(address); };
  }

  size_t CountEnd(EndReason end) const {
    size_t n = 0;
    for (const auto& r : records_) n += r.end == end ? 1 : 0;
    return n;
  }

  TempDir dir_;
  std::string route_;
  std::unique_ptr<EventLoop> loop_;
  std::vector<ConnectionRecord> records_;
  SocketAddress entry_;
  std::unique_ptr<Relay> host_;
};

TEST_F(HandoffTest, ChainEchoesWithHalfCloseAndRecordsEachConnectionOnce) {
  TestServer upstream;
  StartHost(upstream.address());
  HandOverListener();
  std::vector<std::string> payloads;
  for (uint32_t i = 0; i < 3; ++i) payloads.push_back(testing::RandomBytes(4u << 20, i + 1));
  std::vector<std::string> received;
  RunWithLoop(*loop_, [&] { received = RunClients(Client(), payloads); });
  ASSERT_EQ(received.size(), payloads.size());
  for (size_t i = 0; i < payloads.size(); ++i) {
    EXPECT_EQ(testing::Checksum(received[i]), testing::Checksum(payloads[i])) << i;
  }
  ASSERT_TRUE(RunLoopUntil(*loop_, [&] { return records_.size() == 3; }));
  for (const auto& r : records_) {
    EXPECT_EQ(r.end, EndReason::kClosed) << EndReasonName(r.end);
    EXPECT_EQ(r.bytes_up, 4u << 20);
    EXPECT_EQ(r.bytes_down, 4u << 20);
  }
  EXPECT_EQ(host_->stats().accepted, 3u);
  EXPECT_EQ(host_->active_connections(), 0u);
}

TEST_F(HandoffTest, ChainSplicesBulkWhenSigpipeIsIgnored) {
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  struct sigaction saved {};
  ASSERT_EQ(::sigaction(SIGPIPE, &ignore, &saved), 0);
  TestServer upstream;
  StartHost(upstream.address());
  HandOverListener();
  std::vector<std::string> payloads = {testing::RandomBytes(6u << 20, 7),
                                       testing::RandomBytes(6u << 20, 8)};
  std::vector<std::string> received;
  RunWithLoop(*loop_, [&] { received = RunClients(Client(), payloads); });
  ::sigaction(SIGPIPE, &saved, nullptr);
  ASSERT_EQ(received.size(), 2u);
  EXPECT_EQ(testing::Checksum(received[0]), testing::Checksum(payloads[0]));
  EXPECT_EQ(testing::Checksum(received[1]), testing::Checksum(payloads[1]));
  // splice(2) really carried bytes (SpliceIn/SpliceOut), not only the copying path.
  ASSERT_TRUE(RunLoopUntil(*loop_, [&] { return records_.size() == 2; }));
  EXPECT_GT(host_->stats().spliced_bytes, 0u);
  EXPECT_LE(host_->stats().spliced_bytes, uint64_t{4} * (6u << 20));
}

TEST_F(HandoffTest, ManyConcurrentConnections) {
  TestServer upstream;
  StartHost(upstream.address());
  HandOverListener();
  std::vector<std::string> payloads;
  for (uint32_t i = 0; i < 100; ++i) payloads.push_back(testing::RandomBytes(3000, i + 1));
  std::vector<std::string> received;
  RunWithLoop(*loop_, [&] { received = RunClients(Client(), payloads); });
  ASSERT_EQ(received.size(), payloads.size());
  for (size_t i = 0; i < payloads.size(); ++i) EXPECT_EQ(received[i], payloads[i]) << i;
  ASSERT_TRUE(RunLoopUntil(*loop_, [&] { return records_.size() == 100; }));
  EXPECT_EQ(CountEnd(EndReason::kClosed), 100u);
}

TEST_F(HandoffTest, ConnectAndCloseCostsNoUpstreamConnectionAndNoRecord) {
  TestServer upstream;
  StartHost(upstream.address());
  HandOverListener();
  RunWithLoop(*loop_, [&] {
    for (int i = 0; i < 3; ++i) testing::ConnectTcp(entry_);  // closed at once
  });
  ASSERT_TRUE(RunLoopUntil(*loop_, [&] { return host_->stats().undialed == 3; }));
  EXPECT_EQ(upstream.accepted(), 0);
  EXPECT_TRUE(records_.empty());
}

TEST_F(HandoffTest, HostileMessagesAreRefusedClosedAndRecorded) {
  TestServer upstream;
  StartHost(upstream.address());
  base::UniqueFd channel = testing::ConnectUnix(route_);  // the first: the trusted one
  base::UniqueFd listener = testing::ListenLoopback();
  int pipe_fds[2];
  ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
  base::UniqueFd pipe_read(pipe_fds[0]);
  base::UniqueFd pipe_write(pipe_fds[1]);
  base::UniqueFd udp(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  base::UniqueFd unix_listener = Endpoint::Unix(dir_.path() + "/other.sock")->Listen().value();
  auto [client_a, server_a] = TcpPair(listener.get());
  std::vector<int> many(10, listener.get());      // past what the receiver makes room for
  SendRaw(channel.get(), {pipe_write.get()});     // not a socket
  SendRaw(channel.get(), {udp.get()});            // not a stream
  SendRaw(channel.get(), {unix_listener.get()});  // not inet
  SendRaw(channel.get(), {server_a.get()});       // a connection, not a listener
  SendRaw(channel.get(), {});                     // no fd
  SendRaw(channel.get(), {listener.get(), listener.get()});  // two fds
  SendRaw(channel.get(), many);                              // truncated
  ASSERT_TRUE(RunLoopUntil(*loop_, [&] { return host_->stats().refused == 7; }));
  EXPECT_EQ(CountEnd(EndReason::kRefused), 7u);
  EXPECT_FALSE(host_->has_adopted_listener());
  for (const auto& r : records_) {
    EXPECT_NE(r.err, 0);
    EXPECT_FALSE(r.dialed);
  }
  // The pipe's write end is closed on the relay's side: only ours is left.
  pipe_write.reset();
  char c = 0;
  EXPECT_EQ(::read(pipe_read.get(), &c, 1), 0) << "no copy of the pipe kept by the relay";

  // A good listener after all that is adopted, its blocking flag overridden, and served.
  ASSERT_EQ(::fcntl(listener.get(), F_SETFL, 0), 0);
  entry_ = testing::LocalAddress(listener.get());
  SendRaw(channel.get(), {listener.get()});
  ASSERT_TRUE(RunLoopUntil(*loop_, [&] { return host_->has_adopted_listener(); }));
  EXPECT_NE(::fcntl(listener.get(), F_GETFL) & O_NONBLOCK, 0);
  listener.reset();
  std::string got;
  RunWithLoop(*loop_, [&] {
    base::UniqueFd client = testing::ConnectTcp(entry_);
    ASSERT_EQ(::send(client.get(), "ping", 4, MSG_NOSIGNAL), 4);
    ::shutdown(client.get(), SHUT_WR);
    char buf[16];
    ssize_t n;
    while ((n = ::read(client.get(), buf, sizeof(buf))) > 0) got.append(buf, size_t(n));
  });
  EXPECT_EQ(got, "ping");
}

TEST_F(HandoffTest, ASecondListenerIsRefusedAndItsConnectionsReset) {
  TestServer upstream;
  StartHost(upstream.address());
  base::UniqueFd channel = testing::ConnectUnix(route_);
  base::UniqueFd first = testing::ListenLoopback();
  base::UniqueFd second = testing::ListenLoopback();
  SocketAddress second_address = testing::LocalAddress(second.get());
  base::UniqueFd queued = testing::ConnectTcp(second_address);  // waits in its backlog
  SendRaw(channel.get(), {first.get()});
  SendRaw(channel.get(), {second.get()});
  second.reset();  // the relay's copy is the last one
  ASSERT_TRUE(RunLoopUntil(*loop_, [&] { return host_->stats().refused == 1; }));
  ASSERT_EQ(records_.size(), 1u);
  EXPECT_EQ(records_[0].err, EEXIST);
  char c = 0;
  EXPECT_EQ(::recv(queued.get(), &c, 1, 0), -1);
  EXPECT_EQ(errno, ECONNRESET);
}

TEST_F(HandoffTest, OnlyTheFirstChannelIsTrusted) {
  TestServer upstream;
  StartHost(upstream.address());
  base::UniqueFd channel = testing::ConnectUnix(route_);  // the supervisor's: the first
  ASSERT_TRUE(channel);
  base::UniqueFd intruder = testing::ConnectUnix(route_);
  ASSERT_TRUE(RunLoopUntil(*loop_, [&] { return host_->stats().refused == 1; }));
  // The intruder's channel was closed unread: its socket never reaches the relay.
  char byte = kHandoffByte;
  (void)::send(intruder.get(), &byte, 1, MSG_NOSIGNAL);
  char c = 0;
  EXPECT_LE(::recv(intruder.get(), &c, 1, 0), 0);
  ASSERT_EQ(records_.size(), 1u);
  EXPECT_EQ(records_[0].end, EndReason::kRefused);
  EXPECT_EQ(records_[0].err, EPERM);
  EXPECT_EQ(host_->stats().accepted, 0u);
}

TEST_F(HandoffTest, TheRouteSocketIsClosedOnceAListenerIsAdopted) {
  TestServer upstream;
  StartHost(upstream.address());
  HandOverListener();
  // Nobody listens on the path any more: refused by the kernel, nothing recorded.
  EXPECT_FALSE(testing::ConnectUnix(route_));
  EXPECT_EQ(errno, ECONNREFUSED);
  ASSERT_TRUE(RunLoopUntil(*loop_, [&] { return true; }));
  EXPECT_TRUE(records_.empty());
  EXPECT_EQ(host_->stats().refused, 0u);
}

TEST_F(HandoffTest, ConnectionsAboveTheLimitAreShedAndRecorded) {
  TestServer upstream;
  Limits limits;
  limits.max_connections = 2;
  StartHost(upstream.address(), limits);
  HandOverListener();
  std::vector<base::UniqueFd> clients;
  RunWithLoop(*loop_, [&] {
    for (int i = 0; i < 3; ++i) clients.push_back(testing::ConnectTcp(entry_));
  });
  ASSERT_TRUE(RunLoopUntil(*loop_, [&] { return host_->stats().accepted == 3; }));
  EXPECT_EQ(host_->active_connections(), 2u);
  EXPECT_EQ(CountEnd(EndReason::kLimit), 1u);
}

TEST_F(HandoffTest, ConnectionsFailFastOnceTheHostRelayIsGone) {
  TestServer upstream;
  StartHost(upstream.address());
  HandOverListener();
  host_.reset();  // its listener was the last reference: the port is closed
  base::UniqueFd client(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  EXPECT_EQ(::connect(client.get(), entry_.get(), entry_.size()), -1);
  EXPECT_EQ(errno, ECONNREFUSED);
}

TEST_F(HandoffTest, TheChannelMayCloseOnceTheListenerIsHandedOver) {
  TestServer upstream;
  StartHost(upstream.address());
  {
    base::UniqueFd listener = testing::ListenLoopback();
    entry_ = testing::LocalAddress(listener.get());
    base::UniqueFd channel = testing::ConnectUnix(route_);
    SendRaw(channel.get(), {listener.get()});
  }  // both closed, as the supervisor does
  ASSERT_TRUE(RunLoopUntil(*loop_, [&] { return host_->has_adopted_listener(); }));
  (void)RunLoopUntil(
      *loop_, [] { return false; }, 50ms);  // the relay sees the channel's EOF
  std::vector<std::string> received;
  RunWithLoop(*loop_, [&] { received = RunClients(Client(), {"hello"}); });
  ASSERT_EQ(received.size(), 1u);
  EXPECT_EQ(received[0], "hello");
}

TEST(HandoffCheckTest, ChecksEachKind) {
  base::UniqueFd listening = testing::ListenLoopback();
  base::UniqueFd unbound(::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0));
  base::UniqueFd seq(::socket(AF_INET, SOCK_SEQPACKET | SOCK_CLOEXEC, IPPROTO_SCTP));
  base::UniqueFd file(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(listening && unbound && file);
  ASSERT_EQ(::fcntl(listening.get(), F_SETFL, 0), 0);
  EXPECT_EQ(CheckHandedOffListener(listening.get()), HandoffCheck::kOk);
  EXPECT_NE(::fcntl(listening.get(), F_GETFL) & O_NONBLOCK, 0);
  EXPECT_EQ(CheckHandedOffListener(unbound.get()), HandoffCheck::kNotListening);
  EXPECT_EQ(CheckHandedOffListener(file.get()), HandoffCheck::kNotSocket);
  if (seq) {
    EXPECT_EQ(CheckHandedOffListener(seq.get()), HandoffCheck::kNotStream);
  }
  EXPECT_EQ(HandoffCheckName(HandoffCheck::kNotListening), "not-listening");
  EXPECT_EQ(HandoffCheckErrno(HandoffCheck::kNotInet), EAFNOSUPPORT);
}

}  // namespace
}  // namespace sbx::relay
