#include "dispatch/host/disk_usage.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "base/unique_fd.h"
#include "tests/dispatch/scratch_dir.h"

namespace sbx::dispatch {
namespace {

constexpr DiskUsage kNoStop{UINT64_MAX, UINT64_MAX};

void Write(const std::string& path, size_t bytes) {
  std::ofstream(path) << std::string(bytes, 'x');
}

base::UniqueFd Open(const std::string& dir) {
  return base::UniqueFd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
}

TEST(DiskUsageTest, CountsNamesAndBlocksOnce) {
  ScratchDir scratch;
  ASSERT_EQ(::mkdir(scratch.Sub("a").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir(scratch.Sub("a/b").c_str(), 0755), 0);
  auto root = Open(scratch.path());
  auto empty = MeasureTrees({root.get()}, kNoStop);
  ASSERT_TRUE(empty) << empty.error().Render();
  EXPECT_EQ(empty->names, 2U);
  Write(scratch.Sub("a/b/big"), 1 << 20);
  ASSERT_EQ(::fsync(Open(scratch.Sub("a/b")).get()), 0);
  // A hard link is one more name, the same blocks; a symlink is a name, never followed.
  ASSERT_EQ(::link(scratch.Sub("a/b/big").c_str(), scratch.Sub("a/link").c_str()), 0);
  ASSERT_EQ(::symlink("/", scratch.Sub("a/to-root").c_str()), 0);
  ::sync();
  auto full = MeasureTrees({root.get()}, kNoStop);
  ASSERT_TRUE(full) << full.error().Render();
  EXPECT_EQ(full->names, 5U);
  EXPECT_GE(full->bytes - empty->bytes, uint64_t{1} << 20);
  EXPECT_LT(full->bytes - empty->bytes, uint64_t{2} << 20);
}

TEST(DiskUsageTest, StopsOnceABoundIsPassed) {
  ScratchDir scratch;
  for (int i = 0; i < 50; ++i) Write(scratch.Sub("f" + std::to_string(i)), 1);
  auto root = Open(scratch.path());
  auto stopped = MeasureTrees({root.get()}, {UINT64_MAX, 10});
  ASSERT_TRUE(stopped) << stopped.error().Render();
  EXPECT_EQ(stopped->names, 11U);
}

TEST(DiskUsageTest, AnUnreadableDirectoryIsAnError) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads a directory of any mode";
  ScratchDir scratch;
  ASSERT_EQ(::mkdir(scratch.Sub("hidden").c_str(), 0), 0);
  auto root = Open(scratch.path());
  auto measured = MeasureTrees({root.get()}, kNoStop);
  ::chmod(scratch.Sub("hidden").c_str(), 0755);
  ASSERT_FALSE(measured);
  EXPECT_NE(measured.error().Render().find("can't be opened"), std::string::npos);
}

}  // namespace
}  // namespace sbx::dispatch
