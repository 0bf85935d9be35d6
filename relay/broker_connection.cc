#include "relay/broker_connection.h"

#include <openssl/err.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string_view>

#include <fmt/format.h>

namespace sbx::relay {

namespace {

std::string_view ReasonPhrase(int status) {
  switch (status) {
    case 400:
      return "Bad Request";
    case 417:
      return "Expectation Failed";
    case 421:
      return "Misdirected Request";
    case 431:
      return "Request Header Fields Too Large";
    case 501:
      return "Not Implemented";
    case 502:
      return "Bad Gateway";
    default:
      return "Error";
  }
}

EndReason DialFailure(int err) {
  switch (err) {
    case ECONNREFUSED:
      return EndReason::kUpstreamRefused;
    case ETIMEDOUT:
      return EndReason::kUpstreamTimeout;
    case ENETUNREACH:
    case EHOSTUNREACH:
      return EndReason::kUpstreamUnreachable;
    default:
      return EndReason::kUpstreamError;
  }
}

}  // namespace

std::unique_ptr<BrokerConnection> BrokerConnection::Make(EventLoop* loop, const BrokerRoute* route,
                                                         base::UniqueFd downstream,
                                                         ConnectionOwner* owner) {
  auto queue = SecretQueue::Make(BrokerRequestRewriter::kHeadRoom + route->limits.buffer_bytes);
  if (!queue) return nullptr;
  return std::unique_ptr<BrokerConnection>(
      new BrokerConnection(loop, route, std::move(downstream), owner, std::move(*queue)));
}

BrokerConnection::BrokerConnection(EventLoop* loop, const BrokerRoute* route,
                                   base::UniqueFd downstream, ConnectionOwner* owner,
                                   SecretQueue up_out)
    : loop_(loop),
      route_(route),
      owner_(owner),
      down_(this, false),
      up_(this, true),
      rewriter_(route->host, route->header,
                route->secret != nullptr ? route->secret->value() : std::string_view()),
      in_(std::make_unique<char[]>(route->limits.buffer_bytes)),
      up_out_(std::move(up_out)),
      out_(std::make_unique<char[]>(route->limits.buffer_bytes)) {
  down_.fd = std::move(downstream);
}

BrokerConnection::~BrokerConnection() {
  if (phase_ != Phase::kClosed) Close(EndReason::kShutdown, 0, true);
}

base::Status BrokerConnection::Start() {
  last_activity_ = loop_->Now();
  if (auto watched = loop_->Watch(down_.fd.get(), EPOLLIN, &down_); !watched) return watched;
  down_.watched = EPOLLIN;
  ArmTimer();
  return {};
}

void BrokerConnection::Abort(EndReason reason) { Close(reason, 0, true); }

void BrokerConnection::OnEvents(bool upstream, uint32_t events) {
  if (phase_ == Phase::kClosed) return;
  Touch();
  if (!upstream && (events & (EPOLLERR | EPOLLHUP)) != 0) {
    // The agent is gone both ways: nothing it asked for can still reach it.
    Close(EndReason::kReset, TakeSocketError(down_.fd.get()), true);
    return;
  }
  if (upstream && phase_ == Phase::kConnecting) {
    FinishConnect();
    if (phase_ == Phase::kClosed) return;
  }
  if (upstream && (events & (EPOLLERR | EPOLLHUP)) != 0 && phase_ == Phase::kOpen) {
    // Read what is left (ReadUp sees the end); stop watching, or the hang-up repeats.
    SetInterest(up_, 0);
  }
  Advance();
}

void BrokerConnection::Advance() {
  bool progress = true;
  while (progress && phase_ != Phase::kClosed) {
    progress = ReadDown();
    if (phase_ == Phase::kClosed) return;
    progress = FeedRequest() || progress;
    if (phase_ == Phase::kClosed) return;
    if (phase_ == Phase::kHandshaking) progress = Handshake() || progress;
    if (phase_ == Phase::kOpen) {
      progress = WriteUp() || progress;
      if (phase_ == Phase::kClosed) return;
      progress = ReadUp() || progress;
      if (phase_ == Phase::kClosed) return;
    }
    progress = WriteDown() || progress;
    if (phase_ == Phase::kClosed) return;
    const bool drained = out_head_ == out_tail_;
    if (drained && close_when_drained_) {
      Close(EndReason::kClosed, 0, false);
      return;
    }
    if (drained && down_eof_ && in_size_ == 0 && !request_open_ && !rewriter_.started()) {
      Close(EndReason::kClosed, 0, false);
      return;
    }
  }
  if (phase_ != Phase::kClosed) UpdateInterest();
}

bool BrokerConnection::ReadDown() {
  const size_t cap = route_->limits.buffer_bytes;
  if (down_eof_ || close_when_drained_ || in_size_ == cap) return false;
  ssize_t n = ::read(down_.fd.get(), in_.get() + in_size_, cap - in_size_);
  if (n > 0) {
    in_size_ += static_cast<size_t>(n);
    return true;
  }
  if (n == 0) {
    down_eof_ = true;
    return true;
  }
  if (errno == EAGAIN || errno == EINTR) return false;
  Close(EndReason::kReset, errno, true);
  return false;
}

bool BrokerConnection::FeedRequest() {
  bool progress = false;
  if (in_size_ > 0 && !close_when_drained_) {
    size_t taken = rewriter_.Feed(std::string_view(in_.get(), in_size_), up_out_);
    if (taken > 0) {
      std::memmove(in_.get(), in_.get() + taken, in_size_ - taken);
      in_size_ -= taken;
      progress = true;
    }
  }
  if (down_eof_ && in_size_ == 0) rewriter_.FinishInput();
  const auto state = rewriter_.state();
  if (state == BrokerRequestRewriter::State::kRefused) {
    OnRefused();
    return true;
  }
  if (!request_open_ && (state == BrokerRequestRewriter::State::kBody ||
                         state == BrokerRequestRewriter::State::kComplete)) {
    // A head passed the checks and was written: this request is on its way.
    request_open_ = true;
    response_bytes_ = 0;
    request_start_ = std::chrono::system_clock::now();
    request_started_ = loop_->Now();
    watcher_.ExpectHeadResponse(rewriter_.is_head_request());
    if (phase_ == Phase::kIdle) Dial();
    progress = true;
  }
  return progress;
}

void BrokerConnection::Dial() {
  auto fd = route_->target.ConnectNonBlocking();
  if (!fd) {
    FailUpstream(DialFailure(fd.error().err()), fd.error().err(), {});
    return;
  }
  up_.fd = std::move(*fd);
  SetNoDelay(up_.fd.get());
  phase_ = Phase::kConnecting;
  connect_started_ = loop_->Now();
  SetInterest(up_, EPOLLOUT);
  loop_->CancelTimer(timer_);
  ArmTimer();
}

void BrokerConnection::FinishConnect() {
  if (int err = TakeSocketError(up_.fd.get()); err != 0) {
    FailUpstream(DialFailure(err), err, {});
    return;
  }
  auto ssl = MakeBrokerTls(route_->tls, up_.fd.get(), route_->host);
  if (!ssl) {
    FailUpstream(EndReason::kUpstreamTls, 0, ssl.error().Render());
    return;
  }
  ssl_ = std::move(*ssl);
  phase_ = Phase::kHandshaking;
}

bool BrokerConnection::Handshake() {
  ERR_clear_error();
  int rc = SSL_do_handshake(ssl_.get());
  ssl_wants_read_ = ssl_wants_write_ = false;
  if (rc == 1) {
    phase_ = Phase::kOpen;
    return true;
  }
  int err = SSL_get_error(ssl_.get(), rc);
  if (err == SSL_ERROR_WANT_READ) {
    ssl_wants_read_ = true;
    return false;
  }
  if (err == SSL_ERROR_WANT_WRITE) {
    ssl_wants_write_ = true;
    return false;
  }
  FailUpstream(EndReason::kUpstreamTls, 0, BrokerTlsError(ssl_.get()));
  return false;
}

bool BrokerConnection::WriteUp() {
  bool progress = false;
  ssl_wants_write_ = false;
  while (!up_out_.empty()) {
    ERR_clear_error();
    std::string_view pending = up_out_.pending();
    int n = SSL_write(ssl_.get(), pending.data(),
                      static_cast<int>(std::min<size_t>(pending.size(), 1 << 20)));
    if (n > 0) {
      up_out_.Consume(static_cast<size_t>(n));
      progress = true;
      continue;
    }
    int err = SSL_get_error(ssl_.get(), n);
    if (err == SSL_ERROR_WANT_WRITE) {
      ssl_wants_write_ = true;
    } else if (err != SSL_ERROR_WANT_READ) {
      RecordRequest(EndReason::kReset, errno);
      Close(EndReason::kReset, errno, true);
    }
    break;
  }
  return progress;
}

bool BrokerConnection::ReadUp() {
  bool progress = false;
  const size_t cap = route_->limits.buffer_bytes;
  while (!up_eof_) {
    if (out_tail_ == cap && out_head_ > 0) {
      std::memmove(out_.get(), out_.get() + out_head_, out_tail_ - out_head_);
      out_tail_ -= out_head_;
      out_head_ = 0;
    }
    if (out_tail_ == cap) break;
    ERR_clear_error();
    int n = SSL_read(ssl_.get(), out_.get() + out_tail_, static_cast<int>(cap - out_tail_));
    if (n > 0) {
      std::string_view bytes(out_.get() + out_tail_, static_cast<size_t>(n));
      out_tail_ += static_cast<size_t>(n);
      response_bytes_ += static_cast<uint64_t>(n);
      progress = true;
      // Bytes the upstream sends while no request waits, or that are no response, end it.
      if (!request_open_ || !watcher_.Watch(bytes)) {
        if (request_open_) RecordRequest(EndReason::kReset, EPROTO);
        close_when_drained_ = true;
        up_eof_ = true;
        break;
      }
      if (watcher_.TakeComplete()) OnResponseComplete();
      continue;
    }
    int err = SSL_get_error(ssl_.get(), n);
    if (err == SSL_ERROR_WANT_READ) break;
    if (err == SSL_ERROR_WANT_WRITE) {
      ssl_wants_write_ = true;
      break;
    }
    // The upstream closed (close_notify, or a plain EOF) or failed.
    up_eof_ = true;
    progress = true;
    if (request_open_) {
      if (watcher_.WatchEnd() && watcher_.TakeComplete()) {
        OnResponseComplete();
      } else if (response_bytes_ == 0) {
        FailUpstream(EndReason::kReset, ECONNRESET, {});
        return true;
      } else {
        RecordRequest(EndReason::kReset, ECONNRESET);
      }
    }
    close_when_drained_ = true;
  }
  return progress;
}

bool BrokerConnection::WriteDown() {
  bool progress = false;
  while (out_head_ < out_tail_) {
    ssize_t n = ::send(down_.fd.get(), out_.get() + out_head_, out_tail_ - out_head_,
                       MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      out_head_ += static_cast<size_t>(n);
      progress = true;
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) break;
    if (request_open_) RecordRequest(EndReason::kReset, errno);
    Close(EndReason::kReset, errno, true);
    return false;
  }
  if (out_head_ == out_tail_) out_head_ = out_tail_ = 0;
  return progress;
}

void BrokerConnection::OnResponseComplete() {
  RecordRequest(EndReason::kAnswered);
  // Only a request whose bytes all went out may be followed by the next one on this
  // connection; a response that came before the request ended leaves the two out of step.
  if (rewriter_.state() == BrokerRequestRewriter::State::kComplete && rewriter_.keep_alive() &&
      watcher_.keep_alive()) {
    rewriter_.NextMessage();
  } else {
    close_when_drained_ = true;
  }
}

void BrokerConnection::OnRefused() {
  const BrokerRefusal refusal = rewriter_.refusal();
  ConnectionRecord record;
  record.start = request_open_ ? request_start_ : std::chrono::system_clock::now();
  record.bytes_up = rewriter_.bytes_in();
  record.end = EndReason::kRequestRefused;
  record.method = rewriter_.method();
  record.path = rewriter_.path();
  record.refusal = std::string(BrokerRefusalName(refusal));
  if (route_->on_record) route_->on_record(record);
  const int status = RefusalStatus(refusal);
  if (request_open_ || status == 0) {
    // The head already went on (a body that broke): the upstream must see the connection
    // end, never what could pass for the end of the message.
    request_open_ = false;
    Close(EndReason::kReset, 0, true);
    return;
  }
  Answer(status);
}

void BrokerConnection::FailUpstream(EndReason reason, int err, std::string detail) {
  RecordRequest(reason, err, std::move(detail));
  if (response_bytes_ == 0 && out_head_ == out_tail_) {
    Answer(502);
  } else {
    Close(reason, err, true);
  }
  if (phase_ != Phase::kClosed && up_.fd) {
    SetInterest(up_, 0);
    ssl_.reset();
    up_.fd.reset();
    phase_ = Phase::kIdle;
    up_eof_ = true;
  }
}

void BrokerConnection::Answer(int status) {
  std::string answer =
      fmt::format("HTTP/1.1 {} {}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", status,
                  ReasonPhrase(status));
  out_head_ = out_tail_ = 0;
  std::memcpy(out_.get(), answer.data(), std::min(answer.size(), route_->limits.buffer_bytes));
  out_tail_ = std::min(answer.size(), route_->limits.buffer_bytes);
  close_when_drained_ = true;
  in_size_ = 0;
}

void BrokerConnection::RecordRequest(EndReason reason, int err, std::string detail) {
  if (!request_open_) return;
  request_open_ = false;
  ConnectionRecord record;
  record.start = request_start_;
  record.duration =
      std::chrono::duration_cast<std::chrono::milliseconds>(loop_->Now() - request_started_);
  record.bytes_up = rewriter_.bytes_in();
  record.bytes_down = response_bytes_;
  record.end = reason;
  record.err = err;
  record.dialed = true;
  record.method = rewriter_.method();
  record.path = rewriter_.path();
  record.status = reason == EndReason::kAnswered ? watcher_.status() : 0;
  record.detail = std::move(detail);
  if (route_->on_record) route_->on_record(record);
}

void BrokerConnection::SetInterest(Side& side, uint32_t events) {
  if (!side.fd || side.watched == events) return;
  if (events == 0) {
    loop_->Unwatch(side.fd.get());
  } else if (side.watched == 0) {
    if (!loop_->Watch(side.fd.get(), events, &side)) {
      Close(EndReason::kReset, ENOMEM, true);
      return;
    }
  } else if (!loop_->Modify(side.fd.get(), events, &side)) {
    Close(EndReason::kReset, ENOMEM, true);
    return;
  }
  side.watched = events;
}

void BrokerConnection::UpdateInterest() {
  uint32_t down = 0;
  if (!down_eof_ && !close_when_drained_ && in_size_ < route_->limits.buffer_bytes) {
    down |= EPOLLIN;
  }
  if (out_head_ < out_tail_) down |= EPOLLOUT;
  SetInterest(down_, down);
  if (phase_ == Phase::kClosed || !up_.fd) return;
  uint32_t up = 0;
  switch (phase_) {
    case Phase::kConnecting:
      up = EPOLLOUT;
      break;
    case Phase::kHandshaking:
      up = ssl_wants_write_ ? EPOLLOUT : EPOLLIN;
      break;
    case Phase::kOpen:
      if (!up_eof_ && out_tail_ < route_->limits.buffer_bytes) up |= EPOLLIN;
      if (ssl_wants_write_ && !up_eof_) up |= EPOLLOUT;
      break;
    case Phase::kIdle:
    case Phase::kClosed:
      break;
  }
  SetInterest(up_, up);
}

void BrokerConnection::ArmTimer() {
  const auto delay = phase_ == Phase::kConnecting || phase_ == Phase::kHandshaking
                         ? route_->limits.connect_timeout
                         : route_->limits.idle_timeout;
  timer_ = loop_->AddTimer(delay, [this] {
    timer_ = {};
    OnTimer();
  });
}

void BrokerConnection::OnTimer() {
  if (phase_ == Phase::kClosed) return;
  const auto now = loop_->Now();
  if ((phase_ == Phase::kConnecting || phase_ == Phase::kHandshaking) &&
      now - connect_started_ >= route_->limits.connect_timeout) {
    FailUpstream(EndReason::kUpstreamTimeout, ETIMEDOUT, {});
    if (phase_ != Phase::kClosed) {
      Advance();
      ArmTimer();
    }
    return;
  }
  if (now - last_activity_ >= route_->limits.idle_timeout) {
    RecordRequest(EndReason::kIdleTimeout);
    Close(EndReason::kIdleTimeout, 0, true);
    return;
  }
  ArmTimer();
}

void BrokerConnection::Close(EndReason reason, int err, bool reset) {
  if (phase_ == Phase::kClosed) return;
  RecordRequest(reason, err);
  phase_ = Phase::kClosed;
  loop_->CancelTimer(timer_);
  for (Side* side : {&down_, &up_}) {
    if (!side->fd) continue;
    if (side->watched != 0) loop_->UnwatchBeforeClose(side->fd.get());
    side->watched = 0;
    if (reset) SetResetOnClose(side->fd.get());
  }
  ssl_.reset();
  up_.fd.reset();
  down_.fd.reset();
  ConnectionRecord record;
  record.end = EndReason::kProbe;  // the requests were recorded one by one
  record.err = err;
  owner_->OnConnectionClosed(this, record);
}

}  // namespace sbx::relay
