// Cost of BringUpLoopback on the sandbox start-up path: each sample is the first call in a
// fresh process and a fresh user + network namespace, as in a sandbox child. The numbers
// are printed and recorded as test properties; the only assertion is a generous bound that
// catches a pathological regression (a retry loop, a sleep), not normal jitter.
#include <gtest/gtest.h>
#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "netns/loopback.h"
#include "tests/netns/ns_child.h"

namespace sbx::netns {
namespace {

constexpr int kSamples = 25;
constexpr int64_t kGenerousBoundUs = 50'000;

int64_t NowNs() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

std::string TimeOneBringUp() {
  const int64_t t0 = NowNs();
  if (auto entered = testing::EnterUserAndNetNs(false); !entered.empty()) return entered;
  const int64_t t1 = NowNs();
  if (auto failure = BringUpLoopback()) return ToError(*failure).Render();
  const int64_t t2 = NowNs();
  return testing::Note(std::to_string((t1 - t0) / 1000) + " " + std::to_string((t2 - t1) / 1000));
}

TEST(LoopbackTimingTest, BringUpCostInMicroseconds) {
  std::vector<int64_t> unshare_us;
  std::vector<int64_t> bringup_us;
  for (int i = 0; i < kSamples; ++i) {
    auto outcome = testing::RunInChild(TimeOneBringUp);
    if (outcome.skipped()) GTEST_SKIP() << outcome.message;
    ASSERT_TRUE(outcome.passed()) << outcome.message;
    long long u = 0;
    long long b = 0;
    ASSERT_EQ(std::sscanf(outcome.message.c_str(), "%lld %lld", &u, &b), 2) << outcome.message;
    unshare_us.push_back(u);
    bringup_us.push_back(b);
  }
  std::sort(unshare_us.begin(), unshare_us.end());
  std::sort(bringup_us.begin(), bringup_us.end());
  const int64_t median = bringup_us[bringup_us.size() / 2];
  std::printf(
      "BringUpLoopback over %d fresh namespaces: min %lld us, median %lld us, max %lld us"
      " (unshare(NEWUSER|NEWNET) median %lld us)\n",
      kSamples, static_cast<long long>(bringup_us.front()), static_cast<long long>(median),
      static_cast<long long>(bringup_us.back()),
      static_cast<long long>(unshare_us[unshare_us.size() / 2]));
  RecordProperty("bringup_median_us", std::to_string(median));
  RecordProperty("bringup_min_us", std::to_string(bringup_us.front()));
  EXPECT_LT(median, kGenerousBoundUs);
}

}  // namespace
}  // namespace sbx::netns
