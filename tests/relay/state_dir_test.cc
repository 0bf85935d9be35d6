// State directory rules: private base, symlink and foreign owner refused, cleanup.
#include "relay/state_dir.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "tests/relay/relay_test_util.h"

namespace sbx::relay {
namespace {

mode_t ModeOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

TEST(StateDirTest, PerUidBaseIsCreatedPrivate) {
  testing::TempDir root;
  auto base = EnsureUserBaseDir(root.path(), ::geteuid());
  ASSERT_TRUE(base) << base.error().Render();
  EXPECT_EQ(*base, root.path() + "/ateam-sandbox-" + std::to_string(::geteuid()));
  EXPECT_EQ(ModeOf(*base), 0700u);
  EXPECT_TRUE(EnsureUserBaseDir(root.path(), ::geteuid())) << "an existing good base is reused";
}

TEST(StateDirTest, SymlinkedBaseIsRefused) {
  testing::TempDir root;
  testing::TempDir elsewhere;
  ::chmod(elsewhere.path().c_str(), 0700);
  std::string base = root.path() + "/ateam-sandbox-" + std::to_string(::geteuid());
  ASSERT_EQ(::symlink(elsewhere.path().c_str(), base.c_str()), 0);
  auto refused = EnsureUserBaseDir(root.path(), ::geteuid());
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().err(), ELOOP);
}

TEST(StateDirTest, BaseOwnedBySomeoneElseIsRefused) {
  testing::TempDir root;
  std::string base = root.path() + "/ateam-sandbox-" + std::to_string(::geteuid());
  ASSERT_EQ(::mkdir(base.c_str(), 0700), 0);
  // Without root the directory can't be given away; asking for another uid is the same check.
  auto refused = CheckPrivateDir(base, ::geteuid() + 1);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().err(), EPERM);
  EXPECT_NE(refused.error().Render().find("owned by uid"), std::string::npos);
}

TEST(StateDirTest, BaseChownedAwayIsRefusedAsRoot) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to chown a directory to another uid";
  testing::TempDir root;
  std::string base = root.path() + "/ateam-sandbox-0";
  ASSERT_EQ(::mkdir(base.c_str(), 0700), 0);
  ASSERT_EQ(::chown(base.c_str(), 65534, 65534), 0);
  auto refused = EnsureUserBaseDir(root.path(), 0);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().err(), EPERM);
}

TEST(StateDirTest, GroupOrOtherWritableBaseIsRefused) {
  testing::TempDir root;
  std::string base = root.path() + "/ateam-sandbox-" + std::to_string(::geteuid());
  ASSERT_EQ(::mkdir(base.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(base.c_str(), 0770), 0);
  EXPECT_FALSE(EnsureUserBaseDir(root.path(), ::geteuid()));
  ASSERT_EQ(::chmod(base.c_str(), 0703), 0);
  EXPECT_FALSE(EnsureUserBaseDir(root.path(), ::geteuid()));
}

TEST(StateDirTest, DispatchDirIsPrivateAndRemovedWithItsSockets) {
  testing::TempDir root;
  std::string path;
  {
    auto dir = StateDir::Create({"", root.path(), ::geteuid()});
    ASSERT_TRUE(dir) << dir.error().Render();
    path = dir->path();
    EXPECT_EQ(path.rfind(root.path() + "/ateam-sandbox-", 0), 0u) << path;
    EXPECT_EQ(ModeOf(path), 0700u);
    int fd = ::open((path + "/route-0.sock").c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    ::close(fd);
  }
  EXPECT_NE(::access(path.c_str(), F_OK), 0) << "removed at destruction";
}

TEST(StateDirTest, XdgRuntimeDirIsUsedWhenPrivate) {
  testing::TempDir xdg;
  ASSERT_EQ(::chmod(xdg.path().c_str(), 0700), 0);
  auto dir = StateDir::Create({xdg.path(), "/nonexistent", ::geteuid()});
  ASSERT_TRUE(dir) << dir.error().Render();
  EXPECT_EQ(dir->path().rfind(xdg.path() + "/dispatch-", 0), 0u);
  ASSERT_TRUE(dir->Remove());
  // A shared XDG_RUNTIME_DIR is an error, not a reason to go somewhere else.
  ASSERT_EQ(::chmod(xdg.path().c_str(), 0777), 0);
  EXPECT_FALSE(StateDir::Create({xdg.path(), "/tmp", ::geteuid()}));
}

}  // namespace
}  // namespace sbx::relay
