// HandoffSender: the supervisor's side of one route (docs/tunnel.md). It accepts the agent's
// TCP connections on the route's listener and hands each accepted socket to the host relay
// over the route's channel (SendSockets, relay/handoff.h), then closes its own copy: the
// supervisor moves no byte of any connection and holds no per-connection state.
//
// Accepting: accept4 in batches of up to kHandoffBatch on a level-triggered listener, then one
// sendmmsg for the batch. When the channel is full (EAGAIN) or too many fds are in flight
// (ETOOMANYREFS), the accepted sockets wait in hand (at most one batch), the listener is
// unwatched and new connections wait in the listen backlog (4096) until the host relay has
// taken the batch: backpressure, bounded memory. When the channel is gone (the host relay
// closed it), every connection is closed with a reset at once: the agent sees ECONNRESET,
// never a hang. Out of fds, accepting pauses for 100 ms.
//
// Contract: the loop thread only. The EventLoop outlives the sender, which is destroyed outside
// the loop's callbacks.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "relay/event_loop.h"
#include "runtime/base/unique_fd.h"

namespace sbx::relay {

class HandoffSender final : public IoHandler {
 public:
  struct Stats {
    uint64_t accepted = 0;
    uint64_t handed_off = 0;
    uint64_t reset = 0;  // closed with a reset because the channel is gone
  };

  // Takes the listening, non-blocking TCP socket (Endpoint::Listen) and the connected,
  // non-blocking Unix stream socket to the host relay's route socket; starts at once.
  static base::Result<std::unique_ptr<HandoffSender>> Create(EventLoop* loop,
                                                             base::UniqueFd listener,
                                                             base::UniqueFd channel);
  ~HandoffSender();
  HandoffSender(const HandoffSender&) = delete;
  HandoffSender& operator=(const HandoffSender&) = delete;

  [[nodiscard]] const Stats& stats() const { return stats_; }
  [[nodiscard]] bool channel_open() const { return channel_.get() >= 0; }

  void OnIoEvents(uint32_t events) override;  // the listener is readable

 private:
  // The channel's registration (the listener is the sender's own): forwards its events.
  class ChannelWatch final : public IoHandler {
   public:
    explicit ChannelWatch(HandoffSender* sender) : sender_(sender) {}
    void OnIoEvents(uint32_t events) override { sender_->OnChannelEvents(events); }

   private:
    HandoffSender* sender_;
  };

  HandoffSender(EventLoop* loop, base::UniqueFd listener, base::UniqueFd channel)
      : loop_(loop), listener_(std::move(listener)), channel_(std::move(channel)) {}

  // Accepts one batch into pending_; false when accepting must pause (out of fds, errors).
  bool AcceptBatch();
  // Sends what is pending; false when some must wait for room in the channel.
  bool Flush();
  void OnChannelEvents(uint32_t events);
  void WaitForChannel(int err);
  void PauseListener(bool paused);
  void ResumeAfter(std::chrono::milliseconds delay);
  void BreakChannel();
  void ResetPending();

  EventLoop* loop_;
  base::UniqueFd listener_;
  base::UniqueFd channel_;
  ChannelWatch channel_watch_{this};
  std::vector<base::UniqueFd> pending_;  // accepted, not yet handed over; at most one batch
  bool listener_paused_ = false;
  bool waiting_for_room_ = false;  // the channel is watched for EPOLLOUT
  EventLoop::TimerId timer_;
  Stats stats_;
};

}  // namespace sbx::relay
