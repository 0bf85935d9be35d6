// The reader of a finished workspace's objects/info/alternates: what `git clone --shared`
// writes is taken, anything else is one escaped line.
#include "dispatch/record/alternates.h"

#include <gtest/gtest.h>

#include <string>

namespace sbx::dispatch {
namespace {

TEST(WorkspaceAlternatesTest, TakesWhatCloneSharedWrites) {
  auto stores = ParseWorkspaceAlternates(
      "# a comment\n\n/var/tmp/ateam-sandbox/caches/fe00-12/objects\n/c/objects");
  ASSERT_TRUE(stores) << stores.error().Render();
  ASSERT_EQ(stores->size(), 2U);
  EXPECT_EQ((*stores)[0].root, "/var/tmp/ateam-sandbox/caches");
  EXPECT_EQ((*stores)[0].name, "fe00-12");
  EXPECT_EQ((*stores)[0].cache(), "/var/tmp/ateam-sandbox/caches/fe00-12");
  EXPECT_EQ((*stores)[1].root, "/");
  EXPECT_EQ((*stores)[1].cache(), "/c");
  EXPECT_TRUE(ParseWorkspaceAlternates("")->empty());
}

TEST(WorkspaceAlternatesTest, RefusesAnythingElseInOneEscapedLine) {
  for (const char* bad :
       {"../cache/objects", "relative/objects", "/a/../b/objects", "/a/./b/objects",
        "/a//b/objects", "/a/b/objects/", "/a/b", "/objects", "/a/.hidden/objects",
        "\"/a/b/objects\"", "/a/b\033[31m/objects", "/a/b\r/objects"}) {
    auto refused = ParseWorkspaceAlternates(std::string("/ok/c/objects\n") + bad + "\n");
    ASSERT_FALSE(refused) << bad;
    const std::string line = refused.error().Render();
    EXPECT_NE(line.find("the workspace borrows objects from"), std::string::npos) << line;
    for (unsigned char c : line) EXPECT_GE(c, 0x20) << bad;
  }
  std::string many;
  for (size_t i = 0; i <= kMaxAlternateStores; ++i)
    many += "/r/c" + std::to_string(i) + "/objects\n";
  EXPECT_FALSE(ParseWorkspaceAlternates(many));
}

}  // namespace
}  // namespace sbx::dispatch
