// Durations typed for `gc --older-than`, ages and sizes shown by `ls`.
#include "dispatch/request/human_units.h"

#include <gtest/gtest.h>

namespace sbx::dispatch {
namespace {

TEST(ParseDurationSeconds, TakesANumberAndAUnit) {
  EXPECT_EQ(ParseDurationSeconds("90s").value(), 90);
  EXPECT_EQ(ParseDurationSeconds("30m").value(), 30 * 60);
  EXPECT_EQ(ParseDurationSeconds("12h").value(), 12 * 3600);
  EXPECT_EQ(ParseDurationSeconds("7d").value(), 7 * 86400);
  EXPECT_EQ(ParseDurationSeconds("2w").value(), 14 * 86400);
  EXPECT_EQ(ParseDurationSeconds("0s").value(), 0);
}

TEST(ParseDurationSeconds, AddsGroups) {
  EXPECT_EQ(ParseDurationSeconds("1d12h").value(), 36 * 3600);
  EXPECT_EQ(ParseDurationSeconds("1h30m15s").value(), 5415);
}

TEST(ParseDurationSeconds, RefusesWhatIsNotADurationInOneLine) {
  for (const char* bad : {"", "7", "7x", "d", "-1d", "1.5h", "7 d", "7d ", "h7", "7dd"}) {
    auto parsed = ParseDurationSeconds(bad);
    ASSERT_FALSE(parsed) << bad;
    std::string message = parsed.error().Render();
    EXPECT_NE(message.find("--older-than"), std::string::npos) << message;
    EXPECT_NE(message.find("e.g. 30m"), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

TEST(ParseDurationSeconds, RefusesMoreThanACenturyWithoutOverflow) {
  EXPECT_TRUE(ParseDurationSeconds("36500d"));
  for (const char* huge : {"36600d", "99999999999999999999999s", "5300w", "1000000000000000h"}) {
    auto parsed = ParseDurationSeconds(huge);
    ASSERT_FALSE(parsed) << huge;
    EXPECT_NE(parsed.error().Render().find("longer than 100 years"), std::string::npos);
  }
}

TEST(ParseDurationSeconds, NamesTheFlagItWasGiven) {
  auto parsed = ParseDurationSeconds("soon", "--max-age");
  ASSERT_FALSE(parsed);
  EXPECT_NE(parsed.error().Render().find("--max-age soon"), std::string::npos);
}

TEST(FormatAge, CoarseUnits) {
  EXPECT_EQ(FormatAge(0), "0s");
  EXPECT_EQ(FormatAge(59), "59s");
  EXPECT_EQ(FormatAge(60), "1m");
  EXPECT_EQ(FormatAge(3599), "59m");
  EXPECT_EQ(FormatAge(3600), "1h");
  EXPECT_EQ(FormatAge(47 * 3600 + 3599), "47h");
  EXPECT_EQ(FormatAge(48 * 3600), "2d");
  EXPECT_EQ(FormatAge(400 * 86400), "400d");
  EXPECT_EQ(FormatAge(-5), "0s");  // an mtime in the future
}

TEST(FormatSize, AsDuShowsIt) {
  EXPECT_EQ(FormatSize(0), "0");
  EXPECT_EQ(FormatSize(512), "512B");
  EXPECT_EQ(FormatSize(1024), "1.0K");
  EXPECT_EQ(FormatSize(1536), "1.5K");
  EXPECT_EQ(FormatSize(4096), "4.0K");
  EXPECT_EQ(FormatSize(10 * 1024), "10K");
  EXPECT_EQ(FormatSize(160 * 1024), "160K");
  EXPECT_EQ(FormatSize(123456789), "118M");
  EXPECT_EQ(FormatSize(uint64_t{3} << 30), "3.0G");
}

TEST(FormatSize, RoundsUpNeverDown) {
  EXPECT_EQ(FormatSize(1025), "1.1K");
  EXPECT_EQ(FormatSize(10 * 1024 + 1), "11K");
  // Just below the next unit: shown as the next unit, not as "1024K".
  EXPECT_EQ(FormatSize(1024 * 1024 - 1), "1.0M");
}

}  // namespace
}  // namespace sbx::dispatch
