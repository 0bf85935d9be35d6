// The source stamp: the same while the source's refs are untouched, another after any ref,
// HEAD or packed-refs change git makes, and none at all while an entry is too new to tell
// a change within its clock tick. Times are given: `now` ten seconds ahead stands for a
// source left alone since it was made.
#include "dispatch/git/source_stamp.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <string>

#include "tests/dispatch/scratch_dir.h"

namespace sbx::dispatch {
namespace {

int Sh(const std::string& script) { return std::system(("set -e; " + script).c_str()); }

struct timespec Later() {
  struct timespec now {};
  ::clock_gettime(CLOCK_REALTIME, &now);
  now.tv_sec += 10;
  return now;
}

class SourceStampTest : public ::testing::Test {
 protected:
  void SetUp() override {
    repo_ = dir_.Sub("repo");
    ASSERT_EQ(Sh("git init -q -b main " + repo_ + " && cd " + repo_ +
                 " && echo one > f && git add f && " + kCommit + " -m one && git tag v1"),
              0);
  }
  std::optional<std::string> Stamp() const { return SourceStampNow(repo_, Later()); }
  int InRepo(const std::string& script) const { return Sh("cd " + repo_ + " && " + script); }

  static constexpr const char* kCommit = "git -c user.name=t -c user.email=t@t commit -q";
  ScratchDir dir_;
  std::string repo_;
};

TEST_F(SourceStampTest, UnchangedRefsKeepTheStamp) {
  auto first = Stamp();
  ASSERT_TRUE(first.has_value());
  EXPECT_NE(first->find("common/refs/heads/main "), std::string::npos) << *first;
  // What git does besides refs: the index, objects, a status.
  ASSERT_EQ(InRepo("echo two > f && git add f && git status --short >/dev/null"), 0);
  EXPECT_EQ(Stamp(), first);
}

TEST_F(SourceStampTest, EveryRefChangeGitMakesChangesIt) {
  auto before = Stamp();
  ASSERT_TRUE(before.has_value());
  const char* steps[] = {
      "echo two > f && git -c user.name=t -c user.email=t@t commit -qam two",  // a branch moves
      "git tag v2",                                                            // a new tag
      "git branch side",                                                       // a new branch
      "git checkout -q side",                                                  // HEAD names another
      "git pack-refs --all",                                                   // packed-refs
      "git update-ref refs/heads/side HEAD~1",                                 // a packed ref moves
      "git checkout -q --detach",                                              // a detached HEAD
      "git config uploadpack.hideRefs refs/tags",                              // the config hides
  };
  for (const char* step : steps) {
    ASSERT_EQ(InRepo(step), 0) << step;
    auto after = Stamp();
    ASSERT_TRUE(after.has_value()) << step;
    EXPECT_NE(*after, *before) << step;
    before = after;
  }
}

TEST_F(SourceStampTest, NoStampWhileAnEntryIsTooNew) {
  struct timespec now {};
  ASSERT_EQ(::clock_gettime(CLOCK_REALTIME, &now), 0);
  EXPECT_FALSE(SourceStampNow(repo_, now).has_value()) << "refs made just now";
  now.tv_sec += kRacySeconds + 1;
  EXPECT_TRUE(SourceStampNow(repo_, now).has_value());
}

TEST_F(SourceStampTest, AWorktreeStampsItsOwnHead) {
  const std::string tree = dir_.Sub("tree");
  ASSERT_EQ(InRepo("git worktree add -q " + tree + " -b other"), 0);
  auto first = SourceStampNow(tree, Later());
  ASSERT_TRUE(first.has_value());
  EXPECT_NE(first->find("/worktrees/"), std::string::npos) << *first;
  ASSERT_EQ(Sh("cd " + tree + " && git checkout -q --detach"), 0);
  auto second = SourceStampNow(tree, Later());
  ASSERT_TRUE(second.has_value());
  EXPECT_NE(*first, *second);
}

TEST_F(SourceStampTest, NoRepositoryNoStamp) {
  EXPECT_FALSE(SourceStampNow(dir_.Sub("missing"), Later()).has_value());
  ASSERT_EQ(Sh("mkdir " + dir_.Sub("plain")), 0);
  EXPECT_FALSE(SourceStampNow(dir_.Sub("plain"), Later()).has_value());
}

TEST_F(SourceStampTest, ASymlinkBelowRefsIsNotFollowed) {
  ASSERT_EQ(InRepo("mkdir -p " + dir_.Sub("elsewhere") + " && ln -s " + dir_.Sub("elsewhere") +
                   " .git/refs/heads/link"),
            0);
  auto first = Stamp();
  ASSERT_TRUE(first.has_value());
  ASSERT_EQ(Sh("touch " + dir_.Sub("elsewhere/x")), 0);
  EXPECT_EQ(Stamp(), first) << "what a link points at is not part of the stamp";
}

TEST_F(SourceStampTest, ReadInAChildRefusesWhatIsTooNew) {
  // The child measures from the real time.
  auto read = ReadSourceStamp(repo_, std::nullopt);
  EXPECT_FALSE(read.has_value()) << "refs made just now are too new";
}

}  // namespace
}  // namespace sbx::dispatch
