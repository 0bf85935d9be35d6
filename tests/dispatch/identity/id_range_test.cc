// The id range root's dispatches lease from: /etc/subuid-style text, the environment's
// override, and the checks every source must pass.
#include "dispatch/identity/id_range.h"

#include <gtest/gtest.h>

#include <fstream>

#include "tests/dispatch/scratch_dir.h"

namespace sbx::dispatch {
namespace {

TEST(SubordinateRangesTest, FindsTheUserByNameOrUid) {
  const std::string text =
      "# comment\nalice:100000:65536\nateam-sandbox:200000:1000\n999:300000:10\nbroken line\n";
  auto by_name = ParseSubordinateRanges(text, "ateam-sandbox", std::nullopt);
  ASSERT_TRUE(by_name) << by_name.error().Render();
  ASSERT_EQ(by_name->size(), 1U);
  EXPECT_EQ((*by_name)[0].first, 200000U);
  EXPECT_EQ((*by_name)[0].count, 1000U);
  auto by_uid = ParseSubordinateRanges(text, "nobody-here", 999);
  ASSERT_TRUE(by_uid);
  ASSERT_EQ(by_uid->size(), 1U);
  EXPECT_EQ((*by_uid)[0].first, 300000U);
  auto none = ParseSubordinateRanges(text, "bob", std::nullopt);
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
}

TEST(SubordinateRangesTest, AMalformedLineOfTheUserIsRefused) {
  for (const char* text : {"ateam-sandbox:x:10\n", "ateam-sandbox:10:0\n", "ateam-sandbox:-1:10\n",
                           "ateam-sandbox:10:99999999999\n", "ateam-sandbox: 10:5\n"}) {
    auto parsed = ParseSubordinateRanges(text, "ateam-sandbox", std::nullopt);
    ASSERT_FALSE(parsed) << text;
    EXPECT_EQ(parsed.error().Render().find('\n'), std::string::npos);
  }
  // Another user's malformed line is not ours to judge.
  EXPECT_TRUE(ParseSubordinateRanges("alice:x:y\n", "ateam-sandbox", std::nullopt));
}

TEST(IdRangeValueTest, ParsesBothForms) {
  auto same = ParseIdRangeValue("100000:500");
  ASSERT_TRUE(same) << same.error().Render();
  EXPECT_EQ(same->first_uid, 100000U);
  EXPECT_EQ(same->first_gid, 100000U);
  EXPECT_EQ(same->count, 500U);
  auto both = ParseIdRangeValue("100000:200000:7");
  ASSERT_TRUE(both);
  EXPECT_EQ(both->first_gid, 200000U);
  EXPECT_EQ(both->count, 7U);
}

TEST(IdRangeValueTest, RefusesUnusableBlocks) {
  for (const char* value :
       {"", "100000", "a:b", "0:10", "10:0", "4294967290:10", "1:2:3:4", "100000:+5", "1:0:5"}) {
    auto parsed = ParseIdRangeValue(value);
    EXPECT_FALSE(parsed) << value;
    if (!parsed) {
      EXPECT_NE(parsed.error().Render().find("ATEAM_SANDBOX_ID_RANGE"), std::string::npos);
    }
  }
  EXPECT_TRUE(ParseIdRangeValue("4294967290:5"));  // ends at 4294967294
}

TEST(ResolveIdRangeTest, FilesThenBuiltin) {
  ScratchDir s;
  std::ofstream(s.Sub("subuid")) << "alice:100000:65536\nateam-sandbox:300000:65536\n";
  std::ofstream(s.Sub("subgid")) << "ateam-sandbox:400000:1000\n";
  auto range = ResolveIdRange(nullptr, s.Sub("subuid"), s.Sub("subgid"));
  ASSERT_TRUE(range) << range.error().Render();
  EXPECT_EQ(range->first_uid, 300000U);
  EXPECT_EQ(range->first_gid, 400000U);
  EXPECT_EQ(range->count, 1000U) << "the smaller of the two";

  auto builtin = ResolveIdRange(nullptr, s.Sub("none"), s.Sub("none2"));
  ASSERT_TRUE(builtin);
  EXPECT_EQ(builtin->first_uid, kBuiltinFirst);
  EXPECT_EQ(builtin->count, kBuiltinCount);
  EXPECT_EQ(builtin->source, kBuiltinSource);

  auto env = ResolveIdRange("5000:10", s.Sub("subuid"), s.Sub("subgid"));
  ASSERT_TRUE(env);
  EXPECT_EQ(env->first_uid, 5000U);

  std::ofstream(s.Sub("gid-only")) << "alice:1:2\n";
  auto half = ResolveIdRange(nullptr, s.Sub("subuid"), s.Sub("gid-only"));
  ASSERT_FALSE(half) << "a uid range without a gid range is misconfigured";
}

}  // namespace
}  // namespace sbx::dispatch
