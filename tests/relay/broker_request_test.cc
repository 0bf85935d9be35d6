// The request side of a broker route: what reaches the upstream for each shape an agent can
// send, and which shapes never do.
#include "relay/broker_request.h"

#include <gtest/gtest.h>

#include <string>

#include "relay/broker_response.h"

namespace sbx::relay {
namespace {

constexpr char kHost[] = "api.example.test";
constexpr char kHeader[] = "x-api-key";
constexpr char kSecret[] = "sk-real-secret";

struct Rewritten {
  BrokerRequestRewriter::State state;
  BrokerRefusal refusal;
  std::string out;
  size_t taken;
};

// Feeds `in` whole (or, `piecewise`, one byte per call) and returns what came out.
Rewritten Rewrite(const std::string& in, bool piecewise = false) {
  BrokerRequestRewriter rewriter(kHost, kHeader, kSecret);
  auto queue = SecretQueue::Make(BrokerRequestRewriter::kHeadRoom + 65536);
  EXPECT_TRUE(queue);
  size_t taken = 0;
  if (piecewise) {
    while (taken < in.size()) {
      size_t n = rewriter.Feed(std::string_view(in).substr(taken, 1), *queue);
      if (n == 0) break;
      taken += n;
    }
  } else {
    taken = rewriter.Feed(in, *queue);
  }
  return {rewriter.state(), rewriter.refusal(), std::string(queue->pending()), taken};
}

using State = BrokerRequestRewriter::State;

TEST(BrokerRequestTest, GetIsWrittenAnewWithTheSecretAndTheRoutesHost) {
  auto r = Rewrite("GET /v1/models?x=1 HTTP/1.1\r\nhost: API.example.test\r\nAccept: */*\r\n\r\n");
  EXPECT_EQ(r.state, State::kComplete);
  EXPECT_EQ(r.out,
            "GET /v1/models?x=1 HTTP/1.1\r\nHost: api.example.test\r\nx-api-key: sk-real-secret\r\n"
            "Accept: */*\r\n\r\n");
}

TEST(BrokerRequestTest, TheAgentsValueOfTheHeaderIsReplaced) {
  auto r = Rewrite(
      "POST /v1/messages HTTP/1.1\r\nHost: api.example.test:80\r\nX-Api-Key: placeholder\r\n"
      "Content-Length: 5\r\n\r\nhello");
  EXPECT_EQ(r.state, State::kComplete);
  EXPECT_EQ(r.out.find("placeholder"), std::string::npos) << r.out;
  EXPECT_EQ(r.out,
            "POST /v1/messages HTTP/1.1\r\nHost: api.example.test\r\nx-api-key: sk-real-secret\r\n"
            "Content-Length: 5\r\n\r\nhello");
}

TEST(BrokerRequestTest, HopByHopHeadersAndTheOnesConnectionNamesAreDropped) {
  auto r = Rewrite(
      "GET / HTTP/1.1\r\nHost: api.example.test\r\nConnection: keep-alive, X-Private\r\n"
      "Keep-Alive: timeout=5\r\nX-Private: 1\r\nTE: trailers\r\nProxy-Authorization: b\r\n"
      "Proxy-Connection: x\r\nTrailer: X\r\nX-Kept: yes\r\n\r\n");
  EXPECT_EQ(r.state, State::kComplete);
  EXPECT_EQ(r.out,
            "GET / HTTP/1.1\r\nHost: api.example.test\r\nx-api-key: sk-real-secret\r\n"
            "X-Kept: yes\r\n\r\n");
}

TEST(BrokerRequestTest, AChunkedBodyIsReframedAndItsTrailersDropped) {
  auto r = Rewrite(
      "POST /u HTTP/1.1\r\nHost: api.example.test\r\nTransfer-Encoding: chunked\r\n\r\n"
      "0005;ext=1\r\nhello\r\n3\r\nabc\r\n0\r\nX-Trailer: t\r\n\r\n");
  EXPECT_EQ(r.state, State::kComplete);
  EXPECT_EQ(r.out,
            "POST /u HTTP/1.1\r\nHost: api.example.test\r\nx-api-key: sk-real-secret\r\n"
            "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n3\r\nabc\r\n0\r\n\r\n");
}

TEST(BrokerRequestTest, OneByteAtATimeGivesTheSameRequest) {
  const std::string in =
      "POST /u HTTP/1.1\r\nHost: api.example.test\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5\r\nhello\r\n0\r\n\r\n";
  auto whole = Rewrite(in);
  auto pieces = Rewrite(in, /*piecewise=*/true);
  EXPECT_EQ(pieces.state, State::kComplete);
  EXPECT_EQ(pieces.taken, in.size());
  // The same head; the body arrives in more, smaller chunks.
  std::string head = whole.out.substr(0, whole.out.find("\r\n\r\n") + 4);
  EXPECT_TRUE(pieces.out.starts_with(head)) << pieces.out;
  EXPECT_TRUE(pieces.out.ends_with("1\r\no\r\n0\r\n\r\n")) << pieces.out;
}

TEST(BrokerRequestTest, ExpectContinueIsPassedOnAndOtherExpectationsRefused) {
  auto ok = Rewrite(
      "POST / HTTP/1.1\r\nHost: api.example.test\r\nExpect: 100-continue\r\n"
      "Content-Length: 0\r\n\r\n");
  EXPECT_EQ(ok.state, State::kComplete);
  EXPECT_NE(ok.out.find("Expect: 100-continue\r\n"), std::string::npos);
  auto bad = Rewrite("GET / HTTP/1.1\r\nHost: api.example.test\r\nExpect: magic\r\n\r\n");
  EXPECT_EQ(bad.refusal, BrokerRefusal::kExpectation);
  EXPECT_EQ(bad.out, "");
}

// Each shape below is refused before a byte of it is written.
struct RefusedCase {
  const char* name;
  std::string request;
  BrokerRefusal refusal;
};

class BrokerRefusedTest : public ::testing::TestWithParam<RefusedCase> {};

TEST_P(BrokerRefusedTest, NothingReachesTheUpstream) {
  for (bool piecewise : {false, true}) {
    auto r = Rewrite(GetParam().request, piecewise);
    EXPECT_EQ(r.state, State::kRefused) << GetParam().name << " piecewise=" << piecewise;
    EXPECT_EQ(r.refusal, GetParam().refusal) << GetParam().name << " piecewise=" << piecewise;
    EXPECT_EQ(r.out, "") << GetParam().name << " piecewise=" << piecewise;
    EXPECT_GT(RefusalStatus(r.refusal), 399);
  }
}

const std::string kBig(20000, 'a');

INSTANTIATE_TEST_SUITE_P(
    Shapes, BrokerRefusedTest,
    ::testing::Values(
        RefusedCase{"other host", "GET / HTTP/1.1\r\nHost: evil.test\r\n\r\n",
                    BrokerRefusal::kWrongHost},
        RefusedCase{"host with another port", "GET / HTTP/1.1\r\nHost: api.example.test:81\r\n\r\n",
                    BrokerRefusal::kWrongHost},
        RefusedCase{"no host", "GET / HTTP/1.1\r\nAccept: x\r\n\r\n", BrokerRefusal::kWrongHost},
        RefusedCase{"two hosts",
                    "GET / HTTP/1.1\r\nHost: api.example.test\r\nHost: api.example.test\r\n\r\n",
                    BrokerRefusal::kWrongHost},
        RefusedCase{"length and chunked",
                    "POST / HTTP/1.1\r\nHost: api.example.test\r\nContent-Length: 4\r\n"
                    "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
                    BrokerRefusal::kMalformed},
        RefusedCase{"chunked then length",
                    "POST / HTTP/1.1\r\nHost: api.example.test\r\nTransfer-Encoding: chunked\r\n"
                    "Content-Length: 4\r\n\r\n0\r\n\r\n",
                    BrokerRefusal::kMalformed},
        RefusedCase{"two lengths",
                    "POST / HTTP/1.1\r\nHost: api.example.test\r\nContent-Length: 1\r\n"
                    "Content-Length: 1\r\n\r\nx",
                    BrokerRefusal::kMalformed},
        RefusedCase{"gzip, chunked",
                    "POST / HTTP/1.1\r\nHost: api.example.test\r\nTransfer-Encoding: gzip, "
                    "chunked\r\n\r\n0\r\n\r\n",
                    BrokerRefusal::kMalformed},
        RefusedCase{"chunked twice",
                    "POST / HTTP/1.1\r\nHost: api.example.test\r\nTransfer-Encoding: chunked\r\n"
                    "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
                    BrokerRefusal::kMalformed},
        RefusedCase{"bad length",
                    "POST / HTTP/1.1\r\nHost: api.example.test\r\nContent-Length: -1\r\n\r\n",
                    BrokerRefusal::kMalformed},
        RefusedCase{"obsolete fold",
                    "GET / HTTP/1.1\r\nHost: api.example.test\r\nX-A: 1\r\n Transfer-Encoding: "
                    "chunked\r\n\r\n",
                    BrokerRefusal::kMalformed},
        RefusedCase{"folded with a tab",
                    "GET / HTTP/1.1\r\nHost: api.example.test\r\nX-A: 1\r\n\tmore\r\n\r\n",
                    BrokerRefusal::kMalformed},
        RefusedCase{"bare LF", "GET / HTTP/1.1\nHost: api.example.test\n\n",
                    BrokerRefusal::kMalformed},
        RefusedCase{"bare CR", "GET / HTTP/1.1\r\nHost: api.example.test\rX: 1\r\n\r\n",
                    BrokerRefusal::kMalformed},
        RefusedCase{"empty line first", "\r\nGET / HTTP/1.1\r\nHost: api.example.test\r\n\r\n",
                    BrokerRefusal::kMalformed},
        RefusedCase{
            "space before colon",
            "GET / HTTP/1.1\r\nHost: api.example.test\r\nTransfer-Encoding : chunked\r\n\r\n",
            BrokerRefusal::kMalformed},
        RefusedCase{"NUL in a value",
                    std::string("GET / HTTP/1.1\r\nHost: api.example.test\r\nX: a") +
                        std::string(1, '\0') + "b\r\n\r\n",
                    BrokerRefusal::kMalformed},
        RefusedCase{"not HTTP", "HELLO\r\n\r\n", BrokerRefusal::kMalformed},
        RefusedCase{"HTTP/1.0", "GET / HTTP/1.0\r\nHost: api.example.test\r\n\r\n",
                    BrokerRefusal::kUnsupported},
        RefusedCase{"absolute form",
                    "GET http://api.example.test/ HTTP/1.1\r\nHost: api.example.test\r\n\r\n",
                    BrokerRefusal::kUnsupported},
        RefusedCase{"CONNECT",
                    "CONNECT api.example.test:443 HTTP/1.1\r\nHost: api.example.test\r\n\r\n",
                    BrokerRefusal::kUnsupported},
        RefusedCase{"upgrade",
                    "GET / HTTP/1.1\r\nHost: api.example.test\r\nConnection: upgrade\r\n"
                    "Upgrade: websocket\r\n\r\n",
                    BrokerRefusal::kUnsupported},
        RefusedCase{"oversized head",
                    "GET / HTTP/1.1\r\nHost: api.example.test\r\nX-Big: " + kBig + "\r\n\r\n",
                    BrokerRefusal::kHeadTooLarge},
        RefusedCase{"endless head", "GET / HTTP/1.1\r\nHost: api.example.test\r\nX-Big: " + kBig,
                    BrokerRefusal::kHeadTooLarge}),
    [](const ::testing::TestParamInfo<RefusedCase>& param_info) {
      std::string name;
      for (const char* c = param_info.param.name; *c != '\0'; ++c) {
        name.push_back(std::isalnum(static_cast<unsigned char>(*c)) ? *c : '_');
      }
      return name;
    });

TEST(BrokerRequestTest, TooManyHeadersAreRefused) {
  std::string in = "GET / HTTP/1.1\r\nHost: api.example.test\r\n";
  for (int i = 0; i < 150; ++i) in += "X-" + std::to_string(i) + ": v\r\n";
  auto r = Rewrite(in + "\r\n");
  EXPECT_EQ(r.refusal, BrokerRefusal::kHeadTooLarge);
  EXPECT_EQ(r.out, "");
}

TEST(BrokerRequestTest, ABadChunkSizeStopsTheBodyWithoutItsEnd) {
  auto r = Rewrite(
      "POST / HTTP/1.1\r\nHost: api.example.test\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5\r\nhello\r\nzz\r\n0\r\n\r\n");
  EXPECT_EQ(r.state, State::kRefused);
  EXPECT_EQ(r.refusal, BrokerRefusal::kBadBody);
  EXPECT_EQ(RefusalStatus(r.refusal), 0);  // the connection closes: no answer after the head
  // What went out can't pass for a whole message: no last chunk.
  EXPECT_FALSE(r.out.ends_with("0\r\n\r\n")) << r.out;
  auto overflow = Rewrite(
      "POST / HTTP/1.1\r\nHost: api.example.test\r\nTransfer-Encoding: chunked\r\n\r\n"
      "fffffffffffffffffff\r\n");
  EXPECT_EQ(overflow.refusal, BrokerRefusal::kBadBody);
}

TEST(BrokerRequestTest, PipelinedRequestsAreTakenOneAtATime) {
  const std::string first = "GET /a HTTP/1.1\r\nHost: api.example.test\r\n\r\n";
  const std::string second = "GET /b HTTP/1.1\r\nHost: api.example.test\r\n\r\n";
  BrokerRequestRewriter rewriter(kHost, kHeader, kSecret);
  auto queue = SecretQueue::Make(BrokerRequestRewriter::kHeadRoom + 4096);
  ASSERT_TRUE(queue);
  std::string in = first + second;
  size_t taken = rewriter.Feed(in, *queue);
  EXPECT_EQ(taken, first.size());
  EXPECT_EQ(rewriter.state(), State::kComplete);
  EXPECT_EQ(rewriter.path(), "/a");
  EXPECT_EQ(rewriter.Feed(std::string_view(in).substr(taken), *queue), 0U);
  queue->Consume(queue->size());
  rewriter.NextMessage();
  EXPECT_EQ(rewriter.Feed(std::string_view(in).substr(taken), *queue), second.size());
  EXPECT_EQ(rewriter.path(), "/b");
  EXPECT_TRUE(queue->pending().starts_with("GET /b HTTP/1.1\r\n"));
}

TEST(BrokerRequestTest, ASmugglingSecondRequestIsCheckedOnItsOwn) {
  const std::string first = "GET /a HTTP/1.1\r\nHost: api.example.test\r\n\r\n";
  const std::string second = "GET /b HTTP/1.1\r\nHost: evil.test\r\n\r\n";
  BrokerRequestRewriter rewriter(kHost, kHeader, kSecret);
  auto queue = SecretQueue::Make(BrokerRequestRewriter::kHeadRoom + 4096);
  ASSERT_TRUE(queue);
  std::string in = first + second;
  size_t taken = rewriter.Feed(in, *queue);
  rewriter.NextMessage();
  const size_t before = queue->size();
  rewriter.Feed(std::string_view(in).substr(taken), *queue);
  EXPECT_EQ(rewriter.refusal(), BrokerRefusal::kWrongHost);
  EXPECT_EQ(queue->size(), before);
}

TEST(BrokerRequestTest, NoHeadIsTakenWithoutRoomForItsRewrite) {
  BrokerRequestRewriter rewriter(kHost, kHeader, kSecret);
  auto queue = SecretQueue::Make(1024);
  ASSERT_TRUE(queue);
  EXPECT_EQ(rewriter.Feed("GET / HTTP/1.1\r\nHost: api.example.test\r\n\r\n", *queue), 0U);
  EXPECT_EQ(rewriter.state(), State::kHead);
}

TEST(BrokerRequestTest, ACloseInsideARequestRefusesIt) {
  BrokerRequestRewriter rewriter(kHost, kHeader, kSecret);
  auto queue = SecretQueue::Make(BrokerRequestRewriter::kHeadRoom);
  ASSERT_TRUE(queue);
  rewriter.Feed("POST / HTTP/1.1\r\nHost: api.example.test\r\nContent-Length: 9\r\n\r\nabc",
                *queue);
  rewriter.FinishInput();
  EXPECT_EQ(rewriter.refusal(), BrokerRefusal::kBadBody);
}

TEST(BrokerResponseTest, InterimResponsesAreNotTheEnd) {
  BrokerResponseWatcher watcher;
  EXPECT_TRUE(watcher.Watch("HTTP/1.1 100 Continue\r\n\r\n"));
  EXPECT_FALSE(watcher.TakeComplete());
  EXPECT_TRUE(watcher.Watch("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\ndata\r\n"));
  EXPECT_FALSE(watcher.TakeComplete());
  EXPECT_TRUE(watcher.Watch("0\r\n\r\n"));
  EXPECT_TRUE(watcher.TakeComplete());
  EXPECT_EQ(watcher.status(), 200);
  EXPECT_TRUE(watcher.keep_alive());
}

TEST(BrokerResponseTest, AHeadResponseHasNoBodyAndAStreamEndsAtTheClose) {
  BrokerResponseWatcher head;
  head.ExpectHeadResponse(true);
  EXPECT_TRUE(head.Watch("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"));
  EXPECT_TRUE(head.TakeComplete());

  BrokerResponseWatcher stream;
  EXPECT_TRUE(
      stream.Watch("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                   "Connection: close\r\n\r\nevent: a\ndata: b\n\n"));
  EXPECT_FALSE(stream.TakeComplete());
  EXPECT_TRUE(stream.WatchEnd());
  EXPECT_TRUE(stream.TakeComplete());
  EXPECT_FALSE(stream.keep_alive());

  BrokerResponseWatcher cut;
  EXPECT_TRUE(cut.Watch("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"));
  EXPECT_FALSE(cut.WatchEnd());
  EXPECT_FALSE(cut.TakeComplete());
}

TEST(BrokerSecretTest, HeaderBreakingValuesAreRefused) {
  EXPECT_TRUE(BrokerSecret::Make("sk-ant-123"));
  EXPECT_TRUE(BrokerSecret::Make("Bearer abc.def"));
  for (std::string bad :
       {std::string(), std::string("a\r\nX: b"), std::string("a\nb"), std::string(" lead"),
        std::string("trail "), std::string("a\0b", 3), std::string(9000, 'a')}) {
    EXPECT_FALSE(BrokerSecret::Make(bad)) << bad;
  }
  auto secret = BrokerSecret::Make("sk-ant-123");
  ASSERT_TRUE(secret);
  EXPECT_EQ(secret->value(), "sk-ant-123");
}

}  // namespace
}  // namespace sbx::relay
