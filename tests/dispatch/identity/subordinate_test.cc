// `run --identity subuid`'s look-up of the caller's subordinate ids: refused with one line
// when the files grant the caller nothing or too few ids, used when they grant enough.
#include "dispatch/identity/subordinate.h"

#include <gtest/gtest.h>
#include <pwd.h>
#include <unistd.h>

#include <fstream>
#include <string>

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

}  // namespace
}  // namespace sbx::dispatch
