// Durations, sizes and counts as the flags take them; ages and sizes as `ls` shows them.
#include "dispatch/request/human_units.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

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

TEST(ParseDurationSeconds, WantsAUnit) {
  auto parsed = ParseDurationSeconds("7");
  ASSERT_FALSE(parsed);
  EXPECT_EQ(parsed.error().Render(),
            "--older-than takes a duration from 0 to 36500d (e.g. 90s, 30m, 2h, 7d), not '7'");
}

TEST(ParseDurationSeconds, AddsGroups) {
  EXPECT_EQ(ParseDurationSeconds("1d12h").value(), 36 * 3600);
  EXPECT_EQ(ParseDurationSeconds("1h30m15s").value(), 5415);
}

TEST(ParseDuration, ABareNumberIsSecondsAndFractionsCount) {
  EXPECT_EQ(ParseDuration("1800", "--timeout").value(), 1800);
  EXPECT_EQ(ParseDuration("0.5", "--timeout").value(), 0.5);
  EXPECT_EQ(ParseDuration("1.5h", "--timeout").value(), 5400);
  EXPECT_EQ(ParseDuration("2s", "--timeout").value(), 2);
  EXPECT_EQ(ParseDurationSeconds("90.9s").value(), 90);  // whole seconds, rounded down
}

TEST(ParseDuration, RefusesWhatIsNotADurationInOneLine) {
  for (const char* bad : {"",    "7x", "d",   "-1d",  "-5", "+5",  "5.",  ".5",  "7 d",  "7d ",
                          " 7d", "h7", "7dd", "1h30", "7D", "1e3", "nan", "inf", "0x10", "5\n"}) {
    auto parsed = ParseDuration(bad, "--timeout");
    ASSERT_FALSE(parsed) << bad;
    std::string message = parsed.error().Render();
    EXPECT_EQ(message,
              std::string("--timeout takes a duration from 0 to 36500d (e.g. 90s, 30m, 2h, "
                          "7d; a bare number is seconds), not '") +
                  bad + "'");
  }
}

TEST(ParseDuration, ZeroOnlyWhereAllowed) {
  constexpr DurationRange kDeadline{/*zero_allowed=*/false, 365.0 * 86400};
  for (const char* zero : {"0", "0s", "0.0", "0h0m"}) {
    auto parsed = ParseDuration(zero, "--timeout", kDeadline);
    ASSERT_FALSE(parsed) << zero;
    EXPECT_NE(parsed.error().Render().find("--timeout takes a duration above 0 and at most 365d"),
              std::string::npos)
        << parsed.error().Render();
  }
  EXPECT_EQ(ParseDuration("365d", "--timeout", kDeadline).value(), 365.0 * 86400);
  EXPECT_FALSE(ParseDuration("366d", "--timeout", kDeadline));
}

TEST(ParseDuration, RefusesMoreThanTheRangeWithoutOverflow) {
  EXPECT_TRUE(ParseDurationSeconds("36500d"));
  for (const std::string& huge :
       std::vector<std::string>{"36600d", "99999999999999999999999s", "5300w", "1000000000000000h",
                                std::string(400, '9'), std::string(400, '9') + "w",
                                "1" + std::string(400, '0') + ".5"}) {
    auto parsed = ParseDurationSeconds(huge);
    ASSERT_FALSE(parsed) << huge;
    EXPECT_NE(parsed.error().Render().find("from 0 to 36500d"), std::string::npos);
  }
}

TEST(ParseDuration, NamesTheFlagItWasGiven) {
  auto parsed = ParseDurationSeconds("soon", "--max-age");
  ASSERT_FALSE(parsed);
  EXPECT_TRUE(parsed.error().Render().starts_with("--max-age takes a duration"));
}

TEST(ParseSize, TakesBinaryUnitsInEitherCase) {
  EXPECT_EQ(ParseSize("4096", "--x").value(), 4096U);
  EXPECT_EQ(ParseSize("0", "--x").value(), 0U);
  EXPECT_EQ(ParseSize("64k", "--x").value(), 64U << 10);
  EXPECT_EQ(ParseSize("64K", "--x").value(), 64U << 10);
  EXPECT_EQ(ParseSize("512M", "--x").value(), 512U << 20);
  EXPECT_EQ(ParseSize("2g", "--x").value(), uint64_t{2} << 30);
  EXPECT_EQ(ParseSize("2GiB", "--x").value(), uint64_t{2} << 30);
  EXPECT_EQ(ParseSize("2gb", "--x").value(), uint64_t{2} << 30);
  EXPECT_EQ(ParseSize("1t", "--x").value(), uint64_t{1} << 40);
  EXPECT_EQ(ParseSize("1.5g", "--x").value(), uint64_t{3} << 29);
  EXPECT_EQ(ParseSize("0.5k", "--x").value(), 512U);
  EXPECT_EQ(ParseSize("1.0001k", "--x").value(), 1024U);  // rounded down to a byte
}

TEST(ParseSize, RefusesBadSizesAndOverflowInOneLine) {
  for (const char* bad : {"", "g", "-1", "-1g", "2x", "2gg", "2 g", "1.5", "5.g", ".5g", "2kib ",
                          "99999999999999999999", "99999999999999999999t", "16777216t",
                          "18446744073709551615k", "1e9"}) {
    auto size = ParseSize(bad, "--memory");
    ASSERT_FALSE(size) << bad;
    EXPECT_EQ(size.error().Render(),
              std::string("--memory takes a size (e.g. 4096, 64k, 512m, 2g), not '") + bad + "'");
  }
  EXPECT_EQ(ParseSize("18446744073709551615", "--x").value(), UINT64_MAX);
}

TEST(ParseSize, NamesItsRangeInUnits) {
  auto small = ParseSize("1m", "--memory", uint64_t{32} << 20);
  ASSERT_FALSE(small);
  EXPECT_EQ(small.error().Render(),
            "--memory takes a size of at least 32M (e.g. 4096, 64k, 512m, 2g), not '1m'");
  auto zero = ParseSize("0", "--disk", 1U << 20, uint64_t{1} << 40);
  ASSERT_FALSE(zero);
  EXPECT_NE(zero.error().Render().find("from 1M to 1T"), std::string::npos);
  EXPECT_EQ(ParseSize("32M", "--memory", uint64_t{32} << 20).value(), uint64_t{32} << 20);
}

TEST(ParseCount, AShortHumanRange) {
  EXPECT_EQ(ParseCount("16", "--pids", 16, 4194304).value(), 16U);
  EXPECT_EQ(ParseCount("4194304", "--pids", 16, 4194304).value(), 4194304U);
  for (const char* bad : {"0", "15", "4194305", "-1", "", "1.5", "1k", "abc",
                          "99999999999999999999999999999999999999999999999999"}) {
    auto count = ParseCount(bad, "--pids", 16, 4194304);
    ASSERT_FALSE(count) << bad;
    EXPECT_EQ(count.error().Render(),
              std::string("--pids takes a whole number from 16 to 4194304, not '") + bad + "'");
  }
}

TEST(ParsePositiveNumber, AboveZeroAndAtMostTheMaximum) {
  EXPECT_EQ(ParsePositiveNumber("2", "--cpus", 64).value(), 2);
  EXPECT_EQ(ParsePositiveNumber("0.5", "--cpus", 64).value(), 0.5);
  for (const char* bad : {"0", "0.0", "-1", "65", "", "x", "1e3", "inf", "nan"}) {
    auto number = ParsePositiveNumber(bad, "--cpus", 64);
    ASSERT_FALSE(number) << bad;
    EXPECT_EQ(number.error().Render(),
              std::string("--cpus takes a number above 0, at most 64 (e.g. 2 or 0.5), not '") +
                  bad + "'");
  }
}

TEST(FormatExact, AsTheFlagsTakeThem) {
  EXPECT_EQ(FormatSizeExact(uint64_t{32} << 20), "32M");
  EXPECT_EQ(FormatSizeExact(uint64_t{2} << 30), "2G");
  EXPECT_EQ(FormatSizeExact(1536 << 10), "1536K");
  EXPECT_EQ(FormatSizeExact(100), "100");
  EXPECT_EQ(FormatSizeExact(0), "0");
  EXPECT_EQ(FormatDurationExact(90), "90s");
  EXPECT_EQ(FormatDurationExact(1800), "30m");
  EXPECT_EQ(FormatDurationExact(365.0 * 86400), "365d");
  EXPECT_EQ(FormatDurationExact(0.5), "0.5s");
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
