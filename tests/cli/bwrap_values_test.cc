// bwrap's number, capability and environment rules, including its strtol quirks.
#include "cli/bwrap_values.h"

#include <gtest/gtest.h>

namespace sbx::cli::internal {
namespace {

TEST(BwrapValuesTest, FdIsDecimalWholeStringNonNegative) {
  EXPECT_EQ(ParseBwrapFd("0"), 0);
  EXPECT_EQ(ParseBwrapFd("010"), 10);
  EXPECT_EQ(ParseBwrapFd("2147483647"), 2147483647);
  for (const char* bad : {"", "x", "0x5", "3a", "-1", "1.0", "4294967295", "2147483648"}) {
    EXPECT_FALSE(ParseBwrapFd(bad)) << bad;
  }
}

TEST(BwrapValuesTest, FdKeepsStrtolQuirks) {
  EXPECT_EQ(ParseBwrapFd("+3"), 3);
  EXPECT_EQ(ParseBwrapFd(" 3"), 3);
  EXPECT_EQ(ParseBwrapFd("-0"), 0);
  EXPECT_EQ(ParseBwrapFd("4294967299"), 3);   // bwrap stores the long in an int
  EXPECT_EQ(ParseBwrapFd("-4294967296"), 0);  // likewise
  EXPECT_FALSE(ParseBwrapFd("3 "));
}

TEST(BwrapValuesTest, Ids) {
  EXPECT_EQ(ParseBwrapId("1000"), 1000U);
  EXPECT_EQ(ParseBwrapId("4294967296"), 0U);
  EXPECT_FALSE(ParseBwrapId("4294967295"));
  EXPECT_FALSE(ParseBwrapId("abc"));
}

TEST(BwrapValuesTest, Octal) {
  EXPECT_EQ(ParseBwrapOctal("0755"), 0755U);
  EXPECT_EQ(ParseBwrapOctal("755"), 0755U);
  EXPECT_EQ(ParseBwrapOctal("7777"), 07777U);
  EXPECT_EQ(ParseBwrapOctal("-0"), 0U);
  for (const char* bad : {"", "8", "0x7", "10000", "-1", "0755 ", "99999999999999999999999"}) {
    EXPECT_FALSE(ParseBwrapOctal(bad)) << bad;
  }
}

TEST(BwrapValuesTest, Size) {
  EXPECT_EQ(*ParseBwrapSize("1"), 1U);
  EXPECT_EQ(*ParseBwrapSize("0x100000"), 0x100000U);
  EXPECT_EQ(*ParseBwrapSize("0100"), 64U);
  EXPECT_EQ(*ParseBwrapSize("9223372036854775807"), 9223372036854775807U);
  const auto too_big = ParseBwrapSize("9223372036854775808");
  ASSERT_FALSE(too_big);
  EXPECT_EQ(too_big.error().Render(), "--size (for tmpfs) is limited to 9223372036854775807");
  for (const char* bad : {"", "0", "0x0", "-1", "+1", " 1", "1k", "18446744073709551616"}) {
    const auto size = ParseBwrapSize(bad);
    ASSERT_FALSE(size) << bad;
    EXPECT_EQ(size.error().Render(), "--size takes a non-zero number of bytes");
  }
}

TEST(BwrapValuesTest, CapabilityNamesGoThroughLibcap) {
  EXPECT_EQ(*ParseBwrapCap("CAP_SYS_ADMIN"), 21);
  EXPECT_EQ(*ParseBwrapCap("cap_sys_admin"), 21);
  EXPECT_EQ(*ParseBwrapCap("0"), 0);
  EXPECT_EQ(*ParseBwrapCap("63"), 63);
  EXPECT_FALSE(ParseBwrapCap("ALL")->has_value());
  EXPECT_FALSE(ParseBwrapCap("aLl")->has_value());
  for (const char* bad : {"kill", "CAP_FOO", "64", " 5", ""}) {
    const auto cap = ParseBwrapCap(bad);
    ASSERT_FALSE(cap) << bad;
    EXPECT_EQ(cap.error().Render(), std::string("unknown cap: ") + bad);
  }
}

TEST(BwrapValuesTest, SetEnvReplacesFirstOrAppends) {
  std::vector<std::string> env = {"A=1", "AB=2", "A=3", "NOEQUALS"};
  EXPECT_TRUE(SetEnv(env, "A", "x"));
  EXPECT_TRUE(SetEnv(env, "NOEQUALS", "y"));
  EXPECT_EQ(env, (std::vector<std::string>{"A=x", "AB=2", "A=3", "NOEQUALS", "NOEQUALS=y"}));
  EXPECT_FALSE(SetEnv(env, "", "v"));
  EXPECT_FALSE(SetEnv(env, "B=C", "v"));
}

TEST(BwrapValuesTest, UnsetEnvRemovesEveryEntry) {
  std::vector<std::string> env = {"A=1", "AB=2", "A=3", "A"};
  EXPECT_TRUE(UnsetEnv(env, "A"));
  EXPECT_EQ(env, (std::vector<std::string>{"AB=2", "A"}));
  EXPECT_TRUE(UnsetEnv(env, "MISSING"));
  EXPECT_FALSE(UnsetEnv(env, ""));
  EXPECT_FALSE(UnsetEnv(env, "A=1"));
}

TEST(BwrapValuesTest, SplitNulSeparated) {
  using V = std::vector<std::string>;
  EXPECT_EQ(SplitNulSeparated(std::string_view("a\0b\0", 4)), (V{"a", "b"}));
  EXPECT_EQ(SplitNulSeparated(std::string_view("a\0b", 3)), (V{"a", "b"}));
  EXPECT_EQ(SplitNulSeparated(std::string_view("a\0\0", 3)), (V{"a", ""}));
  EXPECT_EQ(SplitNulSeparated(std::string_view("\0", 1)), (V{""}));
  EXPECT_EQ(SplitNulSeparated(""), V{});
}

}  // namespace
}  // namespace sbx::cli::internal
