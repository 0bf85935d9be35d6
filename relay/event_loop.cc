#include "relay/event_loop.h"

#include <cerrno>

namespace sbx::relay {

using base::ErrnoError;
using base::Status;

namespace {

// The epoll event's user data: the fd number and the generation of its registration.
uint64_t EventKey(int fd, uint32_t generation) {
  return (uint64_t{generation} << 32) | static_cast<uint32_t>(fd);
}

}  // namespace

// The handler behind WatchCallback(): owns the callback, deleted through DestroyLater() so a
// callback that unwatches itself is not deleted while it runs.
class EventLoop::CallbackWatcher final : public IoHandler, public Closable {
 public:
  explicit CallbackWatcher(std::function<void(uint32_t)> callback)
      : callback_(std::move(callback)) {}
  void OnIoEvents(uint32_t events) override { callback_(events); }

 private:
  std::function<void(uint32_t)> callback_;
};

base::Result<std::unique_ptr<EventLoop>> EventLoop::Create() {
  base::UniqueFd fd(::epoll_create1(EPOLL_CLOEXEC));
  if (!fd) return ErrnoError("Can't create epoll instance");
  return std::unique_ptr<EventLoop>(new EventLoop(std::move(fd)));
}

EventLoop::EventLoop(base::UniqueFd epoll_fd)
    : epoll_fd_(std::move(epoll_fd)), now_(Clock::now()) {}

EventLoop::~EventLoop() = default;

Status EventLoop::Watch(int fd, uint32_t events, IoHandler* handler) {
  if (fd < 0) return base::Error(EBADF, "Can't watch fd", std::to_string(fd));
  auto slot = static_cast<size_t>(fd);
  if (slot >= registrations_.size()) registrations_.resize(slot + 1);
  uint32_t generation = registrations_[slot].generation + 1;
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = EventKey(fd, generation);
  if (::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, fd, &ev) < 0) {
    return ErrnoError("Can't watch fd", std::to_string(fd));
  }
  registrations_[slot] = Registration{handler, generation};
  return {};
}

Status EventLoop::Modify(int fd, uint32_t events, IoHandler* handler) {
  auto slot = static_cast<size_t>(fd);
  if (fd < 0 || slot >= registrations_.size() || registrations_[slot].handler == nullptr) {
    return base::Error(ENOENT, "Can't modify watch of unwatched fd", std::to_string(fd));
  }
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = EventKey(fd, registrations_[slot].generation);
  if (::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_MOD, fd, &ev) < 0) {
    return ErrnoError("Can't modify watch of fd", std::to_string(fd));
  }
  registrations_[slot].handler = handler;
  return {};
}

void EventLoop::Unwatch(int fd) {
  // Fails only when the fd was never watched; nothing to undo then.
  (void)::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_DEL, fd, nullptr);
  UnwatchBeforeClose(fd);
}

void EventLoop::UnwatchBeforeClose(int fd) {
  auto slot = static_cast<size_t>(fd);
  if (fd < 0 || slot >= registrations_.size() || registrations_[slot].handler == nullptr) return;
  // A new generation: events of this batch polled for the old registration are dropped.
  registrations_[slot].handler = nullptr;
  ++registrations_[slot].generation;
}

Status EventLoop::WatchCallback(int fd, uint32_t events, std::function<void(uint32_t)> callback) {
  UnwatchCallback(fd);  // a stale entry left for a reused fd number
  auto watcher = std::make_unique<CallbackWatcher>(std::move(callback));
  if (auto watched = Watch(fd, events, watcher.get()); !watched) return watched.error();
  callbacks_[fd] = std::move(watcher);
  return {};
}

void EventLoop::UnwatchCallback(int fd) {
  auto it = callbacks_.find(fd);
  if (it == callbacks_.end()) return;
  Unwatch(fd);
  DestroyLater(std::move(it->second));
  callbacks_.erase(it);
}

EventLoop::TimerId EventLoop::AddTimer(Clock::duration delay, std::function<void()> callback) {
  // The real time, not Now(): a timer armed outside Run() must not start from a stale clock.
  TimerId id{Clock::now() + delay, next_timer_seq_++};
  timers_.emplace(std::make_pair(id.when, id.seq), std::move(callback));
  return id;
}

void EventLoop::CancelTimer(TimerId& id) {
  if (id.valid()) timers_.erase(std::make_pair(id.when, id.seq));
  id = TimerId{};
}

void EventLoop::DestroyLater(std::unique_ptr<Closable> object) {
  closing_.push_back(std::move(object));
}

Status EventLoop::Run() {
  stop_ = false;
  while (!stop_) {
    if (auto ran = RunOnce(Clock::duration::max()); !ran) return ran;
  }
  return {};
}

int EventLoop::PollTimeoutMs(Clock::duration max_wait) const {
  if (!closing_.empty() || stop_) return 0;
  Clock::duration wait = max_wait;
  if (!timers_.empty()) wait = std::min(wait, timers_.begin()->first.first - Clock::now());
  if (wait <= Clock::duration::zero()) return 0;
  // Round up: waking a little late is harmless, waking early would spin until the deadline.
  auto ms = std::chrono::ceil<std::chrono::milliseconds>(wait).count();
  constexpr long long kOneDayMs = 24LL * 3600 * 1000;  // beyond that: wait for an event
  return ms > kOneDayMs ? -1 : static_cast<int>(ms);
}

Status EventLoop::RunOnce(Clock::duration max_wait) {
  constexpr int kMaxEvents = 128;
  epoll_event events[kMaxEvents];
  int n = ::epoll_wait(epoll_fd_.get(), events, kMaxEvents, PollTimeoutMs(max_wait));
  if (n < 0) {
    if (errno != EINTR) return ErrnoError("epoll_wait");
    n = 0;
  }
  now_ = Clock::now();
  for (int i = 0; i < n; ++i) Dispatch(events[i]);
  DestroyClosed();
  RunTimers();
  DestroyClosed();
  return {};
}

void EventLoop::Dispatch(const epoll_event& event) {
  auto slot = static_cast<size_t>(event.data.u64 & 0xffffffffu);
  auto generation = static_cast<uint32_t>(event.data.u64 >> 32);
  // An earlier handler of this batch may have unwatched this fd (and maybe destroyed its
  // handler, or closed the fd and watched a new file under the same number): skip the event.
  if (slot >= registrations_.size()) return;
  const Registration& registration = registrations_[slot];
  if (registration.handler == nullptr || registration.generation != generation) return;
  // `registration` is not touched after the call: the callback may grow registrations_.
  registration.handler->OnIoEvents(event.events);
}

void EventLoop::DestroyClosed() {
  // A destructor may hand more objects over; swap until nothing is left.
  while (!closing_.empty()) {
    std::vector<std::unique_ptr<Closable>> batch;
    batch.swap(closing_);
  }
}

void EventLoop::RunTimers() {
  // Timers added by these callbacks wait for the next iteration, so a timer that re-arms
  // itself with a zero delay can't keep this phase running forever.
  const uint64_t first_new_seq = next_timer_seq_;
  while (!timers_.empty() && timers_.begin()->first.first <= now_ &&
         timers_.begin()->first.second < first_new_seq) {
    // Take the timer out before calling it: the callback may add or cancel timers.
    std::function<void()> callback = std::move(timers_.begin()->second);
    timers_.erase(timers_.begin());
    if (callback) callback();
  }
}

}  // namespace sbx::relay
