#include "base/unique_fd.h"

#include <gtest/gtest.h>
#include <sys/socket.h>

namespace sbx::base {
namespace {

bool IsOpen(int fd) { return ::fcntl(fd, F_GETFD) >= 0; }

TEST(UniqueFdTest, ClosesOnDestruction) {
  int raw = -1;
  {
    auto pipe = MakePipe();
    ASSERT_TRUE(pipe);
    raw = pipe->read_end.get();
    EXPECT_TRUE(IsOpen(raw));
  }
  EXPECT_FALSE(IsOpen(raw));
}

TEST(UniqueFdTest, MoveTransfersOwnership) {
  auto pipe = MakePipe();
  ASSERT_TRUE(pipe);
  UniqueFd a = std::move(pipe->read_end);
  EXPECT_FALSE(pipe->read_end);
  UniqueFd b;
  b = std::move(a);
  EXPECT_TRUE(b);
  EXPECT_FALSE(a);  // NOLINT(bugprone-use-after-move): testing the moved-from state
}

TEST(UniqueFdTest, ReleaseGivesUpOwnership) {
  auto pipe = MakePipe();
  ASSERT_TRUE(pipe);
  int raw = pipe->write_end.release();
  EXPECT_FALSE(pipe->write_end);
  EXPECT_TRUE(IsOpen(raw));
  ::close(raw);
}

TEST(UniqueFdTest, EveryFactorySetsCloexec) {
  auto pipe = MakePipe();
  ASSERT_TRUE(pipe);
  EXPECT_TRUE(::fcntl(pipe->read_end.get(), F_GETFD) & FD_CLOEXEC);
  EXPECT_TRUE(::fcntl(pipe->write_end.get(), F_GETFD) & FD_CLOEXEC);
  auto pair = MakeSocketPair(SOCK_STREAM);
  ASSERT_TRUE(pair);
  EXPECT_TRUE(::fcntl(pair->read_end.get(), F_GETFD) & FD_CLOEXEC);
  EXPECT_TRUE(::fcntl(pair->write_end.get(), F_GETFD) & FD_CLOEXEC);
}

}  // namespace
}  // namespace sbx::base
