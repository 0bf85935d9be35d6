// The git directory a borrowing clone is written with: branches as origin's, HEAD's branch
// also local, tags as they are, sorted for git's bisection; a detached or unborn HEAD as
// git clone leaves it; anything but SHA-1 left to git clone.
#include "dispatch/git/borrowing_clone.h"

#include <gtest/gtest.h>

#include <string>

namespace sbx::dispatch {
namespace {

const std::string kA(40, 'a');
const std::string kB(40, 'b');
const std::string kC(40, 'c');

TEST(BorrowingCloneTest, BranchesAreOriginsAndHeadsBranchIsLocal) {
  CacheRefs refs{
      .refs = {{kA, "refs/heads/main"}, {kB, "refs/heads/feature/x"}, {kC, "refs/tags/v1"}},
      .head = "ref: refs/heads/main"};
  auto dir = RenderBorrowingGitDir(refs);
  ASSERT_TRUE(dir);
  EXPECT_EQ(dir->head, "ref: refs/heads/main\n");
  EXPECT_EQ(dir->packed_refs, "# pack-refs with: sorted \n" + kA + " refs/heads/main\n" + kB +
                                  " refs/remotes/origin/feature/x\n" + kA +
                                  " refs/remotes/origin/main\n" + kC + " refs/tags/v1\n");
  EXPECT_EQ(dir->origin_head, "ref: refs/remotes/origin/main\n");
  EXPECT_TRUE(dir->checkout);
}

TEST(BorrowingCloneTest, ADetachedHeadStaysDetached) {
  CacheRefs refs{.refs = {{kA, "refs/heads/main"}}, .head = kB};
  auto dir = RenderBorrowingGitDir(refs);
  ASSERT_TRUE(dir);
  EXPECT_EQ(dir->head, kB + "\n");
  EXPECT_FALSE(dir->origin_head);
  EXPECT_EQ(dir->packed_refs, "# pack-refs with: sorted \n" + kA + " refs/remotes/origin/main\n");
  EXPECT_TRUE(dir->checkout);
}

TEST(BorrowingCloneTest, AnUnbornHeadHasNothingToCheckOut) {
  CacheRefs refs{.refs = {{kA, "refs/heads/other"}}, .head = "ref: refs/heads/main"};
  auto dir = RenderBorrowingGitDir(refs);
  ASSERT_TRUE(dir);
  EXPECT_EQ(dir->head, "ref: refs/heads/main\n");
  EXPECT_FALSE(dir->origin_head);
  EXPECT_FALSE(dir->checkout);
  CacheRefs empty{.refs = {}, .head = "ref: refs/heads/main"};
  ASSERT_TRUE(RenderBorrowingGitDir(empty));
  EXPECT_FALSE(RenderBorrowingGitDir(empty)->checkout);
}

TEST(BorrowingCloneTest, Sha256IsLeftToGitClone) {
  const std::string long_id(64, 'a');
  EXPECT_FALSE(RenderBorrowingGitDir(
      {.refs = {{long_id, "refs/heads/main"}}, .head = "ref: refs/heads/main"}));
  EXPECT_FALSE(RenderBorrowingGitDir({.refs = {}, .head = long_id}));
}

}  // namespace
}  // namespace sbx::dispatch
