// Relay: one listening socket, one target, its limits and its connections: one route.
//
// Every connection accepted on the listener is relayed to the same target; which target is
// decided by WHICH listener accepted, never by the bytes (they are opaque: TLS stays end to
// end). Many relays share one EventLoop; there is no thread per connection.
//
// Accepting: accept4(NONBLOCK | CLOEXEC) in batches on a level-triggered listener. Above
// Limits::max_connections a new connection is closed at once and recorded as "limit" (it never
// waits in the backlog). Out of file descriptors (EMFILE/ENFILE), the relay frees a reserve fd,
// accepts and closes what is waiting, and takes the reserve back (libuv's emfile trick); when
// even that fails it stops accepting for a moment.
//
// Handoff mode (RelayOptions::handoff, the host side of the tunnel; relay/handoff.h): the
// listener is the route's Unix socket, and what arrives on it is the route's TCP listener,
// handed over by the supervisor; the relay then accepts the agent's connections from that
// listener itself. Only the FIRST connection the Unix socket ever accepts is the channel: the
// supervisor's, made before the agent exists. Every later one is closed at once and recorded
// as "refused" (EPERM), so the agent, which can reach the socket too, can never hand over
// anything. Every received fd is still checked as hostile (CheckHandedOffListener), and only
// the first good listener is adopted; a refused message, or a second listener, is closed and
// recorded as "refused". The channel may close once the listener is handed over. Once a
// listener is adopted the Unix socket is closed: later connects to its path are refused by
// the kernel (ECONNREFUSED) and cost the relay nothing.
//
// Bulk transfers splice(2) through per-connection pipes (no copy through user space) when the
// process ignores SIGPIPE at Create() time (the supervisor does; the host dispatch should);
// otherwise they copy through the Flow buffers. Drained buffers are pooled per relay.
//
// Contract: the loop thread only. The EventLoop outlives the Relay, and the Relay is destroyed
// outside the loop's callbacks (after Run() returned, or before it started).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>

#include "base/unique_fd.h"
#include "relay/connection.h"
#include "relay/endpoint.h"
#include "relay/event_loop.h"
#include "relay/limits.h"

#include "relay/peer_check.h"

namespace sbx::relay {

struct RelayOptions {
  Endpoint target;
  Limits limits;
  // Called once per connection that dialled the target, once per connection shed by a limit
  // and once per connection the ClientHello check refused; not for probes (closed before a
  // byte arrived, without a dial), which only count in Stats.
  std::function<void(const ConnectionRecord&)> on_record;
  bool handoff = false;  // see "Handoff mode" above
  // When each connection dials (Connection's DialPolicy), and for kAfterClientHello the name
  // its SNI must give.
  DialPolicy dial = DialPolicy::kOnFirstByte;
  std::string server_name;
  // Handoff mode: who may be the channel (relay/peer_check.h); null: whoever connects first.
  const PeerGate* channel_gate = nullptr;
  // When set, makes each admitted connection instead of a Connection (broker routes).
  std::function<std::unique_ptr<RelayedConnection>(base::UniqueFd, ConnectionOwner*)>
      make_connection;
};

class Relay final : public IoHandler, private ConnectionOwner {
 public:
  struct Stats {
    uint64_t accepted = 0;       // every accepted connection, shed ones included
    uint64_t dialed = 0;         // connections that dialled the target (closed ones)
    uint64_t undialed = 0;       // closed without a dial: probes, silent clients, hello refusals
    uint64_t hello_refused = 0;  // of those, refused by the ClientHello check
    uint64_t shed = 0;           // closed at once by a limit
    uint64_t refused = 0;        // handoff mode: refused channels, messages, listeners
    uint64_t spliced_bytes = 0;  // bytes closed connections moved with splice(2), not copied
  };

  // Takes ownership of `listener`, a listening non-blocking socket (Endpoint::Listen), and
  // starts watching it at once.
  static base::Result<std::unique_ptr<Relay>> Create(EventLoop* loop, base::UniqueFd listener,
                                                     RelayOptions options);
  // Closes every open connection (recorded as "shutdown") and stops listening.
  ~Relay();
  Relay(const Relay&) = delete;
  Relay& operator=(const Relay&) = delete;

  [[nodiscard]] size_t active_connections() const { return connections_.size(); }
  [[nodiscard]] const Stats& stats() const { return stats_; }
  [[nodiscard]] const Endpoint& target() const { return options_.target; }
  // Handoff mode: whether the route's TCP listener has been handed over and adopted.
  [[nodiscard]] bool has_adopted_listener() const { return adopted_.get() >= 0; }

  void OnIoEvents(uint32_t events) override;  // the listener is readable

 private:
  // Handoff mode: the adopted TCP listener's registration, forwarding to AcceptFrom.
  class AdoptedWatch final : public IoHandler {
   public:
    explicit AdoptedWatch(Relay* relay) : relay_(relay) {}
    void OnIoEvents(uint32_t /*events*/) override {
      relay_->AcceptFrom(relay_->adopted_.get(), /*channels=*/false);
    }

   private:
    Relay* relay_;
  };

  Relay(EventLoop* loop, base::UniqueFd listener, RelayOptions options, bool tcp_listener);

  // Accepts a batch from the listening socket `fd`: connections to serve, or (`channels`,
  // handoff mode's route socket) handoff channels.
  void AcceptFrom(int fd, bool channels);
  // Handoff mode: takes the channel (the first connection), refuses any later one.
  void TakeChannel(base::UniqueFd fd);
  void ReceiveHandoffs();
  void Adopt(base::UniqueFd listener);
  void CloseChannel();
  void Refuse(int err);
  // A new connection, accepted or handed over: admitted or shed by the connection limit.
  void Take(base::UniqueFd fd);
  void Admit(base::UniqueFd fd);
  void Shed(base::UniqueFd fd);
  // Out of fds while accepting from `fd`, channels (`channels`) or connections.
  void OnOutOfFds(int fd, bool channels);
  // Stops watching every listening socket for a moment.
  void PauseAccepting();
  [[nodiscard]] bool WatchListeners();
  void Report(const ConnectionRecord& record);
  void OnConnectionClosed(RelayedConnection* connection, const ConnectionRecord& record) override;

  EventLoop* loop_;
  base::UniqueFd listener_;  // closed once a handed-off listener is adopted
  // What the reserve fd duplicates: the listener, or after the handoff the adopted one.
  [[nodiscard]] int ReserveSource() const { return listener_ ? listener_.get() : adopted_.get(); }
  RelayOptions options_;
  bool tcp_listener_;
  base::UniqueFd channel_;      // handoff mode: the supervisor's channel while it is open
  bool channel_taken_ = false;  // handoff mode: the one channel was accepted (maybe closed)
  base::UniqueFd adopted_;      // handoff mode: the route's TCP listener, once handed over
  AdoptedWatch adopted_watch_{this};
  base::UniqueFd reserve_fd_;  // given up to accept-and-close when fds run out
  bool shutting_down_ = false;
  EventLoop::TimerId resume_timer_;
  BufferPool pool_;  // before connections_: destroyed after them
  bool splice_;      // SIGPIPE ignored when the relay was made: bulk flows may splice(2)
  std::unordered_map<RelayedConnection*, std::unique_ptr<RelayedConnection>> connections_;
  Stats stats_;
};

}  // namespace sbx::relay
