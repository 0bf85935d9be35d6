// EventLoop: timers, outside fds with callbacks (pipe, pidfd), deferred destruction, Stop().
#include "relay/event_loop.h"

#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "tests/relay/relay_test_util.h"

namespace sbx::relay {
namespace {

using namespace std::chrono_literals;

std::unique_ptr<EventLoop> MakeLoop() {
  auto loop = EventLoop::Create();
  EXPECT_TRUE(loop);
  return std::move(*loop);
}

TEST(EventLoopTest, TimersFireInDeadlineOrderAndCancelWorks) {
  auto loop = MakeLoop();
  std::vector<int> fired;
  loop->AddTimer(30ms, [&] { fired.push_back(3); });
  loop->AddTimer(10ms, [&] { fired.push_back(1); });
  auto cancelled = loop->AddTimer(20ms, [&] { fired.push_back(2); });
  loop->CancelTimer(cancelled);
  EXPECT_FALSE(cancelled.valid());
  loop->AddTimer(40ms, [&] { loop->Stop(); });
  ASSERT_TRUE(loop->Run());
  EXPECT_EQ(fired, (std::vector<int>{1, 3}));
  EXPECT_EQ(loop->pending_timers(), 0u);
}

TEST(EventLoopTest, ZeroDelayTimerRearmingItselfDoesNotStarveTheLoop) {
  auto loop = MakeLoop();
  int runs = 0;
  std::function<void()> again = [&] {
    ++runs;
    loop->AddTimer(0ms, again);
  };
  loop->AddTimer(0ms, again);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(loop->RunOnce(10ms));
  EXPECT_LE(runs, 5);
  EXPECT_GE(runs, 1);
}

TEST(EventLoopTest, CallbackOnAPipeCanUnwatchItselfAndStop) {
  auto loop = MakeLoop();
  auto pipe = base::MakePipe();
  ASSERT_TRUE(pipe);
  int calls = 0;
  int fd = pipe->read_end.get();
  ASSERT_TRUE(loop->WatchCallback(fd, EPOLLIN, [&](uint32_t events) {
    ++calls;
    EXPECT_TRUE(events & EPOLLIN);
    loop->UnwatchCallback(fd);  // deletes the watcher later, not while it runs
    loop->Stop();
  }));
  ASSERT_EQ(::write(pipe->write_end.get(), "x", 1), 1);
  ASSERT_TRUE(loop->Run());
  EXPECT_EQ(calls, 1);
  ASSERT_TRUE(loop->RunOnce(0ms));  // unwatched: no second call though still readable
  EXPECT_EQ(calls, 1);
}

TEST(EventLoopTest, PidfdOfAnExitingChildStopsTheLoop) {
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::usleep(20000);
    ::_exit(7);
  }
  base::UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  if (!pidfd) {
    int err = errno;
    ::waitpid(pid, nullptr, 0);
    GTEST_SKIP() << "pidfd_open unavailable: errno " << err;
  }
  auto loop = MakeLoop();
  ASSERT_TRUE(loop->WatchCallback(pidfd.get(), EPOLLIN, [&](uint32_t) { loop->Stop(); }));
  loop->AddTimer(10s, [&] { loop->Stop(); });  // a safety net, not the expected path
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(loop->Run());
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_EQ(WEXITSTATUS(status), 7);
}

class Tracked final : public Closable {
 public:
  explicit Tracked(bool* destroyed) : destroyed_(destroyed) {}
  ~Tracked() override { *destroyed_ = true; }

 private:
  bool* destroyed_;
};

TEST(EventLoopTest, DestroyLaterWaitsForTheDestroyPhase) {
  auto loop = MakeLoop();
  auto pipe = base::MakePipe();
  ASSERT_TRUE(pipe);
  bool destroyed = false;
  bool alive_at_end_of_callback = false;
  ASSERT_TRUE(loop->WatchCallback(pipe->read_end.get(), EPOLLIN, [&](uint32_t) {
    loop->DestroyLater(std::make_unique<Tracked>(&destroyed));
    alive_at_end_of_callback = !destroyed;
    loop->UnwatchCallback(pipe->read_end.get());
  }));
  ASSERT_EQ(::write(pipe->write_end.get(), "x", 1), 1);
  ASSERT_TRUE(loop->RunOnce(1s));
  EXPECT_TRUE(alive_at_end_of_callback);
  EXPECT_TRUE(destroyed);
}

}  // namespace
}  // namespace sbx::relay
