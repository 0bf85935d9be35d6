// Whether a cache already has what its source shows (object_cache_current.h): the
// listing of `git ls-remote --symref` read as a fetch into the cache would record it, the
// cache's own packed-refs and HEAD, and their comparison.
#include "dispatch/git/object_cache_current.h"

#include <gtest/gtest.h>

#include <string>

namespace sbx::dispatch {
namespace {

const std::string kA(40, 'a');
const std::string kB(40, 'b');
const std::string kC(40, 'c');

TEST(ObjectCacheCurrentTest, AListingKeepsBranchesTagsAndHead) {
  auto refs = ParseRemoteListing(
      "ref: refs/heads/main\tHEAD\n" + kA + "\tHEAD\n" + kA + "\trefs/heads/main\n" + kB +
      "\trefs/tags/v1\n" + kC + "\trefs/tags/v1^{}\n" + kC + "\trefs/remotes/origin/x\n" + kC +
      "\trefs/pull/1/head\n" + "ref: refs/heads/main\trefs/heads/alias\n" + kA +
      "\trefs/heads/alias\n");
  ASSERT_TRUE(refs);
  EXPECT_EQ(refs->head, "ref: refs/heads/main");
  CacheRefs expected{
      .refs = {{kA, "refs/heads/alias"}, {kA, "refs/heads/main"}, {kB, "refs/tags/v1"}},
      .head = "ref: refs/heads/main"};
  EXPECT_TRUE(SameRefs(*refs, expected));
}

TEST(ObjectCacheCurrentTest, ADetachedHeadIsItsIdAndNoHeadIsEmpty) {
  auto detached = ParseRemoteListing(kB + "\tHEAD\n" + kA + "\trefs/heads/main");
  ASSERT_TRUE(detached);
  EXPECT_EQ(detached->head, kB);
  auto none = ParseRemoteListing(kA + "\trefs/heads/main\n");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->head, "");
  auto empty = ParseRemoteListing("");
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->refs.empty());
}

TEST(ObjectCacheCurrentTest, ALineGitDoesNotPrintIsRefused) {
  for (const std::string& bad :
       {kA + " refs/heads/main\n", std::string("xyz\trefs/heads/main\n"),
        std::string(39, 'a') + "\tHEAD\n", std::string("garbage\n"), kA.substr(0, 20) + "\n"}) {
    EXPECT_FALSE(ParseRemoteListing(bad)) << bad;
  }
}

TEST(ObjectCacheCurrentTest, TheCachesFilesReadBack) {
  auto refs = ParseCacheRefs(
      "# pack-refs with: sorted \n" + kA + " refs/heads/main\n" + kB + " refs/tags/v1\n",
      "ref: refs/heads/main\n");
  ASSERT_TRUE(refs);
  EXPECT_EQ(refs->head, "ref: refs/heads/main");
  ASSERT_EQ(refs->refs.size(), 2U);
  auto detached = ParseCacheRefs("", kC + "\n");
  ASSERT_TRUE(detached);
  EXPECT_EQ(detached->head, kC);
  EXPECT_FALSE(ParseCacheRefs(kA + " refs/remotes/x\n", kC + "\n"));
  EXPECT_FALSE(ParseCacheRefs(kA + "\n", kC + "\n"));
  EXPECT_FALSE(ParseCacheRefs("", "ref: HEAD\n"));
  EXPECT_FALSE(ParseCacheRefs("", kC + "\n" + kC + "\n"));
}

TEST(ObjectCacheCurrentTest, AnyDifferenceIsADifference) {
  CacheRefs cache{.refs = {{kA, "refs/heads/main"}, {kB, "refs/tags/v1"}},
                  .head = "ref: refs/heads/main"};
  CacheRefs same{.refs = {{kB, "refs/tags/v1"}, {kA, "refs/heads/main"}},
                 .head = "ref: refs/heads/main"};
  EXPECT_TRUE(SameRefs(cache, same));
  CacheRefs moved = same;
  moved.refs[1].first = kC;
  EXPECT_FALSE(SameRefs(cache, moved));
  CacheRefs more = same;
  more.refs.emplace_back(kA, "refs/heads/new");
  EXPECT_FALSE(SameRefs(cache, more));
  CacheRefs other_head = same;
  other_head.head = "ref: refs/heads/v1";
  EXPECT_FALSE(SameRefs(cache, other_head));
  CacheRefs detached = same;
  detached.head = kA;
  EXPECT_FALSE(SameRefs(cache, detached));
}

}  // namespace
}  // namespace sbx::dispatch
