// Connection: one relayed client connection, two Flows between a downstream socket (the one
// the relay accepted) and an upstream socket (the one it dials).
//
// Lifecycle:
//   kAwaitingData   DialPolicy::kOnFirstByte: only the downstream is watched. The upstream is
//                   dialled LAZILY, when the first byte arrives: a connect-and-close never
//                   costs an upstream connection, but a server-speaks-first protocol would
//                   wait for a client byte for ever.
//   kAwaitingHello  DialPolicy::kAfterClientHello: the bytes the client sends are kept, not
//                   forwarded, until they hold a whole TLS ClientHello (ClientHelloReader).
//                   Its SNI must name ConnectionConfig::server_name; then the upstream is
//                   dialled and gets exactly those bytes. Anything else (another protocol, a
//                   broken or oversized hello, no SNI, another name, silence past
//                   Limits::hello_timeout) closes the connection with a reset, never dialled.
//   (none)          DialPolicy::kAtAccept: the dial starts in Start(), so the upstream can
//                   greet first; a dial that fails resets the client at once.
//   kConnecting     TCP dial in progress, bytes from downstream keep filling the upward buffer
//                   (bounded), the connect timer runs. A Unix dial completes inside connect(2)
//                   and goes straight to kOpen, forwarding the first bytes at once.
//   kOpen           both Flows pump; the idle timer runs.
//   kClosed         sockets closed and the owner told; the object itself is deleted later by
//                   the loop (deferred destruction: never inside its own callback).
// EOF is passed on per direction after the buffer drained (half-close); the pair closes when
// both directions are finished, or at once on an error, which is passed on as a reset (RST
// on TCP sockets). Bulk directions may splice(2) through a pipe of their own (see Flow): up
// to 4 more fds per connection while it moves bulk, when the owner allows it.
// Caller: the loop thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "base/error.h"
#include "base/unique_fd.h"
#include "relay/client_hello.h"
#include "relay/endpoint.h"
#include "relay/event_loop.h"
#include "relay/flow.h"
#include "relay/limits.h"

namespace sbx::relay {

// How a connection ended; the ledger's "end" field.
enum class EndReason {
  kClosed,               // both directions finished normally
  kProbe,                // closed before sending a byte: never dialled, never recorded
  kUpstreamRefused,      // the target refused (ECONNREFUSED, no listener on a Unix path)
  kUpstreamTimeout,      // the dial took longer than Limits::connect_timeout
  kUpstreamUnreachable,  // no route to the target (ENETUNREACH, EHOSTUNREACH)
  kUpstreamError,        // any other dial failure
  kReset,                // a read, write or shutdown failed on an open pair (RST, EPIPE)
  kIdleTimeout,          // no byte in either direction for Limits::idle_timeout
  kLimit,                // shed: too many connections, or out of file descriptors
  kShutdown,             // the relay was torn down while the connection was open
  kRefused,              // a handoff message or channel refused (relay/handoff.h); never dialled
  // Refused by the ClientHello check (DialPolicy::kAfterClientHello); never dialled:
  kNotTls,        // the first bytes are not a TLS handshake record
  kBadHello,      // TLS records, but no well-formed ClientHello within the size bound
  kNoSni,         // a well-formed ClientHello without a server name
  kSniMismatch,   // a well-formed ClientHello naming another host (ConnectionRecord::sni)
  kHelloTimeout,  // no whole ClientHello within Limits::hello_timeout
  // Broker routes (relay/broker_connection.h), one record per request:
  kAnswered,        // the upstream's response was passed on whole
  kRequestRefused,  // the request was refused (ConnectionRecord::refusal); never sent
  kUpstreamTls,     // the TLS handshake or the certificate check failed (::detail)
};
std::string_view EndReasonName(EndReason reason);
// The ends above that the ClientHello check gives.
bool IsHelloRefusal(EndReason reason);

// When a connection dials its target.
enum class DialPolicy {
  kOnFirstByte,       // at the first byte from downstream (the generic relay)
  kAtAccept,          // at once, in Start(): the upstream may speak first (tcp routes)
  kAfterClientHello,  // after a ClientHello naming ConnectionConfig::server_name (tls routes)
};

// What the ledger records about one connection.
struct ConnectionRecord {
  std::chrono::system_clock::time_point start;
  std::chrono::milliseconds duration{0};
  uint64_t bytes_up = 0;    // delivered to the upstream
  uint64_t bytes_down = 0;  // delivered to the downstream
  EndReason end = EndReason::kClosed;
  int err = 0;  // the errno behind `end`, when there is one
  bool dialed = false;
  std::string sni;  // kSniMismatch: the name asked for instead (<= 255 bytes, non-ASCII as '?')
  // Broker routes: the request's method and path (no query), its response's status, why it
  // was refused (BrokerRefusalName), a TLS error's text. Never a header value.
  std::string method;
  std::string path;
  int status = 0;
  std::string refusal;
  std::string detail;
  // Of bytes_up + bytes_down, those moved by splice(2) (Flow splice mode); not in the ledger.
  uint64_t bytes_spliced = 0;
};

// What a Relay holds per accepted connection: a Connection, or a route's own kind of one
// (RelayOptions::make_connection).
class RelayedConnection : public Closable {
 public:
  // Starts watching; on failure nothing is watched and the caller drops the connection.
  virtual base::Status Start() = 0;
  // Closes now with `reason` (the owner is told, as for any close).
  virtual void Abort(EndReason reason) = 0;
};

// Told when a connection has closed its sockets. Called from inside the connection's own
// callback: the owner must hand the object to EventLoop::DestroyLater(), not delete it.
class ConnectionOwner {
 public:
  virtual void OnConnectionClosed(RelayedConnection* connection,
                                  const ConnectionRecord& record) = 0;

 protected:
  ~ConnectionOwner() = default;
};

struct ConnectionConfig {
  EventLoop* loop = nullptr;         // outlives the connection
  const Endpoint* target = nullptr;  // what to dial; outlives the connection
  const Limits* limits = nullptr;    // outlives the connection
  ConnectionOwner* owner = nullptr;  // outlives the connection
  BufferPool* pool = nullptr;        // optional, of limits->buffer_bytes; outlives it
  bool splice = false;               // Flow splice mode for bulk: only if SIGPIPE is ignored
  DialPolicy dial = DialPolicy::kOnFirstByte;
  std::string_view server_name;  // kAfterClientHello: the SNI to require; outlives it
};

class Connection final : public RelayedConnection {
 public:
  // Takes ownership of the accepted, non-blocking `downstream` socket.
  Connection(const ConnectionConfig& config, base::UniqueFd downstream);
  ~Connection() override;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Watches the downstream and arms the idle (or hello) timer; with DialPolicy::kAtAccept
  // also dials. On failure nothing is watched and the caller drops the connection. A dial that
  // fails at once closes the connection inside Start() (the owner is told, as for any close):
  // the owner must already hold it.
  base::Status Start() override;
  // Closes now with `reason` (the owner is told, as for any close).
  void Abort(EndReason reason) override;

  [[nodiscard]] bool closed() const { return state_ == State::kClosed; }

 private:
  enum class State { kAwaitingData, kAwaitingHello, kConnecting, kOpen, kClosed };
  enum class CloseMode { kGraceful, kReset };

  // One socket of the pair, registered with the loop as its own handler.
  class Side final : public IoHandler {
   public:
    Side(Connection* connection, bool upstream) : connection_(connection), upstream_(upstream) {}
    void OnIoEvents(uint32_t events) override;

    base::UniqueFd fd;
    SocketState io;
    bool out_watched = false;  // EPOLLOUT is in the registration

   private:
    Connection* connection_;
    bool upstream_;
  };

  void OnDownstreamEvents();
  // kAwaitingHello: reads what arrived and judges the hello once it is whole.
  void ReadHello();
  void OnUpstreamEvents(uint32_t events);
  void Dial();
  void FinishConnect(uint32_t events);
  void Open(bool upstream_readable);
  void Pump();
  // Adds EPOLLOUT to the watch of a socket whose write found it full, once per socket.
  void WatchBlockedWrites();
  void ArmTimer();
  void OnTimer();
  void Close(EndReason reason, int err, CloseMode mode);

  EventLoop* loop_;
  const Endpoint* target_;
  const Limits* limits_;
  ConnectionOwner* owner_;
  DialPolicy dial_policy_;
  std::string_view server_name_;
  std::unique_ptr<ClientHelloReader> hello_;  // kAwaitingHello only
  State state_ = State::kAwaitingData;
  bool dialed_ = false;
  Side down_;
  Side up_;
  Flow upward_;    // downstream -> upstream
  Flow downward_;  // upstream -> downstream
  EventLoop::TimerId timer_;
  EventLoop::Clock::time_point last_activity_;
  EventLoop::Clock::time_point started_;
  std::chrono::system_clock::time_point started_wall_;
};

}  // namespace sbx::relay
