// BrokerConnection: one agent connection on a broker route (docs/tunnel.md). The agent
// speaks plain HTTP/1.1; each request is checked and written anew (BrokerRequestRewriter:
// the route's Host, the route's secret in its header, no hop-by-hop header), then sent over
// TLS (BrokerTls) to the route's pinned upstream. The response is passed back as it comes
// (BrokerResponseWatcher only follows where it ends), so chunked and server-sent-event
// streams, 100 Continue and large bodies flow with at most one buffer each way in memory.
//
// Requests are served one at a time on one upstream connection: the next request's bytes
// are parsed only once the previous response ended (pipelined bytes wait in the buffer).
// The upstream is dialled at the first request whose head passed the checks, never before:
// a refused first request reaches nothing. A refused request is answered by the relay
// (RefusalStatus, "Connection: close") and the connection closed; a dial or TLS failure is
// answered 502 when nothing of a response was sent yet.
//
// One ledger record per request (method, path, status, bytes; kAnswered, kRequestRefused,
// kUpstream*, kReset, kIdleTimeout, kShutdown), given to BrokerRoute::on_record; the
// connection itself is reported to the owner as never dialled (nothing more is written).
//
// Sockets are level-triggered, each watched for exactly what the connection can take now,
// so a full buffer on one side stops reading the other without a busy loop.
// Caller: the loop thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "base/unique_fd.h"
#include "relay/broker_memory.h"
#include "relay/broker_request.h"
#include "relay/broker_response.h"
#include "relay/broker_tls.h"
#include "relay/connection.h"
#include "relay/endpoint.h"
#include "relay/event_loop.h"
#include "relay/limits.h"

namespace sbx::relay {

// What every connection of one broker route shares; outlives them.
struct BrokerRoute {
  std::string host;                      // lower case, what Host must name, SNI
  std::string header;                    // the header the secret goes into; empty: none
  const BrokerSecret* secret = nullptr;  // with `header`
  SSL_CTX* tls = nullptr;
  Endpoint target = Endpoint::Tcp(SocketAddress());
  Limits limits;
  std::function<void(const ConnectionRecord&)> on_record;
};

class BrokerConnection final : public RelayedConnection {
 public:
  // nullptr when its buffers can't be had (the caller sheds the connection).
  static std::unique_ptr<BrokerConnection> Make(EventLoop* loop, const BrokerRoute* route,
                                                base::UniqueFd downstream, ConnectionOwner* owner);
  ~BrokerConnection() override;
  BrokerConnection(const BrokerConnection&) = delete;
  BrokerConnection& operator=(const BrokerConnection&) = delete;

  base::Status Start() override;
  void Abort(EndReason reason) override;

 private:
  enum class Phase { kIdle, kConnecting, kHandshaking, kOpen, kClosed };

  class Side final : public IoHandler {
   public:
    Side(BrokerConnection* connection, bool upstream)
        : connection_(connection), upstream_(upstream) {}
    void OnIoEvents(uint32_t events) override { connection_->OnEvents(upstream_, events); }
    base::UniqueFd fd;
    uint32_t watched = 0;  // the registered events; 0: not watched

   private:
    BrokerConnection* connection_;
    bool upstream_;
  };

  BrokerConnection(EventLoop* loop, const BrokerRoute* route, base::UniqueFd downstream,
                   ConnectionOwner* owner, SecretQueue up_out);

  void OnEvents(bool upstream, uint32_t events);
  void Advance();
  bool ReadDown();
  bool FeedRequest();
  bool WriteUp();
  bool ReadUp();
  bool WriteDown();
  void Dial();
  void FinishConnect();
  bool Handshake();
  void OnResponseComplete();
  void OnRefused();
  // A failure of the upstream while a request waits: 502 when nothing was answered yet.
  void FailUpstream(EndReason reason, int err, std::string detail);
  void Answer(int status);
  void RecordRequest(EndReason reason, int err = 0, std::string detail = {});
  void UpdateInterest();
  void SetInterest(Side& side, uint32_t events);
  void ArmTimer();
  void OnTimer();
  void Close(EndReason reason, int err, bool reset);
  void Touch() { last_activity_ = loop_->Now(); }

  EventLoop* loop_;
  const BrokerRoute* route_;
  ConnectionOwner* owner_;
  Phase phase_ = Phase::kIdle;
  Side down_;
  Side up_;
  SslPtr ssl_;
  bool ssl_wants_write_ = false;
  bool ssl_wants_read_ = false;
  BrokerRequestRewriter rewriter_;
  BrokerResponseWatcher watcher_;
  std::unique_ptr<char[]> in_;  // from the agent, not yet parsed
  size_t in_size_ = 0;
  SecretQueue up_out_;           // rewritten requests, for TLS
  std::unique_ptr<char[]> out_;  // from the upstream (or the relay's own answer), to the agent
  size_t out_head_ = 0;
  size_t out_tail_ = 0;
  bool down_eof_ = false;
  bool up_eof_ = false;
  bool close_when_drained_ = false;
  bool request_open_ = false;  // a request's head was written, its response not yet done
  uint64_t response_bytes_ = 0;
  std::chrono::system_clock::time_point request_start_;
  EventLoop::Clock::time_point request_started_;
  EventLoop::Clock::time_point last_activity_;
  EventLoop::Clock::time_point connect_started_;
  EventLoop::TimerId timer_;
};

}  // namespace sbx::relay
