#include "base/safe_path.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace sbx::base {
namespace {

// The shared sticky directory the scratch goes in: /tmp when root owns it (some containers
// give it to the overflow uid, which the rules refuse on the way), else /var/tmp.
std::string SharedTmp() {
  struct stat st {};
  return ::stat("/tmp", &st) == 0 && st.st_uid == 0 ? "/tmp" : "/var/tmp";
}

// A private scratch directory below a sticky shared ancestor, like the real roots.
class SafePathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = SharedTmp() + "/safe-path-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  [[nodiscard]] std::string Path(const std::string& rel) const { return dir_ + "/" + rel; }

  std::string dir_;
  uid_t me_ = ::geteuid();
};

TEST_F(SafePathTest, OpensOwnPrivateDirectoryBelowStickyTmp) {
  auto fd = OpenTrustedDir(dir_, me_);
  ASSERT_TRUE(fd) << fd.error().Render();
  auto path = FdPath(fd->get());
  ASSERT_TRUE(path);
  EXPECT_EQ(*path, dir_);
}

TEST_F(SafePathTest, RefusesSharedDirectoryAsTheLastComponent) {
  // /tmp itself is fine on the way, never as the directory we would write in.
  auto tmp = OpenTrustedDir(SharedTmp(), me_);
  ASSERT_FALSE(tmp);
  EXPECT_EQ(tmp.error().err(), EPERM);
  ASSERT_EQ(::chmod(dir_.c_str(), 0770), 0);
  auto fd = OpenTrustedDir(dir_, me_);
  ASSERT_FALSE(fd);
  EXPECT_EQ(fd.error().err(), EPERM);
}

TEST_F(SafePathTest, RefusesSymlinkOnTheWay) {
  ASSERT_EQ(::mkdir(Path("real").c_str(), 0700), 0);
  ASSERT_EQ(::symlink(Path("real").c_str(), Path("link").c_str()), 0);
  auto fd = OpenTrustedDir(Path("link"), me_);
  ASSERT_FALSE(fd);
  EXPECT_EQ(fd.error().err(), ELOOP);
}

TEST_F(SafePathTest, MakeTrustedDirCreatesAndReopens) {
  auto top = OpenTrustedDir(dir_, me_);
  ASSERT_TRUE(top);
  auto made = MakeTrustedDir(top->get(), "a", 0700, me_, Path("a"));
  ASSERT_TRUE(made) << made.error().Render();
  auto again = MakeTrustedDir(top->get(), "a", 0700, me_, Path("a"));
  EXPECT_TRUE(again) << again.error().Render();
}

TEST_F(SafePathTest, MakeTrustedDirRefusesPlantedSymlinkAndSharedDir) {
  auto top = OpenTrustedDir(dir_, me_);
  ASSERT_TRUE(top);
  ASSERT_EQ(::symlink("/etc", Path("planted").c_str()), 0);
  auto link = MakeTrustedDir(top->get(), "planted", 0700, me_, Path("planted"));
  ASSERT_FALSE(link);
  EXPECT_EQ(link.error().err(), ELOOP);
  ASSERT_EQ(::mkdir(Path("open").c_str(), 0700), 0);
  ASSERT_EQ(::chmod(Path("open").c_str(), 0777), 0);
  auto open = MakeTrustedDir(top->get(), "open", 0700, me_, Path("open"));
  ASSERT_FALSE(open);
  EXPECT_EQ(open.error().err(), EPERM);
}

TEST_F(SafePathTest, MakeTrustedDirRefusesAnotherOwner) {
  if (me_ != 0) GTEST_SKIP() << "needs root to create a directory owned by another uid";
  ASSERT_EQ(::mkdir(Path("theirs").c_str(), 0700), 0);
  ASSERT_EQ(::chown(Path("theirs").c_str(), 65534, 65534), 0);
  auto top = OpenTrustedDir(dir_, me_);
  ASSERT_TRUE(top);
  auto made = MakeTrustedDir(top->get(), "theirs", 0700, me_, Path("theirs"));
  ASSERT_FALSE(made);
  EXPECT_EQ(made.error().err(), EPERM);
  // And as an ancestor of a path to open.
  auto opened = OpenTrustedDir(Path("theirs"), me_);
  EXPECT_FALSE(opened);
}

TEST_F(SafePathTest, MakeTrustedDirRefusesRootOwnedForAnotherCaller) {
  if (me_ != 0) GTEST_SKIP() << "needs root to create a directory owned by root";
  auto top = OpenTrustedDir(dir_, me_);
  ASSERT_TRUE(top);
  ASSERT_EQ(::mkdir(Path("rootdir").c_str(), 0755), 0);
  // Root may sit on the way of a user's path, but what the user would write in must be theirs.
  auto made = MakeTrustedDir(top->get(), "rootdir", 0700, 1234, Path("rootdir"));
  ASSERT_FALSE(made);
  EXPECT_EQ(made.error().err(), EPERM);
}

TEST_F(SafePathTest, FreshDirRefusesExisting) {
  auto top = OpenTrustedDir(dir_, me_);
  ASSERT_TRUE(top);
  ASSERT_TRUE(MakeFreshDir(top->get(), "x", 0700, Path("x")));
  auto again = MakeFreshDir(top->get(), "x", 0700, Path("x"));
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().err(), EEXIST);
}

TEST_F(SafePathTest, OpenOrMakeCreatesTheMissingChain) {
  std::string resolved;
  auto fd = OpenOrMakeTrustedDir(Path("one/two/three"), 0700, me_, &resolved);
  ASSERT_TRUE(fd) << fd.error().Render();
  EXPECT_EQ(resolved, Path("one/two/three"));
  struct stat st {};
  ASSERT_EQ(::stat(Path("one/two").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  // Existing now: opened, not remade.
  EXPECT_TRUE(OpenOrMakeTrustedDir(Path("one/two/three"), 0700, me_));
}

TEST_F(SafePathTest, OpenOrMakeRefusesAPlantedLinkItWouldCreate) {
  ASSERT_EQ(::mkdir(Path("base").c_str(), 0700), 0);
  ASSERT_EQ(::chmod(Path("base").c_str(), 01777), 0);
  // A dangling link where a component is still to be made, in a directory others can
  // write: refused, and its target is not created.
  ASSERT_EQ(::symlink(Path("elsewhere").c_str(), Path("base/sub").c_str()), 0);
  auto fd = OpenOrMakeTrustedDir(Path("base/sub/x"), 0700, me_);
  ASSERT_FALSE(fd);
  EXPECT_EQ(fd.error().err(), ELOOP);
  EXPECT_NE(::access(Path("elsewhere").c_str(), F_OK), 0);
}

TEST_F(SafePathTest, OpenOrMakeFollowsOwnLinksButNotLinksInSharedDirectories) {
  ASSERT_EQ(::mkdir(Path("real").c_str(), 0700), 0);
  ASSERT_EQ(::symlink("real", Path("mine").c_str()), 0);
  std::string resolved;
  auto fd = OpenOrMakeTrustedDir(Path("mine/x"), 0700, me_, &resolved);
  ASSERT_TRUE(fd) << fd.error().Render();
  EXPECT_EQ(resolved, Path("real/x"));
  // The same link in a directory others can write (sticky, like /tmp) is refused: anybody
  // could have made it.
  ASSERT_EQ(::mkdir(Path("shared").c_str(), 0700), 0);
  ASSERT_EQ(::chmod(Path("shared").c_str(), 01777), 0);
  ASSERT_EQ(::symlink(Path("real").c_str(), Path("shared/link").c_str()), 0);
  auto refused = OpenOrMakeTrustedDir(Path("shared/link/y"), 0700, me_);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().err(), ELOOP);
  EXPECT_NE(::access(Path("real/y").c_str(), F_OK), 0);
}

TEST_F(SafePathTest, OpenBeneathRefusesEscapes) {
  auto top = OpenTrustedDir(dir_, me_);
  ASSERT_TRUE(top);
  ASSERT_EQ(::symlink("/etc/passwd", Path("passwd").c_str()), 0);
  EXPECT_FALSE(OpenBeneath(top->get(), "passwd", O_RDONLY));
  EXPECT_FALSE(OpenBeneath(top->get(), "../x", O_RDONLY));
  EXPECT_FALSE(OpenBeneath(top->get(), "/etc/passwd", O_RDONLY));
}

TEST_F(SafePathTest, IsDirBelowWalksUpByInode) {
  ASSERT_EQ(::mkdir(Path("a").c_str(), 0700), 0);
  ASSERT_EQ(::mkdir(Path("a/b").c_str(), 0700), 0);
  struct stat top {};
  ASSERT_EQ(::stat(Path("a").c_str(), &top), 0);
  UniqueFd inner(::open(Path("a/b").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  UniqueFd outer(::open(dir_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  auto below = IsDirBelow(inner.get(), top);
  ASSERT_TRUE(below);
  EXPECT_TRUE(*below);
  auto above = IsDirBelow(outer.get(), top);
  ASSERT_TRUE(above);
  EXPECT_FALSE(*above);
}

}  // namespace
}  // namespace sbx::base
