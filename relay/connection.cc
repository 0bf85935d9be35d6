#include "relay/connection.h"

#include <sys/epoll.h>

#include <algorithm>
#include <cerrno>

namespace sbx::relay {
namespace {

// Edge-triggered: the Flows track readiness themselves. EPOLLOUT is left out until a write
// first finds the socket full: a socket starts writable, and with EPOLLOUT watched every read
// by the peer of a Unix socket (and the registration itself) raises a write-space event, an
// extra loop iteration per hop for request/response traffic. Once added it stays, so a
// connection costs at most one epoll_ctl(MOD) per socket after it is set up.
constexpr uint32_t kSocketEvents = EPOLLIN | EPOLLRDHUP | EPOLLET;
constexpr uint32_t kSocketEventsWithOut = kSocketEvents | EPOLLOUT;

EndReason DialFailureReason(int err) {
  switch (err) {
    case ECONNREFUSED:
    case ENOENT:  // a Unix target path with nothing bound to it
      return EndReason::kUpstreamRefused;
    case ETIMEDOUT:
      return EndReason::kUpstreamTimeout;
    case ENETUNREACH:
    case EHOSTUNREACH:
    case ENETDOWN:
    case EHOSTDOWN:
      return EndReason::kUpstreamUnreachable;
    case EMFILE:
    case ENFILE:
    case ENOBUFS:
    case ENOMEM:
    case EAGAIN:  // a Unix target whose backlog is full
      return EndReason::kLimit;
    default:
      return EndReason::kUpstreamError;
  }
}

}  // namespace

std::string_view EndReasonName(EndReason reason) {
  switch (reason) {
    case EndReason::kClosed:
      return "closed";
    case EndReason::kProbe:
      return "probe";
    case EndReason::kUpstreamRefused:
      return "upstream-refused";
    case EndReason::kUpstreamTimeout:
      return "upstream-timeout";
    case EndReason::kUpstreamUnreachable:
      return "upstream-unreachable";
    case EndReason::kUpstreamError:
      return "upstream-error";
    case EndReason::kReset:
      return "reset";
    case EndReason::kIdleTimeout:
      return "idle-timeout";
    case EndReason::kLimit:
      return "limit";
    case EndReason::kShutdown:
      return "shutdown";
    case EndReason::kRefused:
      return "refused";
    case EndReason::kNotTls:
      return "not-tls";
    case EndReason::kBadHello:
      return "bad-hello";
    case EndReason::kNoSni:
      return "no-sni";
    case EndReason::kSniMismatch:
      return "sni-mismatch";
    case EndReason::kHelloTimeout:
      return "hello-timeout";
    case EndReason::kAnswered:
      return "answered";
    case EndReason::kRequestRefused:
      return "request-refused";
    case EndReason::kUpstreamTls:
      return "upstream-tls";
  }
  return "unknown";
}

bool IsHelloRefusal(EndReason reason) {
  switch (reason) {
    case EndReason::kNotTls:
    case EndReason::kBadHello:
    case EndReason::kNoSni:
    case EndReason::kSniMismatch:
    case EndReason::kHelloTimeout:
      return true;
    case EndReason::kClosed:
    case EndReason::kProbe:
    case EndReason::kUpstreamRefused:
    case EndReason::kUpstreamTimeout:
    case EndReason::kUpstreamUnreachable:
    case EndReason::kUpstreamError:
    case EndReason::kReset:
    case EndReason::kIdleTimeout:
    case EndReason::kLimit:
    case EndReason::kShutdown:
    case EndReason::kRefused:
    case EndReason::kAnswered:
    case EndReason::kRequestRefused:
    case EndReason::kUpstreamTls:
      return false;
  }
  return false;
}

Connection::Connection(const ConnectionConfig& config, base::UniqueFd downstream)
    : loop_(config.loop),
      target_(config.target),
      limits_(config.limits),
      owner_(config.owner),
      dial_policy_(config.dial),
      server_name_(config.server_name),
      down_(this, /*upstream=*/false),
      up_(this, /*upstream=*/true),
      upward_(config.limits->buffer_bytes, config.pool, config.splice),
      downward_(config.limits->buffer_bytes, config.pool, config.splice),
      last_activity_(EventLoop::Clock::now()),
      started_(last_activity_),
      started_wall_(std::chrono::system_clock::now()) {
  down_.fd = std::move(downstream);
  down_.io.fd = down_.fd.get();
  down_.io.short_io_drains = true;  // watched edge-triggered; see SocketState
}

Connection::~Connection() {
  // Normally the connection was closed (and so unregistered) long before; this covers a
  // connection dropped without Close, so the loop keeps no pointer into a dead object.
  if (state_ == State::kClosed) return;
  loop_->CancelTimer(timer_);
  // The fds close with the members right after.
  if (down_.fd) loop_->Unwatch(down_.fd.get());
  if (up_.fd) loop_->UnwatchBeforeClose(up_.fd.get());
}

base::Status Connection::Start() {
  if (auto watched = loop_->Watch(down_.fd.get(), kSocketEvents, &down_); !watched) {
    return watched;
  }
  down_.io.writable = true;  // a fresh socket has room; see kSocketEvents
  switch (dial_policy_) {
    case DialPolicy::kOnFirstByte:
      ArmTimer();
      break;
    case DialPolicy::kAfterClientHello:
      state_ = State::kAwaitingHello;
      // Bounded by the buffer too: the hello is held there until it is judged.
      hello_ = std::make_unique<ClientHelloReader>(
          std::min(kMaxClientHelloBytes, limits_->buffer_bytes));
      timer_ = loop_->AddTimer(limits_->hello_timeout, [this] { OnTimer(); });
      break;
    case DialPolicy::kAtAccept:
      Dial();  // a dial that fails at once closes the connection here
      break;
  }
  return {};
}

void Connection::Abort(EndReason reason) { Close(reason, 0, CloseMode::kReset); }

void Connection::Side::OnIoEvents(uint32_t events) {
  // A later event of the batch in which the pair closed: nothing left to do.
  if (connection_->closed()) return;
  // After a hang-up an EOF may follow the data with no further edge: read until it.
  if ((events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0) io.short_io_drains = false;
  if (upstream_) {
    connection_->OnUpstreamEvents(events);
    return;
  }
  // Errors and hang-ups count as ready: the next read or write reports what happened.
  if ((events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0) io.readable = true;
  if ((events & (EPOLLOUT | EPOLLHUP | EPOLLERR)) != 0) io.writable = true;
  connection_->OnDownstreamEvents();
}

void Connection::OnDownstreamEvents() {
  switch (state_) {
    case State::kAwaitingData:
      upward_.Fill(down_.io);
      if (upward_.error() != 0) {
        Close(EndReason::kProbe, upward_.error(), CloseMode::kReset);
      } else if (upward_.buffered() > 0) {
        last_activity_ = loop_->Now();
        Dial();
      } else if (upward_.eof()) {
        Close(EndReason::kProbe, 0, CloseMode::kGraceful);  // connect and close: a probe
      }
      return;
    case State::kAwaitingHello:
      ReadHello();
      return;
    case State::kConnecting:
      // Keep buffering (bounded) until the dial completes; an EOF waits in the Flow.
      upward_.Fill(down_.io);
      if (upward_.error() != 0) Close(EndReason::kReset, upward_.error(), CloseMode::kReset);
      return;
    case State::kOpen:
      Pump();
      return;
    case State::kClosed:
      return;
  }
}

void Connection::ReadHello() {
  upward_.Fill(down_.io);
  // Nothing has been written yet, so the Flow holds everything the client sent so far.
  HelloStatus status = hello_->Update(upward_.pending());
  EndReason refusal = EndReason::kBadHello;
  switch (status) {
    case HelloStatus::kIncomplete:
      if (upward_.error() != 0 || upward_.eof()) {
        // Gone before a whole hello: a connect-and-close is a probe, part of a hello is not.
        if (upward_.bytes_read() == 0) {
          Close(EndReason::kProbe, upward_.error(),
                upward_.error() != 0 ? CloseMode::kReset : CloseMode::kGraceful);
        } else {
          Close(EndReason::kBadHello, upward_.error(), CloseMode::kReset);
        }
      } else if (upward_.full()) {
        Close(EndReason::kBadHello, 0, CloseMode::kReset);  // more than the buffer holds
      }
      return;
    case HelloStatus::kComplete:
      if (!hello_->server_name()) {
        refusal = EndReason::kNoSni;
      } else if (!ServerNameMatches(*hello_->server_name(), server_name_)) {
        refusal = EndReason::kSniMismatch;  // Close() records the name
      } else {
        hello_.reset();
        last_activity_ = loop_->Now();
        Dial();  // the upstream gets the hello exactly as it came, from the Flow
        return;
      }
      break;
    case HelloStatus::kNotTls:
      refusal = EndReason::kNotTls;
      break;
    case HelloStatus::kMalformed:
    case HelloStatus::kTooLarge:
      refusal = EndReason::kBadHello;
      break;
  }
  // A reset: the client learns at once that it was refused, and nothing was dialled.
  Close(refusal, 0, CloseMode::kReset);
}

void Connection::OnUpstreamEvents(uint32_t events) {
  if (state_ == State::kConnecting) {
    FinishConnect(events);
    return;
  }
  if ((events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0) up_.io.readable = true;
  if ((events & (EPOLLOUT | EPOLLHUP | EPOLLERR)) != 0) up_.io.writable = true;
  Pump();
}

void Connection::Dial() {
  dialed_ = true;
  auto fd = target_->ConnectNonBlocking();
  if (!fd) {
    int err = fd.error().err();
    Close(DialFailureReason(err), err, CloseMode::kReset);
    return;
  }
  up_.fd = std::move(*fd);
  up_.io.fd = up_.fd.get();
  up_.io.short_io_drains = true;
  state_ = State::kConnecting;
  // A TCP dial reports its completion as EPOLLOUT; a Unix one is complete already.
  up_.out_watched = target_->is_tcp();
  uint32_t events = up_.out_watched ? kSocketEventsWithOut : kSocketEvents;
  if (auto watched = loop_->Watch(up_.io.fd, events, &up_); !watched) {
    Close(EndReason::kUpstreamError, watched.error().err(), CloseMode::kReset);
    return;
  }
  if (target_->is_unix()) {
    // A Unix connect completes (or fails) inside connect(2): the socket is open already, so
    // the first bytes go out now instead of one loop iteration later.
    loop_->CancelTimer(timer_);
    Open(/*upstream_readable=*/false);
    return;
  }
  // The idle timer gives way to the connect timer until the dial completes.
  loop_->CancelTimer(timer_);
  timer_ = loop_->AddTimer(limits_->connect_timeout, [this] { OnTimer(); });
}

void Connection::FinishConnect(uint32_t events) {
  // The first event after a non-blocking connect. A failed dial always raises EPOLLERR (and
  // EPOLLHUP); only then is SO_ERROR worth a syscall to learn why.
  if ((events & (EPOLLERR | EPOLLHUP)) != 0) {
    int err = TakeSocketError(up_.io.fd);
    if (err == 0) err = ECONNRESET;  // hung up right after connecting
    Close(DialFailureReason(err), err, CloseMode::kReset);
    return;
  }
  SetNoDelay(up_.io.fd);  // TCP: Unix targets never get here
  loop_->CancelTimer(timer_);
  Open((events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0);
}

void Connection::Open(bool upstream_readable) {
  state_ = State::kOpen;
  last_activity_ = loop_->Now();
  ArmTimer();
  up_.io.writable = true;
  up_.io.readable = upstream_readable;
  Pump();
}

void Connection::Pump() {
  bool moved = upward_.Pump(down_.io, up_.io);
  moved = downward_.Pump(up_.io, down_.io) || moved;
  if (moved) last_activity_ = loop_->Now();
  int err = upward_.error() != 0 ? upward_.error() : downward_.error();
  if (err != 0) {
    Close(EndReason::kReset, err, CloseMode::kReset);
  } else if (upward_.finished() && downward_.finished()) {
    Close(EndReason::kClosed, 0, CloseMode::kGraceful);
  } else {
    WatchBlockedWrites();
  }
}

void Connection::WatchBlockedWrites() {
  for (Side* side : {&down_, &up_}) {
    if (!side->fd || side->io.writable || side->out_watched) continue;
    // If room appeared since the write that found none, MOD sees the socket ready and queues
    // the event at once: no wake-up is lost.
    if (auto modified = loop_->Modify(side->io.fd, kSocketEventsWithOut, side); !modified) {
      Close(EndReason::kReset, modified.error().err(), CloseMode::kReset);
      return;
    }
    side->out_watched = true;
  }
}

void Connection::ArmTimer() {
  timer_ = loop_->AddTimer(limits_->idle_timeout, [this] { OnTimer(); });
}

void Connection::OnTimer() {
  timer_ = {};  // it has fired
  if (state_ == State::kAwaitingHello) {
    Close(EndReason::kHelloTimeout, 0, CloseMode::kReset);
    return;
  }
  if (state_ == State::kConnecting) {
    Close(EndReason::kUpstreamTimeout, ETIMEDOUT, CloseMode::kReset);
    return;
  }
  // The timer is not moved on every byte (that would cost a map update per read); it fires
  // once per idle period and re-arms for what is left when there was activity meanwhile.
  auto idle_for = EventLoop::Clock::now() - last_activity_;
  if (idle_for >= limits_->idle_timeout) {
    Close(EndReason::kIdleTimeout, 0, CloseMode::kGraceful);
    return;
  }
  timer_ = loop_->AddTimer(limits_->idle_timeout - idle_for, [this] { OnTimer(); });
}

void Connection::Close(EndReason reason, int err, CloseMode mode) {
  if (state_ == State::kClosed) return;
  state_ = State::kClosed;
  loop_->CancelTimer(timer_);
  for (Side* side : {&down_, &up_}) {
    if (!side->fd) continue;
    // Closed just below, and never duplicated: close(2) ends the epoll registration.
    loop_->UnwatchBeforeClose(side->fd.get());
    if (mode == CloseMode::kReset) SetResetOnClose(side->fd.get());
    side->fd.reset();
    side->io = SocketState{};
  }
  upward_.Discard();
  downward_.Discard();
  ConnectionRecord record;
  if (reason == EndReason::kSniMismatch && hello_ && hello_->server_name()) {
    // For the ledger: the agent's bytes, kept to printable ASCII so the line stays valid
    // JSON text whatever they are (a host name is ASCII anyway).
    record.sni = *hello_->server_name();
    for (char& c : record.sni) {
      if (c <= ' ' || c > '~') c = '?';
    }
  }
  hello_.reset();
  record.start = started_wall_;
  record.duration =
      std::chrono::duration_cast<std::chrono::milliseconds>(EventLoop::Clock::now() - started_);
  record.bytes_up = upward_.bytes_written();
  record.bytes_down = downward_.bytes_written();
  record.bytes_spliced = upward_.bytes_spliced() + downward_.bytes_spliced();
  record.end = reason;
  record.err = err;
  record.dialed = dialed_;
  owner_->OnConnectionClosed(this, record);
}

}  // namespace sbx::relay
