// The ownership pass that hands a leased identity's tree to the caller: every entry of the
// leased uid changes owner, set-id bits go, symlinks are changed as links, and nothing of
// another owner is entered or changed. Needs root (chown to other uids).
#include "dispatch/identity/ownership_pass.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "base/unique_fd.h"
#include "tests/dispatch/scratch_dir.h"

namespace sbx::dispatch {
namespace {

constexpr uid_t kLeased = 1879000001;
constexpr uid_t kOther = 1879000002;

struct stat Lstat(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st;
}

TEST(OwnershipPassTest, HandsTheLeasedTreeToTheCallerAndNothingElse) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to chown files to other uids";
  ScratchDir s;
  const std::string top = s.Sub("ws");
  ASSERT_EQ(::mkdir(top.c_str(), 0700), 0);
  ASSERT_EQ(::mkdir((top + "/d").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((top + "/others").c_str(), 0755), 0);
  std::ofstream(top + "/d/file") << "x";
  std::ofstream(top + "/d/setid") << "x";
  std::ofstream(top + "/others/theirs") << "x";
  std::ofstream(s.Sub("outside")) << "x";
  ASSERT_EQ(::symlink(s.Sub("outside").c_str(), (top + "/link").c_str()), 0);
  for (const char* p : {"", "/d", "/d/file", "/d/setid"}) {
    ASSERT_EQ(::lchown((top + p).c_str(), kLeased, kLeased), 0);
  }
  ASSERT_EQ(::lchown((top + "/link").c_str(), kLeased, kLeased), 0);
  ASSERT_EQ(::chmod((top + "/d/setid").c_str(), 06755), 0);
  ASSERT_EQ(::chown((top + "/d/setid").c_str(), kLeased, kLeased), 0);
  ASSERT_EQ(::chmod((top + "/d/setid").c_str(), 06755), 0);  // chown cleared them
  ASSERT_EQ(::chown((top + "/others").c_str(), kOther, kOther), 0);
  ASSERT_EQ(::chown((top + "/others/theirs").c_str(), kLeased, kLeased), 0);

  base::UniqueFd fd(::open(top.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(fd);
  auto count = PassOwnership(fd.get(), {{kLeased, kLeased}, {0, 0}, false});
  ASSERT_TRUE(count) << count.error().Render();
  for (const char* p : {"", "/d", "/d/file", "/d/setid", "/link"}) {
    EXPECT_EQ(Lstat(top + p).st_uid, 0U) << p;
    EXPECT_EQ(Lstat(top + p).st_gid, 0U) << p;
  }
  EXPECT_EQ(Lstat(top + "/d/setid").st_mode & 07777, 0755U) << "set-id bits cleared";
  EXPECT_EQ(Lstat(s.Sub("outside")).st_uid, 0U);
  EXPECT_EQ(Lstat(top + "/others").st_uid, kOther) << "another uid's directory is left";
  EXPECT_EQ(Lstat(top + "/others/theirs").st_uid, kLeased) << "and not entered";
  EXPECT_EQ(count->changed, 5U);
}

TEST(OwnershipPassTest, LendingSkipsLinkedFilesAndSharedDirectories) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to chown files to other uids";
  ScratchDir s;
  const std::string top = s.Sub("ws");
  ASSERT_EQ(::mkdir(top.c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((top + "/shared").c_str(), 0777), 0);
  ASSERT_EQ(::chmod((top + "/shared").c_str(), 0777), 0);
  std::ofstream(top + "/shared/f") << "x";
  std::ofstream(top + "/mine") << "x";
  std::ofstream(s.Sub("elsewhere")) << "x";
  ASSERT_EQ(::link(s.Sub("elsewhere").c_str(), (top + "/hardlink").c_str()), 0);
  base::UniqueFd fd(::open(top.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  auto count = PassOwnership(fd.get(), {{0, 0}, {kLeased, kLeased}, true});
  ASSERT_TRUE(count) << count.error().Render();
  EXPECT_EQ(Lstat(top).st_uid, kLeased);
  EXPECT_EQ(Lstat(top + "/mine").st_uid, kLeased);
  EXPECT_EQ(Lstat(s.Sub("elsewhere")).st_uid, 0U) << "a file with another name is not lent";
  EXPECT_EQ(Lstat(top + "/shared/f").st_uid, 0U) << "a directory others write is not entered";
}

}  // namespace
}  // namespace sbx::dispatch
