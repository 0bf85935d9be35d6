// EventLoop: one epoll instance and the loop that drives every relay of a process.
//
// Contract: single-threaded. Every method is called from the thread that runs the loop (or
// before/after it runs). Each iteration of Run() has fixed phases, as libuv's uv_run:
//   1. poll     epoll_wait, with a timeout up to the nearest timer
//   2. dispatch call the handler of each ready fd that is still registered
//   3. destroy  delete what was handed to DestroyLater() during dispatch
//   4. timers   run expired timers (then destroy again)
// Every Watch() is a registration with its own generation, carried in the epoll event. Before
// each call the loop checks that the fd's registration is still the one the event was polled
// for, so a handler unwatched earlier in the same batch (or whose fd number was closed and
// reused meanwhile) is never called again: after Unwatch() returns, the handler may be
// destroyed as soon as no call of it is on the stack. An object may still not delete itself
// from inside its own callback; DestroyLater() is for that.
#pragma once

#include <sys/epoll.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"

namespace sbx::relay {

// Receives the epoll events of the fds it was registered for.
class IoHandler {
 public:
  virtual void OnIoEvents(uint32_t events) = 0;

 protected:
  ~IoHandler() = default;
};

// Anything whose deletion must wait for the end of the iteration.
class Closable {
 public:
  virtual ~Closable() = default;
};

class EventLoop {
 public:
  using Clock = std::chrono::steady_clock;

  // Identifies a timer for CancelTimer(); a default one refers to no timer.
  struct TimerId {
    Clock::time_point when;
    uint64_t seq = 0;
    [[nodiscard]] bool valid() const { return seq != 0; }
  };

  static base::Result<std::unique_ptr<EventLoop>> Create();
  ~EventLoop();
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  // Registers borrowed `fd` (it stays owned by the caller) with `events` (EPOLLIN, EPOLLOUT,
  // EPOLLET, ...). `handler` must stay alive until the fd is unwatched. Unwatch before closing
  // the fd.
  base::Status Watch(int fd, uint32_t events, IoHandler* handler);
  // Changes the events or the handler of a watched fd (same registration: events already
  // polled in this batch go to the new handler).
  base::Status Modify(int fd, uint32_t events, IoHandler* handler);
  // Ends the registration: its handler is not called again, not even for events of the batch
  // being dispatched.
  void Unwatch(int fd);
  // Unwatch() for an fd the caller closes right after and never duplicated: close(2) removes
  // it from the epoll set, so the epoll_ctl call is skipped (one syscall per socket closed).
  void UnwatchBeforeClose(int fd);

  // Watches an outside fd (a pidfd, a signalfd, a pipe) with a plain callback. The callback may
  // call UnwatchCallback(fd) or Stop() from inside.
  base::Status WatchCallback(int fd, uint32_t events, std::function<void(uint32_t)> callback);
  void UnwatchCallback(int fd);

  // Runs `callback` once, in the timers phase of an iteration, no earlier than `delay` from
  // now (the real clock, not Now()).
  TimerId AddTimer(Clock::duration delay, std::function<void()> callback);
  // Cancels a pending timer and clears `id`; no effect when it already ran.
  void CancelTimer(TimerId& id);

  // Deletes `object` in the destroy phase of the current iteration.
  void DestroyLater(std::unique_ptr<Closable> object);

  // Runs iterations until Stop(). Fails only when epoll_wait fails (not on EINTR).
  base::Status Run();
  // Runs one iteration, waiting at most `max_wait` for an event or a timer.
  base::Status RunOnce(Clock::duration max_wait);
  // Makes Run() return after the current iteration.
  void Stop() { stop_ = true; }
  [[nodiscard]] bool stopped() const { return stop_; }

  // The time taken after the last poll (libuv's loop time): cheap, the same for a whole batch.
  [[nodiscard]] Clock::time_point Now() const { return now_; }

  [[nodiscard]] size_t pending_timers() const { return timers_.size(); }

 private:
  class CallbackWatcher;
  explicit EventLoop(base::UniqueFd epoll_fd);

  [[nodiscard]] int PollTimeoutMs(Clock::duration max_wait) const;
  // One per fd number: the handler of its current registration, and a counter that every
  // Watch/Unwatch moves on, so an event polled for an older registration is recognized.
  struct Registration {
    IoHandler* handler = nullptr;
    uint32_t generation = 0;
  };

  void Dispatch(const epoll_event& event);
  void DestroyClosed();
  void RunTimers();

  base::UniqueFd epoll_fd_;
  std::vector<Registration> registrations_;  // indexed by fd
  bool stop_ = false;
  Clock::time_point now_;
  uint64_t next_timer_seq_ = 1;
  std::map<std::pair<Clock::time_point, uint64_t>, std::function<void()>> timers_;
  std::map<int, std::unique_ptr<CallbackWatcher>> callbacks_;
  std::vector<std::unique_ptr<Closable>> closing_;
};

}  // namespace sbx::relay
