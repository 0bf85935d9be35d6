// EventLoop: timers, outside fds with callbacks (pipe, pidfd), deferred destruction, Stop().
#include "relay/event_loop.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <functional>
#include <memory>
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
  bool stopped_by_pidfd = false;
  ASSERT_TRUE(loop->WatchCallback(pidfd.get(), EPOLLIN, [&](uint32_t) {
    stopped_by_pidfd = true;
    loop->Stop();
  }));
  loop->AddTimer(60s, [&] { loop->Stop(); });  // watchdog: fails a hung loop, not a timing bound
  ASSERT_TRUE(loop->Run());
  EXPECT_TRUE(stopped_by_pidfd) << "the watchdog, not the child's exit, ended the loop";
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

// Counts its calls; on its first call runs `on_event` (which may unwatch other handlers).
class CountingHandler final : public IoHandler {
 public:
  void OnIoEvents(uint32_t /*events*/) override {
    if (++calls == 1 && on_event) on_event();
  }
  int calls = 0;
  std::function<void()> on_event;
};

TEST(EventLoopTest, HandlerUnwatchedEarlierInTheBatchIsNotCalledAgain) {
  // Two pipes readable before one poll: both events arrive in the same batch. Whichever
  // handler runs first unwatches the other and destroys it (as a relay torn down from a
  // callback would). Without the registration check the second event would call a deleted
  // object: ASan reports a heap-use-after-free, a plain build calls into freed memory.
  auto loop = MakeLoop();
  auto first = base::MakePipe();
  auto second = base::MakePipe();
  ASSERT_TRUE(first && second);
  auto a = std::make_unique<CountingHandler>();
  auto b = std::make_unique<CountingHandler>();
  int a_calls = 0;
  int b_calls = 0;
  a->on_event = [&] {
    ++a_calls;
    loop->Unwatch(second->read_end.get());
    b.reset();
  };
  b->on_event = [&] {
    ++b_calls;
    loop->Unwatch(first->read_end.get());
    a.reset();
  };
  ASSERT_TRUE(loop->Watch(first->read_end.get(), EPOLLIN, a.get()));
  ASSERT_TRUE(loop->Watch(second->read_end.get(), EPOLLIN, b.get()));
  ASSERT_EQ(::write(first->write_end.get(), "x", 1), 1);
  ASSERT_EQ(::write(second->write_end.get(), "y", 1), 1);
  ASSERT_TRUE(loop->RunOnce(1s));
  EXPECT_EQ(a_calls + b_calls, 1) << "exactly one handler ran; the other was unwatched first";
  // Whichever survived is unwatched at the end (the test owns the objects).
  if (a) loop->Unwatch(first->read_end.get());
  if (b) loop->Unwatch(second->read_end.get());
}

TEST(EventLoopTest, ReusedFdNumberGetsNoEventOfTheOldRegistration) {
  // The first handler closes the second pipe and watches a fresh, idle pipe that takes the
  // same fd number: the event already polled for the old pipe must not reach the new handler.
  auto loop = MakeLoop();
  auto first = base::MakePipe();
  auto second = base::MakePipe();
  ASSERT_TRUE(first && second);
  CountingHandler a;
  CountingHandler b;
  CountingHandler fresh;
  base::FdPair replacement;
  base::UniqueFd fresh_fd;
  const int reused = second->read_end.get();
  auto swap = [&] {
    auto pipe = base::MakePipe();
    ASSERT_TRUE(pipe);
    replacement = std::move(*pipe);
    loop->UnwatchBeforeClose(reused);
    second->read_end.reset();
    // The new pipe's read end on the number just closed, as the kernel's lowest-free rule
    // gives it to the next socket a relay accepts.
    fresh_fd = base::UniqueFd(::fcntl(replacement.read_end.get(), F_DUPFD_CLOEXEC, reused));
    ASSERT_EQ(fresh_fd.get(), reused);
    ASSERT_TRUE(loop->Watch(reused, EPOLLIN, &fresh));
  };
  a.on_event = swap;
  b.on_event = [&] { loop->Unwatch(first->read_end.get()); };  // b ran first: nothing to test
  ASSERT_TRUE(loop->Watch(first->read_end.get(), EPOLLIN, &a));
  ASSERT_TRUE(loop->Watch(reused, EPOLLIN, &b));
  ASSERT_EQ(::write(first->write_end.get(), "x", 1), 1);
  ASSERT_EQ(::write(second->write_end.get(), "y", 1), 1);
  ASSERT_TRUE(loop->RunOnce(1s));
  // epoll reports ready fds in the order they became ready: the first pipe first.
  ASSERT_EQ(a.calls, 1);
  EXPECT_EQ(b.calls, 0);
  EXPECT_EQ(fresh.calls, 0) << "the old pipe's event was delivered to the new registration";
  ASSERT_EQ(::write(replacement.write_end.get(), "z", 1), 1);
  ASSERT_TRUE(loop->RunOnce(1s));
  EXPECT_EQ(fresh.calls, 1) << "the new registration works";
  loop->Unwatch(first->read_end.get());
  loop->Unwatch(reused);
}

}  // namespace
}  // namespace sbx::relay
