#include "dispatch/terminal/tty_relay.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <utility>

namespace sbx::dispatch {
namespace {

constexpr size_t kBufferSize = size_t{64} * 1024;
constexpr char kEndOfInput = 0x04;  // Ctrl-D, VEOF of a terminal in its default settings
// Drain(): how long a caller's output that takes nothing may hold up the end of `run`.
constexpr int kDrainStallMs = 5000;

bool WouldBlock(int err) { return err == EAGAIN || err == EWOULDBLOCK; }

}  // namespace

// One fd's registration on the loop, with the events wanted now: none means not registered
// (epoll would still report EPOLLHUP for a hung-up terminal, again and again).
class TtyRelay::Watch final : public relay::IoHandler {
 public:
  Watch(relay::EventLoop* loop, int fd, std::function<void(uint32_t)> on_events)
      : loop_(loop), fd_(fd), on_events_(std::move(on_events)) {}
  Watch(const Watch&) = delete;
  Watch& operator=(const Watch&) = delete;
  virtual ~Watch() { (void)Set(0); }

  base::Status Set(uint32_t events) {
    if (events == events_) return {};
    base::Status st;
    if (events == 0) {
      loop_->Unwatch(fd_);
    } else if (events_ == 0) {
      st = loop_->Watch(fd_, events, this);
    } else {
      st = loop_->Modify(fd_, events, this);
    }
    events_ = st ? events : 0;
    return st;
  }
  void OnIoEvents(uint32_t events) override { on_events_(events); }

 private:
  relay::EventLoop* loop_;
  int fd_;
  std::function<void(uint32_t)> on_events_;
  uint32_t events_ = 0;
};

char* TtyRelay::Buffer::space() {
  if (room() == 0 && begin > 0) {
    std::memmove(bytes.data(), bytes.data() + begin, end - begin);
    end -= begin;
    begin = 0;
  }
  return bytes.data() + end;
}

void TtyRelay::Buffer::Consume(size_t n) {
  begin += n;
  if (begin == end) begin = end = 0;
}

TtyRelay::TtyRelay(relay::EventLoop* loop, base::UniqueFd master, CallerEnds caller,
                   std::function<void()> caller_gone)
    : loop_(loop),
      master_(std::move(master)),
      caller_(std::move(caller)),
      caller_gone_(std::move(caller_gone)) {
  to_agent_.bytes.resize(kBufferSize);
  to_caller_.bytes.resize(kBufferSize);
  input_open_ = caller_.input >= 0;
}

TtyRelay::~TtyRelay() = default;

base::Status TtyRelay::Start() {
  master_watch_ =
      std::make_unique<Watch>(loop_, master_.get(), [this](uint32_t events) { OnMaster(events); });
  if (caller_.output >= 0) {
    output_watch_ =
        std::make_unique<Watch>(loop_, caller_.output, [this](uint32_t) { OnOutput(); });
  }
  if (input_open_) {
    input_watch_ = std::make_unique<Watch>(loop_, caller_.input, [this](uint32_t) { OnInput(); });
    if (auto st = input_watch_->Set(EPOLLIN); !st) {
      // epoll takes no regular file (nor /dev/null): such input never blocks, so it is read
      // whenever the agent's side has room.
      if (st.error().err() != EPERM) return st;
      input_pollable_ = false;
      FlushToAgent();
    }
  }
  UpdateInterest();
  return {};
}

void TtyRelay::HangUp() {
  // Unregistered, not destroyed: this may run inside one of their callbacks.
  for (Watch* watch : {input_watch_.get(), master_watch_.get(), output_watch_.get()}) {
    if (watch != nullptr) (void)watch->Set(0);
  }
  master_.reset();
  input_open_ = false;
  master_readable_ = false;
  to_agent_.begin = to_agent_.end = 0;
}

void TtyRelay::CallerGone() {
  if (!master_) return;
  HangUp();
  if (caller_gone_) caller_gone_();
}

void TtyRelay::OnInput() {
  ReadInput();
  FlushToAgent();
  UpdateInterest();
}

void TtyRelay::OnMaster(uint32_t events) {
  if ((events & EPOLLOUT) != 0) FlushToAgent();
  if ((events & (EPOLLIN | EPOLLHUP | EPOLLERR)) != 0) ReadMaster();
  FlushToCaller();
  UpdateInterest();
}

void TtyRelay::OnOutput() {
  FlushToCaller();
  UpdateInterest();
}

void TtyRelay::ReadInput() {
  while (input_open_ && master_ && to_agent_.room() + to_agent_.begin > 0) {
    char* space = to_agent_.space();
    ssize_t n = ::read(caller_.input, space, to_agent_.room());
    if (n > 0) {
      to_agent_.end += static_cast<size_t>(n);
      if (input_pollable_) return;  // one read per readiness event
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && WouldBlock(errno)) return;
    InputEnded();  // EOF, or EIO from a terminal that was hung up
    return;
  }
}

void TtyRelay::InputEnded() {
  input_open_ = false;
  if (input_watch_) (void)input_watch_->Set(0);
  if (caller_.input_is_terminal) {
    CallerGone();
    return;
  }
  if (to_agent_.room() + to_agent_.begin > 0) {
    *to_agent_.space() = kEndOfInput;
    to_agent_.end += 1;
  }
}

void TtyRelay::ReadMaster() {
  while (master_readable_ && to_caller_.room() + to_caller_.begin > 0) {
    char* space = to_caller_.space();
    ssize_t n = ::read(master_.get(), space, to_caller_.room());
    if (n > 0) {
      to_caller_.end += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && WouldBlock(errno)) return;
    // EIO: every descriptor of the agent's side is closed. Nothing will read keys any more.
    master_readable_ = false;
    to_agent_.begin = to_agent_.end = 0;
    return;
  }
}

void TtyRelay::FlushToAgent() {
  for (;;) {
    while (master_ && master_readable_ && !to_agent_.empty()) {
      ssize_t n = ::write(master_.get(), to_agent_.bytes.data() + to_agent_.begin,
                          to_agent_.end - to_agent_.begin);
      if (n > 0) {
        to_agent_.Consume(static_cast<size_t>(n));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && WouldBlock(errno)) return;
      to_agent_.begin = to_agent_.end = 0;  // the agent's side is gone
      return;
    }
    // Input that epoll cannot watch is read here, as long as the agent's side takes it.
    if (input_pollable_ || !input_open_ || !master_ || !master_readable_) return;
    ReadInput();
    if (to_agent_.empty()) return;
  }
}

void TtyRelay::FlushToCaller() {
  while (!to_caller_.empty() && caller_.output >= 0) {
    ssize_t n = ::write(caller_.output, to_caller_.bytes.data() + to_caller_.begin,
                        to_caller_.end - to_caller_.begin);
    if (n > 0) {
      to_caller_.Consume(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && WouldBlock(errno)) return;
    // EIO, EPIPE: the caller's terminal is gone; so is the session.
    to_caller_.begin = to_caller_.end = 0;
    caller_.output = -1;
    CallerGone();
    return;
  }
}

void TtyRelay::UpdateInterest() {
  if (!master_) return;
  const bool agent_has_room = to_agent_.room() + to_agent_.begin > 0;
  if (input_watch_ && input_pollable_) {
    (void)input_watch_->Set(input_open_ && agent_has_room ? uint32_t{EPOLLIN} : 0U);
  }
  uint32_t master_events = 0;
  if (master_readable_ && to_caller_.room() + to_caller_.begin > 0) master_events |= EPOLLIN;
  if (master_readable_ && !to_agent_.empty()) master_events |= EPOLLOUT;
  (void)master_watch_->Set(master_events);
  if (output_watch_ && caller_.output_nonblocking) {
    (void)output_watch_->Set(!to_caller_.empty() ? uint32_t{EPOLLOUT} : 0U);
  }
}

void TtyRelay::Drain() {
  auto stall_deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kDrainStallMs);
  for (;;) {
    if (to_caller_.empty()) {
      ReadMaster();
      if (to_caller_.empty()) return;  // EIO: the agent's side is closed and read empty
    }
    const size_t before = to_caller_.end - to_caller_.begin;
    FlushToCaller();
    if (caller_.output < 0) return;
    if (to_caller_.end - to_caller_.begin < before) {
      stall_deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kDrainStallMs);
      continue;
    }
    // Only a non-blocking output gets here: wait for it to take more, within the limit.
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        stall_deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return;
    pollfd out{caller_.output, POLLOUT, 0};
    (void)::poll(&out, 1, static_cast<int>(left.count()));
  }
}

}  // namespace sbx::dispatch
