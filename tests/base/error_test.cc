#include "base/error.h"

#include <gtest/gtest.h>

#include <cerrno>

namespace sbx::base {
namespace {

TEST(ErrorTest, RendersOpSubjectAndErrno) {
  Error e(ENOENT, "Can't find source path", "/nonexistent");
  EXPECT_EQ(e.Render(), "Can't find source path /nonexistent: No such file or directory");
  EXPECT_EQ(e.err(), ENOENT);
}

TEST(ErrorTest, LeavesOutEmptyParts) {
  EXPECT_EQ(Error::Message("labeling not supported on this system").Render(),
            "labeling not supported on this system");
  EXPECT_EQ(Error(EPERM, "capset").Render(), "capset: Operation not permitted");
}

TEST(ErrorTest, UsageIsItsOwnKind) {
  EXPECT_EQ(Error::Usage().kind(), Error::Kind::kUsage);
  EXPECT_EQ(Error(1, "x").kind(), Error::Kind::kSystem);
}

TEST(ResultTest, HoldsValueOrError) {
  Result<int> ok = 42;
  ASSERT_TRUE(ok);
  EXPECT_EQ(*ok, 42);
  Result<int> bad = Error(EINVAL, "parse");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().err(), EINVAL);
  Status fine;
  EXPECT_TRUE(fine);
  Status failed = Error(EIO, "write");
  EXPECT_FALSE(failed);
}

}  // namespace
}  // namespace sbx::base
