// `run --identity subuid`'s look-up of the caller's subordinate ids: refused with one line
// when the files grant the caller nothing or too few ids, used when they grant enough. The
// outer run's walk of the host directories the inner one trusts: another uid's directory on
// the way is refused, root's are listed, and the list reads back as it was written.
#include "dispatch/identity/subordinate.h"

#include <sys/stat.h>

#include <gtest/gtest.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "dispatch/identity/subordinate_dirs.h"
#include "dispatch/sys/subordinate_env.h"
#include "tests/dispatch/scratch_dir.h"

namespace sbx::dispatch {
namespace {

class CallerSubordinateIdsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const passwd* pw = getpwuid(getuid());
    if (pw == nullptr) GTEST_SKIP() << "this uid has no passwd entry";
    user_ = pw->pw_name;
  }
  // /etc/subuid and /etc/subgid stand-ins holding `uids` and `gids`.
  base::Result<CallerSubordinateIds> Resolve(const std::string& uids, const std::string& gids) {
    std::ofstream(dir_.Sub("subuid")) << uids;
    std::ofstream(dir_.Sub("subgid")) << gids;
    return ResolveCallerSubordinateIds(dir_.Sub("subuid"), dir_.Sub("subgid"));
  }
  ScratchDir dir_;
  std::string user_;
};

TEST_F(CallerSubordinateIdsTest, NoRangeForTheCallerIsOneLine) {
  auto ids = Resolve("someone-else:100000:65536\n", user_ + ":100000:65536\n");
  ASSERT_FALSE(ids);
  const std::string message = ids.error().Render();
  EXPECT_NE(message.find("no subordinate ids"), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

TEST_F(CallerSubordinateIdsTest, TooFewIdsForTheSandboxAreRefused) {
  auto ids = Resolve(user_ + ":100000:65536\n", user_ + ":100000:1000\n");
  ASSERT_FALSE(ids);
  EXPECT_NE(ids.error().Render().find("at least 65534"), std::string::npos) << ids.error().Render();
}

TEST_F(CallerSubordinateIdsTest, TheFirstRangeOfEachIsUsed) {
  auto ids = Resolve(user_ + ":200000:65536\n" + user_ + ":900000:65536\n",
                     std::to_string(getuid()) + ":300000:70000\n");
  if (!ids && ids.error().Render().find("newuidmap") != std::string::npos) {
    GTEST_SKIP() << ids.error().Render();
  }
  ASSERT_TRUE(ids) << ids.error().Render();
  EXPECT_EQ(ids->first_uid, 200000U);
  EXPECT_EQ(ids->first_gid, 300000U);
  EXPECT_EQ(ids->count, 65536U);
  EXPECT_EQ(ids->uid, getuid());
}

TEST(SubordinateHostDirsTest, RootsDirectoriesOnTheWayAreListedAndReadBack) {
  ScratchDir dir;
  DispatchRequest request;
  request.workspace = dir.path();
  request.out = dir.Sub("out");
  // The outer run's caller is never root (root is refused --identity subuid).
  auto listed = CheckSubordinateHostDirs(request, getuid() == 0 ? 1000 : getuid());
  ASSERT_TRUE(listed) << listed.error().Render();
  struct stat root {};
  ASSERT_EQ(stat("/", &root), 0);
  ASSERT_EQ(setenv(kSubordinateRootDirsEnv, listed->c_str(), 1), 0);
  const std::vector<base::DirIdentity> dirs = VouchedHostRootDirs();
  unsetenv(kSubordinateRootDirsEnv);
  EXPECT_TRUE(std::any_of(dirs.begin(), dirs.end(), [&](const base::DirIdentity& d) {
    return d.dev == root.st_dev && d.ino == root.st_ino;
  })) << *listed;
  ASSERT_EQ(setenv(kSubordinateRootDirsEnv, "12.34,x.5", 1), 0);
  EXPECT_TRUE(VouchedHostRootDirs().empty()) << "a malformed list vouches for nothing";
  unsetenv(kSubordinateRootDirsEnv);
}

TEST(SubordinateHostDirsTest, AnotherUidsDirectoryOnTheWayIsOneLine) {
  if (geteuid() != 0) GTEST_SKIP() << "giving a directory to another uid needs root";
  ScratchDir dir;
  ASSERT_EQ(mkdir(dir.Sub("theirs").c_str(), 0755), 0);
  ASSERT_EQ(chown(dir.Sub("theirs").c_str(), 4242, 4242), 0);
  DispatchRequest request;
  request.workspace = dir.Sub("theirs/ws");
  auto listed = CheckSubordinateHostDirs(request, 1000);
  ASSERT_FALSE(listed);
  const std::string message = listed.error().Render();
  EXPECT_NE(message.find("uid 4242"), std::string::npos) << message;
  EXPECT_NE(message.find(dir.Sub("theirs")), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

}  // namespace
}  // namespace sbx::dispatch
