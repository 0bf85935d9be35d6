// Socket handoff (relay/handoff.h): the supervisor's HandoffSender chained to a Relay in
// handoff mode (the host side), and the host side fed hostile messages directly.
#include "relay/handoff.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "relay/handoff_sender.h"
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
    RelayOptions options{Endpoint::Tcp(upstream), limits,
                         [this](const ConnectionRecord& r) { records_.push_back(r); }, true};
    auto relay = Relay::Create(loop_.get(), std::move(*listener), std::move(options));
    ASSERT_TRUE(relay) << relay.error().Render();
    host_ = std::move(*relay);
  }

  // The supervisor side: a TCP listener whose connections are handed over to route-0.sock.
  void StartSender() {
    base::UniqueFd listener = testing::ListenLoopback();
    entry_ = testing::LocalAddress(listener.get());
    auto channel = Endpoint::Unix(route_)->Connect(1s);
    ASSERT_TRUE(channel) << channel.error().Render();
    auto sender = HandoffSender::Create(loop_.get(), std::move(listener), std::move(*channel));
    ASSERT_TRUE(sender) << sender.error().Render();
    sender_ = std::move(*sender);
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
  std::unique_ptr<HandoffSender> sender_;
};

TEST_F(HandoffTest, ChainEchoesWithHalfCloseAndRecordsEachConnectionOnce) {
  TestServer upstream;
  StartHost(upstream.address());
  StartSender();
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
  EXPECT_EQ(sender_->stats().handed_off, 3u);
  EXPECT_EQ(host_->active_connections(), 0u);
}

TEST_F(HandoffTest, ChainSplicesBulkWhenSigpipeIsIgnored) {
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  struct sigaction saved {};
  ASSERT_EQ(::sigaction(SIGPIPE, &ignore, &saved), 0);
  TestServer upstream;
  StartHost(upstream.address());
  StartSender();
  std::vector<std::string> payloads = {testing::RandomBytes(6u << 20, 7),
                                       testing::RandomBytes(6u << 20, 8)};
  std::vector<std::string> received;
  RunWithLoop(*loop_, [&] { received = RunClients(Client(), payloads); });
  ::sigaction(SIGPIPE, &saved, nullptr);
  ASSERT_EQ(received.size(), 2u);
  EXPECT_EQ(testing::Checksum(received[0]), testing::Checksum(payloads[0]));
  EXPECT_EQ(testing::Checksum(received[1]), testing::Checksum(payloads[1]));
}

TEST_F(HandoffTest, ManyConcurrentConnections) {
  TestServer upstream;
  StartHost(upstream.address());
  StartSender();
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
  StartSender();
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
  base::UniqueFd unix_stream(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  auto [client_a, server_a] = TcpPair(listener.get());
  auto [client_b, server_b] = TcpPair(listener.get());
  std::vector<int> many(10, server_a.get());    // past what the receiver makes room for
  SendRaw(channel.get(), {pipe_write.get()});   // not a socket
  SendRaw(channel.get(), {udp.get()});          // not a stream
  SendRaw(channel.get(), {unix_stream.get()});  // not inet
  SendRaw(channel.get(), {listener.get()});     // listening
  SendRaw(channel.get(), {});                   // no fd
  SendRaw(channel.get(), {server_a.get(), server_b.get()});  // two fds
  SendRaw(channel.get(), many);                              // truncated
  ASSERT_TRUE(RunLoopUntil(*loop_, [&] { return host_->stats().refused == 7; }));
  EXPECT_EQ(CountEnd(EndReason::kRefused), 7u);
  EXPECT_EQ(host_->active_connections(), 0u);
  for (const auto& r : records_) {
    EXPECT_NE(r.err, 0);
    EXPECT_FALSE(r.dialed);
  }
  // The pipe's write end is closed on the relay's side: only ours is left.
  pipe_write.reset();
  char c = 0;
  EXPECT_EQ(::read(pipe_read.get(), &c, 1), 0) << "no copy of the pipe kept by the relay";

  // A good socket after all that is still served, and its blocking flag was overridden.
  ASSERT_EQ(::fcntl(server_b.get(), F_GETFL) & O_NONBLOCK, 0);
  SendRaw(channel.get(), {server_b.get()});
  ASSERT_TRUE(RunLoopUntil(*loop_, [&] { return host_->active_connections() == 1; }));
  EXPECT_NE(::fcntl(server_b.get(), F_GETFL) & O_NONBLOCK, 0);
  server_b.reset();
  std::string got;
  RunWithLoop(*loop_, [&] {
    ASSERT_EQ(::send(client_b.get(), "ping", 4, MSG_NOSIGNAL), 4);
    ::shutdown(client_b.get(), SHUT_WR);
    char buf[16];
    ssize_t n;
    while ((n = ::read(client_b.get(), buf, sizeof(buf))) > 0) got.append(buf, size_t(n));
  });
  EXPECT_EQ(got, "ping");
}

TEST_F(HandoffTest, OnlyTheFirstChannelIsTrusted) {
  TestServer upstream;
  StartHost(upstream.address());
  StartSender();  // the supervisor's channel: the first connection
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

TEST_F(HandoffTest, ConnectionsAboveTheLimitAreShedAndRecorded) {
  TestServer upstream;
  Limits limits;
  limits.max_connections = 2;
  StartHost(upstream.address(), limits);
  StartSender();
  std::vector<base::UniqueFd> clients;
  RunWithLoop(*loop_, [&] {
    for (int i = 0; i < 3; ++i) clients.push_back(testing::ConnectTcp(entry_));
  });
  ASSERT_TRUE(RunLoopUntil(*loop_, [&] { return host_->stats().accepted == 3; }));
  EXPECT_EQ(host_->active_connections(), 2u);
  EXPECT_EQ(CountEnd(EndReason::kLimit), 1u);
}

TEST_F(HandoffTest, SenderResetsConnectionsOnceTheHostRelayIsGone) {
  TestServer upstream;
  StartHost(upstream.address());
  StartSender();
  (void)RunLoopUntil(
      *loop_, [] { return false; }, 100ms);  // the host takes the channel
  host_.reset();                             // closes the channel
  ASSERT_TRUE(RunLoopUntil(*loop_, [&] { return !sender_->channel_open(); }));
  std::string got = "unset";
  RunWithLoop(*loop_, [&] {
    base::UniqueFd client = testing::ConnectTcp(entry_);
    char c = 0;
    ssize_t n = ::recv(client.get(), &c, 1, 0);
    got = n < 0 ? std::strerror(errno) : std::to_string(n);
  });
  EXPECT_EQ(got, std::strerror(ECONNRESET));
  EXPECT_EQ(sender_->stats().reset, 1u);
}

TEST(HandoffCheckTest, ChecksEachKind) {
  base::UniqueFd tcp(::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0));
  base::UniqueFd seq(::socket(AF_INET, SOCK_SEQPACKET | SOCK_CLOEXEC, IPPROTO_SCTP));
  base::UniqueFd file(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(tcp && file);
  EXPECT_EQ(CheckHandedOffSocket(tcp.get()), HandoffCheck::kOk);
  EXPECT_NE(::fcntl(tcp.get(), F_GETFL) & O_NONBLOCK, 0);
  EXPECT_EQ(CheckHandedOffSocket(file.get()), HandoffCheck::kNotSocket);
  if (seq) {
    EXPECT_EQ(CheckHandedOffSocket(seq.get()), HandoffCheck::kNotStream);
  }
  EXPECT_EQ(HandoffCheckName(HandoffCheck::kListening), "listening");
  EXPECT_EQ(HandoffCheckErrno(HandoffCheck::kNotInet), EAFNOSUPPORT);
}

}  // namespace
}  // namespace sbx::relay
