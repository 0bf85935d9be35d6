// Ledger line format and file behaviour.
#include "relay/ledger.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "relay/ledger_throttle.h"
#include "tests/relay/relay_test_util.h"

namespace sbx::relay {
namespace {

using std::chrono::milliseconds;
using std::chrono::system_clock;

LedgerEntry SampleEntry() {
  LedgerEntry entry;
  entry.route = 2;
  entry.host = "api.example.com";
  entry.upstream = "192.0.2.7:443";
  // 2026-05-04T10:11:12.345Z
  entry.record.start = system_clock::time_point(milliseconds(1777889472345));
  entry.record.duration = milliseconds(1520);
  entry.record.bytes_up = 5120;
  entry.record.bytes_down = 88211;
  entry.record.end = EndReason::kClosed;
  entry.record.dialed = true;
  return entry;
}

TEST(LedgerTest, FormatsRfc3339UtcWithMilliseconds) {
  EXPECT_EQ(FormatRfc3339Utc(system_clock::time_point(milliseconds(0))),
            "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(FormatRfc3339Utc(system_clock::time_point(milliseconds(1777889472345))),
            "2026-05-04T10:11:12.345Z");
}

TEST(LedgerTest, LineFormat) {
  EXPECT_EQ(FormatLedgerLine(SampleEntry()),
            "{\"route\":2,\"host\":\"api.example.com\",\"upstream\":\"192.0.2.7:443\","
            "\"start\":\"2026-05-04T10:11:12.345Z\",\"duration_ms\":1520,\"bytes_up\":5120,"
            "\"bytes_down\":88211,\"end\":\"closed\"}\n");
}

TEST(LedgerTest, ErrorFieldAndEscaping) {
  LedgerEntry entry = SampleEntry();
  entry.host = "we\"ird\\\n";
  entry.record.end = EndReason::kUpstreamRefused;
  entry.record.err = ECONNREFUSED;
  std::string line = FormatLedgerLine(entry);
  EXPECT_NE(line.find("\"host\":\"we\\\"ird\\\\\\n\""), std::string::npos) << line;
  EXPECT_NE(line.find("\"end\":\"upstream-refused\",\"error\":\"Connection refused\"}"),
            std::string::npos)
      << line;
}

TEST(LedgerTest, EveryEndReasonHasAName) {
  for (EndReason r :
       {EndReason::kClosed, EndReason::kProbe, EndReason::kUpstreamRefused,
        EndReason::kUpstreamTimeout, EndReason::kUpstreamUnreachable, EndReason::kUpstreamError,
        EndReason::kReset, EndReason::kIdleTimeout, EndReason::kLimit, EndReason::kShutdown,
        EndReason::kRefused, EndReason::kNotTls, EndReason::kBadHello, EndReason::kNoSni,
        EndReason::kSniMismatch, EndReason::kHelloTimeout}) {
    EXPECT_NE(EndReasonName(r), "unknown");
  }
}

TEST(LedgerTest, SniMismatchNamesWhatWasAskedFor) {
  LedgerEntry entry = SampleEntry();
  entry.record.end = EndReason::kSniMismatch;
  entry.record.dialed = false;
  entry.record.bytes_up = 0;
  entry.record.bytes_down = 0;
  entry.record.sni = "other.test";
  std::string line = FormatLedgerLine(entry);
  EXPECT_NE(line.find("\"bytes_up\":0,\"bytes_down\":0,\"end\":\"sni-mismatch\","
                      "\"sni\":\"other.test\"}"),
            std::string::npos)
      << line;
}

TEST(LedgerTest, AppendsLinesToAPrivateFile) {
  testing::TempDir dir;
  std::string path = dir.path() + "/ledger.jsonl";
  {
    auto ledger = Ledger::Open(path);
    ASSERT_TRUE(ledger);
    ASSERT_TRUE(ledger->Append(SampleEntry()));
  }
  auto again = Ledger::Open(path);  // a second dispatch appends to the same file
  ASSERT_TRUE(again);
  ASSERT_TRUE(again->Append(SampleEntry()));
  std::ifstream in(path);
  std::stringstream content;
  content << in.rdbuf();
  EXPECT_EQ(content.str(), FormatLedgerLine(SampleEntry()) + FormatLedgerLine(SampleEntry()));
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST(LedgerTest, StopsAtItsByteCapWithOneLastLineSayingSo) {
  testing::TempDir dir;
  std::string path = dir.path() + "/ledger.jsonl";
  const size_t line = FormatLedgerLine(SampleEntry()).size();
  {
    auto ledger = Ledger::Open(path, 10 * line + line / 2);
    ASSERT_TRUE(ledger);
    for (int i = 0; i < 100; ++i) ASSERT_TRUE(ledger->Append(SampleEntry()));
  }
  std::ifstream in(path);
  std::string text;
  std::vector<std::string> lines;
  while (std::getline(in, text)) lines.push_back(text);
  ASSERT_EQ(lines.size(), 11u);
  EXPECT_EQ(
      lines.back().find("{\"ledger\":\"capped\",\"bytes_written\":" + std::to_string(10 * line)),
      0u)
      << lines.back();
}

TEST(LedgerTest, RefusesASymlink) {
  testing::TempDir dir;
  std::string path = dir.path() + "/ledger.jsonl";
  ASSERT_EQ(::symlink("/tmp/elsewhere", path.c_str()), 0);
  auto ledger = Ledger::Open(path);
  ASSERT_FALSE(ledger);
  EXPECT_EQ(ledger.error().err(), ELOOP);
}

}  // namespace
}  // namespace sbx::relay

namespace sbx::relay {
namespace {

LedgerEntry Refused(std::chrono::system_clock::time_point at, int route = 0) {
  LedgerEntry entry{route, "api.example.com", "192.0.2.7:443", {}};
  entry.record.start = at;
  entry.record.end = EndReason::kRefused;
  entry.record.err = EPERM;
  return entry;
}

TEST(LedgerThrottleTest, DialedConnectionsHaveABurstOfTheirOwnThenASummaryWithTheirBytes) {
  LedgerThrottle throttle;
  auto t = std::chrono::system_clock::time_point{} + std::chrono::hours(1);
  size_t lines = 0;
  for (int i = 0; i < 1000; ++i) {
    LedgerEntry entry = Refused(t);
    entry.record.dialed = true;
    entry.record.end = EndReason::kClosed;
    entry.record.bytes_up = 3;
    entry.record.bytes_down = 5;
    lines += throttle.Admit(entry).size();
  }
  EXPECT_EQ(lines, static_cast<size_t>(LedgerThrottle::kDialedBurst));
  auto summary = throttle.Flush();
  ASSERT_EQ(summary.size(), 1u);
  const long long held = 1000 - LedgerThrottle::kDialedBurst;
  EXPECT_EQ(summary[0].count, held);
  EXPECT_EQ(summary[0].record.bytes_up, static_cast<uint64_t>(3 * held));
  EXPECT_EQ(summary[0].record.bytes_down, static_cast<uint64_t>(5 * held));
}

TEST(LedgerThrottleTest, AFloodOfRefusalsBecomesABurstAndOneSummary) {
  LedgerThrottle throttle;
  auto t = std::chrono::system_clock::time_point{} + std::chrono::hours(1);
  size_t lines = 0;
  for (int i = 0; i < 10000; ++i) lines += throttle.Admit(Refused(t)).size();
  EXPECT_EQ(lines, static_cast<size_t>(LedgerThrottle::kBurst));
  auto summary = throttle.Flush();
  ASSERT_EQ(summary.size(), 1u);
  EXPECT_EQ(summary[0].count, 10000 - LedgerThrottle::kBurst);
  std::string line = FormatLedgerLine(summary[0]);
  EXPECT_NE(line.find("\"count\":9992"), std::string::npos) << line;
  EXPECT_NE(line.find("\"end\":\"refused\""), std::string::npos) << line;
}

TEST(LedgerThrottleTest, ANewWindowWritesTheHeldSummaryFirst) {
  LedgerThrottle throttle;
  auto t = std::chrono::system_clock::time_point{} + std::chrono::hours(1);
  for (int i = 0; i < LedgerThrottle::kBurst + 5; ++i) (void)throttle.Admit(Refused(t));
  auto next = throttle.Admit(Refused(t + std::chrono::seconds(2)));
  ASSERT_EQ(next.size(), 2u);
  EXPECT_EQ(next[0].count, 5);
  EXPECT_EQ(next[1].count, 1);
  // Routes are counted apart.
  EXPECT_EQ(throttle.Admit(Refused(t + std::chrono::seconds(2), 1)).size(), 1u);
  EXPECT_TRUE(throttle.Flush().empty());
}

}  // namespace
}  // namespace sbx::relay

namespace sbx::relay {
namespace {

TEST(LedgerOpenTest, FifoIsRefusedWithoutBlocking) {
  testing::TempDir dir;
  std::string path = dir.path() + "/ledger.fifo";
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  // Nobody reads the FIFO: a blocking open would hang here; O_NONBLOCK fails (ENXIO) or,
  // with a reader, the regular-file check refuses it.
  auto ledger = Ledger::Open(path);
  EXPECT_FALSE(ledger);
}

}  // namespace
}  // namespace sbx::relay
