#include "relay/handoff_sender.h"

#include <sys/epoll.h>
#include <sys/socket.h>

#include <array>
#include <cerrno>

#include "relay/endpoint.h"
#include "relay/handoff.h"

namespace sbx::relay {
namespace {

// How long to stop accepting when out of fds or after an unexpected accept error.
constexpr auto kAcceptPause = std::chrono::milliseconds(100);
// How long to wait before retrying a send refused for too many fds in flight: that count only
// drops when the host relay receives, which raises no event on our side.
constexpr auto kInFlightRetry = std::chrono::milliseconds(1);
// The channel is watched only for the host relay's end (and, while full, for room).
constexpr uint32_t kChannelEvents = EPOLLRDHUP;

}  // namespace

base::Result<std::unique_ptr<HandoffSender>> HandoffSender::Create(EventLoop* loop,
                                                                   base::UniqueFd listener,
                                                                   base::UniqueFd channel) {
  // Accepted sockets inherit TCP_NODELAY from the listener, so the host relay gets them set.
  SetNoDelay(listener.get());
  std::unique_ptr<HandoffSender> sender(
      new HandoffSender(loop, std::move(listener), std::move(channel)));
  sender->pending_.reserve(kHandoffBatch);
  if (auto w = loop->Watch(sender->channel_.get(), kChannelEvents, &sender->channel_watch_); !w) {
    return w.error();
  }
  if (auto w = loop->Watch(sender->listener_.get(), EPOLLIN, sender.get()); !w) {
    loop->Unwatch(sender->channel_.get());
    return w.error();
  }
  return sender;
}

HandoffSender::~HandoffSender() {
  loop_->CancelTimer(timer_);
  if (!listener_paused_) loop_->Unwatch(listener_.get());
  if (channel_) loop_->Unwatch(channel_.get());
}

void HandoffSender::OnIoEvents(uint32_t /*events*/) {
  if (AcceptBatch()) Flush();
}

bool HandoffSender::AcceptBatch() {
  while (pending_.size() < kHandoffBatch) {
    base::UniqueFd fd(::accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (fd) {
      ++stats_.accepted;
      pending_.push_back(std::move(fd));
      continue;
    }
    switch (errno) {
      case EAGAIN:
        return true;
      case EINTR:
      case ECONNABORTED:  // the client gave up while in the backlog
      case EPROTO:
        continue;
      default:  // out of fds or worse: what was accepted still goes, then a pause
        Flush();
        ResumeAfter(kAcceptPause);
        return false;
    }
  }
  return true;
}

bool HandoffSender::Flush() {
  while (!pending_.empty()) {
    if (!channel_) {
      ResetPending();
      return true;
    }
    std::array<int, kHandoffBatch> fds{};
    for (size_t i = 0; i < pending_.size(); ++i) fds[i] = pending_[i].get();
    auto sent = SendSockets(channel_.get(), std::span<const int>(fds.data(), pending_.size()));
    if (!sent) {
      int err = sent.error().err();
      if (err == EAGAIN || err == ETOOMANYREFS || err == ENOBUFS || err == ENOMEM) {
        WaitForChannel(err);
        return false;
      }
      BreakChannel();
      continue;  // resets what is pending
    }
    // The host relay holds its own reference now; ours close here.
    pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(*sent));
    stats_.handed_off += *sent;
  }
  return true;
}

void HandoffSender::WaitForChannel(int err) {
  PauseListener(true);
  if (err != EAGAIN) {
    ResumeAfter(kInFlightRetry);
    return;
  }
  if (waiting_for_room_) return;
  // The channel has room again once the host relay read from it: EPOLLOUT says when.
  if (!loop_->Modify(channel_.get(), kChannelEvents | EPOLLOUT, &channel_watch_)) {
    ResumeAfter(kInFlightRetry);
    return;
  }
  waiting_for_room_ = true;
}

void HandoffSender::OnChannelEvents(uint32_t events) {
  if ((events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0) {
    BreakChannel();
    ResetPending();
    PauseListener(false);
    return;
  }
  if ((events & EPOLLOUT) == 0 || !Flush()) return;
  waiting_for_room_ = false;
  if (!loop_->Modify(channel_.get(), kChannelEvents, &channel_watch_)) BreakChannel();
  PauseListener(false);
}

void HandoffSender::PauseListener(bool paused) {
  if (paused == listener_paused_) return;
  if (paused) {
    loop_->Unwatch(listener_.get());
  } else if (!loop_->Watch(listener_.get(), EPOLLIN, this)) {
    ResumeAfter(kAcceptPause);  // only for lack of memory: try again later
    return;
  }
  listener_paused_ = paused;
}

void HandoffSender::ResumeAfter(std::chrono::milliseconds delay) {
  PauseListener(true);
  if (timer_.valid()) return;
  timer_ = loop_->AddTimer(delay, [this] {
    timer_ = {};
    if (Flush()) PauseListener(false);
  });
}

void HandoffSender::BreakChannel() {
  if (!channel_) return;
  loop_->Unwatch(channel_.get());
  channel_.reset();
  waiting_for_room_ = false;
}

void HandoffSender::ResetPending() {
  // A reset, not a FIN: the agent learns at once that this connection will never be served.
  for (base::UniqueFd& fd : pending_) SetResetOnClose(fd.get());
  stats_.reset += pending_.size();
  pending_.clear();
}

}  // namespace sbx::relay
