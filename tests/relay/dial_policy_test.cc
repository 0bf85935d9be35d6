// Connection's dial policies, driven step by step: the agent's end is one side of a
// socketpair written from the test's thread, the upstream a loopback listener the test
// accepts from itself, so "was it dialled" is a look at the listener's queue.
//   kAfterClientHello: a tls route (the SNI check).
//   kAtAccept: a tcp route (eager dial, server speaks first).
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <optional>
#include <string>
#include <vector>

#include "relay/connection.h"
#include "tests/relay/relay_test_util.h"
#include "tests/relay/tls_samples.h"

namespace sbx::relay {
namespace {

using namespace std::chrono_literals;
using namespace testing::tls;
using testing::RunLoopUntil;

constexpr char kRouteHost[] = "api.example.test";

// Everything readable on `fd` now (non-blocking); sets `closed` at EOF or a reset.
std::string ReadNow(int fd, bool* closed = nullptr, int* err = nullptr) {
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n > 0) {
      out.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
      if (closed != nullptr) *closed = true;
      if (err != nullptr) *err = n == 0 ? 0 : errno;
    }
    return out;
  }
}

class DialPolicyTest : public ::testing::Test, public ConnectionOwner {
 protected:
  void SetUp() override {
    auto loop = EventLoop::Create();
    ASSERT_TRUE(loop);
    loop_ = std::move(*loop);
    upstream_listener_ = testing::ListenLoopback();
    target_.emplace(Endpoint::Tcp(testing::LocalAddress(upstream_listener_.get())));
  }

  void TearDown() override {
    connection_.reset();  // closes what is still open, outside the loop's callbacks
  }

  void Start(DialPolicy dial, const Endpoint* target = nullptr) {
    int pair[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, pair), 0);
    agent_ = base::UniqueFd(pair[0]);
    ConnectionConfig config{
        loop_.get(), target != nullptr ? target : &*target_, &limits_, this, nullptr, false, dial,
        kRouteHost};
    connection_ = std::make_unique<Connection>(config, base::UniqueFd(pair[1]));
    ASSERT_TRUE(connection_->Start());
  }

  void OnConnectionClosed(RelayedConnection* connection, const ConnectionRecord& record) override {
    records_.push_back(record);
    if (connection == connection_.get()) loop_->DestroyLater(std::move(connection_));
  }

  void Send(std::string_view bytes) {
    ASSERT_EQ(::send(agent_.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(bytes.size()));
  }
  // Lets the loop handle what is pending (one epoll round; the socketpair is instant).
  void Turn() { ASSERT_TRUE(loop_->RunOnce(100ms)); }

  // The relay's upstream connection, once it dialled; empty when nothing dialled (yet).
  base::UniqueFd TakeUpstream() {
    base::UniqueFd fd(::accept4(upstream_listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (fd) upstream_accepts_++;
    return fd;
  }
  base::UniqueFd WaitForUpstream() {
    base::UniqueFd fd;
    RunLoopUntil(*loop_, [&] {
      if (!fd) fd = TakeUpstream();
      return static_cast<bool>(fd);
    });
    return fd;
  }
  // Reads what the upstream got until `size` bytes are there (the loop runs meanwhile).
  std::string UpstreamReceives(int fd, size_t size) {
    std::string got;
    RunLoopUntil(*loop_, [&] {
      got += ReadNow(fd);
      return got.size() >= size;
    });
    return got;
  }
  const ConnectionRecord& WaitForRecord() {
    EXPECT_TRUE(RunLoopUntil(*loop_, [&] { return !records_.empty(); }));
    static const ConnectionRecord kNone;
    return records_.empty() ? kNone : records_.back();
  }
  // The refused connection's end as the agent sees it, and proof that nothing dialled.
  void ExpectRefusedWithoutDial(const ConnectionRecord& record, EndReason end) {
    EXPECT_EQ(record.end, end) << EndReasonName(record.end);
    EXPECT_FALSE(record.dialed);
    EXPECT_TRUE(IsHelloRefusal(record.end));
    EXPECT_FALSE(TakeUpstream()) << "the upstream was dialled";
    bool closed = false;
    ReadNow(agent_.get(), &closed);
    EXPECT_TRUE(closed) << "the agent's connection is still open";
  }

  std::unique_ptr<EventLoop> loop_;
  Limits limits_;
  base::UniqueFd upstream_listener_;
  std::optional<Endpoint> target_;
  base::UniqueFd agent_;
  std::unique_ptr<Connection> connection_;
  std::vector<ConnectionRecord> records_;
  int upstream_accepts_ = 0;
};

TEST_F(DialPolicyTest, HelloOneByteAtATimeDialsOnceWholeAndForwardsTheSameBytes) {
  Start(DialPolicy::kAfterClientHello);
  std::string hello = OpensslHello();
  for (size_t i = 0; i + 1 < hello.size(); ++i) {
    Send(hello.substr(i, 1));
    Turn();
    ASSERT_FALSE(TakeUpstream()) << "dialled after " << i + 1 << " of " << hello.size() << " bytes";
  }
  Send(hello.substr(hello.size() - 1));
  base::UniqueFd upstream = WaitForUpstream();
  ASSERT_TRUE(upstream);
  EXPECT_EQ(UpstreamReceives(upstream.get(), hello.size()), hello);
  // Open now: both ways, like any connection.
  Send("after");
  EXPECT_EQ(UpstreamReceives(upstream.get(), 5), "after");
  ASSERT_EQ(::send(upstream.get(), "reply", 5, 0), 5);
  std::string got;
  ASSERT_TRUE(RunLoopUntil(*loop_, [&] { return (got += ReadNow(agent_.get())).size() >= 5; }));
  EXPECT_EQ(got, "reply");
  EXPECT_TRUE(records_.empty());
}

TEST_F(DialPolicyTest, HelloInTinyRecordsWithEarlyDataBehindIsForwardedWhole) {
  Start(DialPolicy::kAfterClientHello);
  std::string stream =
      Hello({{0x0a0a, ""}, Sni("API.Example.Test."), {43, U8(2) + U16(0x0304)}}, 3) + U8(23) +
      U16(0x0303) + U16(4) + "data";
  Send(stream);
  base::UniqueFd upstream = WaitForUpstream();
  ASSERT_TRUE(upstream);
  EXPECT_EQ(UpstreamReceives(upstream.get(), stream.size()), stream);
}

TEST_F(DialPolicyTest, OtherNameIsRefusedWithoutDialAndRecordsTheName) {
  Start(DialPolicy::kAfterClientHello);
  Send(Hello({Sni("other.test")}));
  const ConnectionRecord& record = WaitForRecord();
  ExpectRefusedWithoutDial(record, EndReason::kSniMismatch);
  EXPECT_EQ(record.sni, "other.test");
  EXPECT_EQ(record.bytes_up, 0u);
}

TEST_F(DialPolicyTest, UnprintableNameIsRecordedAsPlainText) {
  Start(DialPolicy::kAfterClientHello);
  Send(Hello({Sni("a\"b\n\xc3\xa9.test")}));
  const ConnectionRecord& record = WaitForRecord();
  ExpectRefusedWithoutDial(record, EndReason::kSniMismatch);
  EXPECT_EQ(record.sni, "a\"b???.test");
}

TEST_F(DialPolicyTest, HelloWithoutNameIsRefused) {
  Start(DialPolicy::kAfterClientHello);
  Send(Hello({{10, U16(2) + U16(29)}}));
  ExpectRefusedWithoutDial(WaitForRecord(), EndReason::kNoSni);
}

TEST_F(DialPolicyTest, OtherProtocolIsRefusedAtItsFirstByte) {
  Start(DialPolicy::kAfterClientHello);
  Send("G");
  ExpectRefusedWithoutDial(WaitForRecord(), EndReason::kNotTls);
}

TEST_F(DialPolicyTest, MalformedHelloIsRefused) {
  Start(DialPolicy::kAfterClientHello);
  Send(Hello({Sni(kRouteHost), Sni(kRouteHost)}));
  ExpectRefusedWithoutDial(WaitForRecord(), EndReason::kBadHello);
}

TEST_F(DialPolicyTest, HelloCutShortByTheAgentIsRefused) {
  Start(DialPolicy::kAfterClientHello);
  Send(OpensslHello().substr(0, 100));
  ASSERT_EQ(::shutdown(agent_.get(), SHUT_WR), 0);
  ExpectRefusedWithoutDial(WaitForRecord(), EndReason::kBadHello);
}

TEST_F(DialPolicyTest, HelloLargerThanTheBufferIsRefused) {
  limits_.buffer_bytes = 200;
  Start(DialPolicy::kAfterClientHello);
  Send(OpensslHello());
  ExpectRefusedWithoutDial(WaitForRecord(), EndReason::kBadHello);
}

TEST_F(DialPolicyTest, SilenceOnATlsRouteEndsAtTheHelloTimeout) {
  limits_.hello_timeout = 20ms;
  Start(DialPolicy::kAfterClientHello);
  Send(OpensslHello().substr(0, 10));
  ExpectRefusedWithoutDial(WaitForRecord(), EndReason::kHelloTimeout);
}

TEST_F(DialPolicyTest, ConnectAndCloseOnATlsRouteIsAProbe) {
  Start(DialPolicy::kAfterClientHello);
  agent_.reset();
  const ConnectionRecord& record = WaitForRecord();
  EXPECT_EQ(record.end, EndReason::kProbe) << EndReasonName(record.end);
  EXPECT_FALSE(record.dialed);
  EXPECT_FALSE(TakeUpstream());
}

TEST_F(DialPolicyTest, EagerDialLetsTheUpstreamSpeakFirst) {
  Start(DialPolicy::kAtAccept);
  base::UniqueFd upstream = WaitForUpstream();
  ASSERT_TRUE(upstream) << "no dial without a byte from the agent";
  ASSERT_EQ(::send(upstream.get(), "SSH-2.0-test\r\n", 14, 0), 14);
  std::string banner;
  ASSERT_TRUE(RunLoopUntil(*loop_, [&] { return (banner += ReadNow(agent_.get())).size() >= 14; }));
  EXPECT_EQ(banner, "SSH-2.0-test\r\n");
  Send("SSH-2.0-client\r\n");
  EXPECT_EQ(UpstreamReceives(upstream.get(), 16), "SSH-2.0-client\r\n");
  upstream.reset();
  agent_.reset();
  const ConnectionRecord& record = WaitForRecord();
  EXPECT_TRUE(record.dialed);
  EXPECT_EQ(record.bytes_up, 16u);
  EXPECT_EQ(record.bytes_down, 14u);
}

TEST_F(DialPolicyTest, EagerDialToADownUpstreamClosesTheAgentAtOnce) {
  Endpoint down = Endpoint::Tcp(testing::UnusedLoopbackAddress());
  Start(DialPolicy::kAtAccept, &down);
  const ConnectionRecord& record = WaitForRecord();
  EXPECT_EQ(record.end, EndReason::kUpstreamRefused) << EndReasonName(record.end);
  EXPECT_EQ(record.err, ECONNREFUSED);
  EXPECT_TRUE(record.dialed);
  bool closed = false;
  ReadNow(agent_.get(), &closed);
  EXPECT_TRUE(closed);
}

TEST_F(DialPolicyTest, EagerConnectAndCloseCostsOneUpstreamConnectionAndIsRecorded) {
  Start(DialPolicy::kAtAccept);
  agent_.reset();
  base::UniqueFd upstream = WaitForUpstream();
  ASSERT_TRUE(upstream);
  bool closed = false;
  ASSERT_TRUE(RunLoopUntil(*loop_, [&] {
    ReadNow(upstream.get(), &closed);
    return closed;
  }));
  upstream.reset();
  const ConnectionRecord& record = WaitForRecord();
  EXPECT_TRUE(record.dialed);
  EXPECT_EQ(record.bytes_up, 0u);
  EXPECT_EQ(upstream_accepts_, 1);
}

TEST_F(DialPolicyTest, FirstBytePolicyStillWaitsForAByte) {
  Start(DialPolicy::kOnFirstByte);
  Turn();
  EXPECT_FALSE(TakeUpstream());
  Send("x");
  base::UniqueFd upstream = WaitForUpstream();
  ASSERT_TRUE(upstream);
  EXPECT_EQ(UpstreamReceives(upstream.get(), 1), "x");
}

}  // namespace
}  // namespace sbx::relay
