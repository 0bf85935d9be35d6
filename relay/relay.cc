#include "relay/relay.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <cerrno>

#include "relay/handoff.h"

namespace sbx::relay {
namespace {

// Connections taken per listener event. The listener is level-triggered, so what is left
// fires again on the next iteration: other routes and open connections get their turn.
constexpr int kAcceptBatch = 64;
// How long to stop accepting when even the reserve fd could not be taken back.
constexpr auto kAcceptPause = std::chrono::milliseconds(100);
// Drained Flow buffers kept for reuse per relay: enough for a few busy connections at a time,
// while idle connections hold none (bounded at kPooledBuffers x Limits::buffer_bytes).
constexpr size_t kPooledBuffers = 8;

base::UniqueFd DupReserve(int fd) { return base::UniqueFd(::fcntl(fd, F_DUPFD_CLOEXEC, 0)); }

}  // namespace

base::Result<std::unique_ptr<Relay>> Relay::Create(EventLoop* loop, base::UniqueFd listener,
                                                   RelayOptions options) {
  int domain = 0;
  socklen_t len = sizeof(domain);
  if (::getsockopt(listener.get(), SOL_SOCKET, SO_DOMAIN, &domain, &len) < 0) {
    return base::ErrnoError("Can't query listening socket of relay to", options.target.ToString());
  }
  bool tcp = domain == AF_INET || domain == AF_INET6;
  // Accepted sockets inherit TCP_NODELAY from the listener: one setsockopt for all of them.
  if (tcp) SetNoDelay(listener.get());
  std::unique_ptr<Relay> relay(new Relay(loop, std::move(listener), std::move(options), tcp));
  if (!relay->reserve_fd_) return base::ErrnoError("Can't reserve a file descriptor");
  if (auto watched = loop->Watch(relay->listener_.get(), EPOLLIN, relay.get()); !watched) {
    return watched.error();
  }
  return relay;
}

Relay::Relay(EventLoop* loop, base::UniqueFd listener, RelayOptions options, bool tcp_listener)
    : loop_(loop),
      listener_(std::move(listener)),
      options_(std::move(options)),
      tcp_listener_(tcp_listener),
      reserve_fd_(DupReserve(listener_.get())),
      pool_(options_.limits.buffer_bytes, kPooledBuffers),
      splice_(SigpipeIgnored()) {}

Relay::~Relay() {
  shutting_down_ = true;
  loop_->CancelTimer(resume_timer_);
  if (listener_) loop_->Unwatch(listener_.get());
  if (adopted_) loop_->Unwatch(adopted_.get());
  CloseChannel();
  for (auto& [raw, connection] : connections_) connection->Abort(EndReason::kShutdown);
  connections_.clear();  // safe here: the contract keeps us out of the loop's callbacks
}

void Relay::OnIoEvents(uint32_t /*events*/) { AcceptFrom(listener_.get(), options_.handoff); }

void Relay::AcceptFrom(int fd, bool channels) {
  for (int i = 0; i < kAcceptBatch; ++i) {
    base::UniqueFd accepted(::accept4(fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!accepted) {
      switch (errno) {
        case EAGAIN:
          return;
        case EINTR:
        case ECONNABORTED:  // the client gave up while in the backlog
        case EPROTO:
          continue;
        case EMFILE:
        case ENFILE:
        case ENOBUFS:
        case ENOMEM:
          OnOutOfFds(fd, channels);
          return;
        default:
          PauseAccepting();  // a level-triggered listener would otherwise spin on the error
          return;
      }
    }
    if (channels) {
      TakeChannel(std::move(accepted));
    } else {
      Take(std::move(accepted));
    }
  }
}

void Relay::TakeChannel(base::UniqueFd fd) {
  if (channel_taken_) {
    Refuse(EPERM);  // not the supervisor's: it connected before anything else could
    return;
  }
  // Not the sandbox's supervisor: refused (one ledger line), and the channel stays open for
  // the supervisor's own connection.
  if (options_.channel_gate != nullptr && !options_.channel_gate->Check(fd.get()).empty()) {
    Refuse(EACCES);
    return;
  }
  channel_taken_ = true;
  int raw = fd.get();
  channel_ = std::move(fd);
  // Level-triggered: a batch left in the channel fires again on the next iteration, so
  // other routes and connections get their turn in between.
  if (!loop_->WatchCallback(raw, EPOLLIN | EPOLLRDHUP, [this](uint32_t) { ReceiveHandoffs(); })) {
    channel_.reset();
  }
}

void Relay::ReceiveHandoffs() {
  ReceiveBatch batch;
  ReceiveSockets(channel_.get(), batch);
  for (size_t i = 0; i < batch.count; ++i) {
    ReceivedSocket& item = batch.items[i];
    if (item.check != HandoffCheck::kOk) {
      Refuse(HandoffCheckErrno(item.check));
    } else if (adopted_) {
      Refuse(EEXIST);  // one listener per route; a second is closed (its queue is reset)
    } else {
      Adopt(std::move(item.fd));
    }
  }
  // The supervisor closes the channel once it has sent the listener; what it sent stays.
  if (batch.closed) CloseChannel();
}

void Relay::Adopt(base::UniqueFd listener) {
  // The supervisor set TCP_NODELAY on it, which accepted sockets inherit; its own copy is
  // closed by now, so the O_NONBLOCK set by the check cannot be cleared by anyone else.
  adopted_ = std::move(listener);
  // The Unix listener has served its one purpose. Closed (with the reserve, a dup of it),
  // every later connect to its path is refused by the kernel: the agent cannot reach the
  // relay there, nor make it write a ledger line per attempt.
  if (listener_) {
    if (!resume_timer_.valid()) loop_->Unwatch(listener_.get());
    listener_.reset();
    reserve_fd_ = DupReserve(adopted_.get());
  }
  if (resume_timer_.valid()) return;  // paused: the timer watches it with the rest
  if (!loop_->Watch(adopted_.get(), EPOLLIN, &adopted_watch_)) PauseAccepting();
}

void Relay::CloseChannel() {
  if (!channel_) return;
  loop_->UnwatchCallback(channel_.get());
  channel_.reset();
}

void Relay::Refuse(int err) {
  ++stats_.refused;
  ConnectionRecord record;
  record.start = std::chrono::system_clock::now();
  record.end = EndReason::kRefused;
  record.err = err;
  Report(record);
}

void Relay::Take(base::UniqueFd fd) {
  ++stats_.accepted;
  if (connections_.size() >= options_.limits.max_connections) {
    Shed(std::move(fd));
  } else {
    Admit(std::move(fd));
  }
}

void Relay::Admit(base::UniqueFd fd) {
  ConnectionConfig config{loop_,  &options_.target, &options_.limits, this,
                          &pool_, splice_,          options_.dial,    options_.server_name};
  std::unique_ptr<RelayedConnection> connection =
      options_.make_connection ? options_.make_connection(std::move(fd), this)
                               : std::make_unique<Connection>(config, std::move(fd));
  if (!connection) {
    ++stats_.shed;  // its buffers could not be had: the fd went with the factory
    return;
  }
  RelayedConnection* raw = connection.get();
  // Held before Start(): an eager dial that fails at once closes it inside Start(), and
  // OnConnectionClosed then finds it here.
  connections_.emplace(raw, std::move(connection));
  if (!raw->Start()) {
    ++stats_.shed;  // could not even watch it: drop it, it was never registered
    connections_.erase(raw);
  }
}

void Relay::Shed(base::UniqueFd fd) {
  // A reset tells a TCP client at once that it was refused; a Unix client sees EOF. In
  // handoff mode connections come from the adopted TCP listener.
  if (tcp_listener_ || options_.handoff) SetResetOnClose(fd.get());
  fd.reset();
  ++stats_.shed;
  ConnectionRecord record;
  record.start = std::chrono::system_clock::now();
  record.end = EndReason::kLimit;
  Report(record);
}

void Relay::OnOutOfFds(int fd, bool channels) {
  // Without a free fd accept fails and the connection stays queued; the level-triggered
  // listener would report it again at once. Free the reserve, take the waiting connections
  // one by one and close them, then take the reserve back.
  if (reserve_fd_) {
    reserve_fd_.reset();
    for (;;) {
      base::UniqueFd waiting(::accept4(fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
      if (!waiting) break;
      if (channels) {
        // A channel dropped here may have been the supervisor's: then no later one is
        // trusted either, and the route has no listener (fail closed: connections are reset).
        channel_taken_ = true;
        Refuse(EMFILE);
        continue;
      }
      ++stats_.accepted;
      Shed(std::move(waiting));
    }
    reserve_fd_ = DupReserve(ReserveSource());
  }
  if (!reserve_fd_) PauseAccepting();
}

void Relay::PauseAccepting() {
  if (resume_timer_.valid()) return;
  if (listener_) loop_->Unwatch(listener_.get());
  if (adopted_) loop_->Unwatch(adopted_.get());
  resume_timer_ = loop_->AddTimer(kAcceptPause, [this] {
    resume_timer_ = {};
    if (!reserve_fd_) reserve_fd_ = DupReserve(ReserveSource());
    // Watching can only fail for lack of memory; try again after another pause then.
    if (!WatchListeners()) PauseAccepting();
  });
}

bool Relay::WatchListeners() {
  if (listener_ && !loop_->Watch(listener_.get(), EPOLLIN, this)) return false;
  return !adopted_ || loop_->Watch(adopted_.get(), EPOLLIN, &adopted_watch_);
}

void Relay::Report(const ConnectionRecord& record) {
  if (options_.on_record) options_.on_record(record);
}

void Relay::OnConnectionClosed(RelayedConnection* connection, const ConnectionRecord& record) {
  stats_.spliced_bytes += record.bytes_spliced;
  if (record.dialed) {
    ++stats_.dialed;
    Report(record);
  } else {
    ++stats_.undialed;
    if (IsHelloRefusal(record.end)) {
      ++stats_.hello_refused;
      Report(record);
    }
  }
  if (shutting_down_) return;  // the destructor owns and clears the table
  auto it = connections_.find(connection);
  if (it == connections_.end()) return;
  loop_->DestroyLater(std::move(it->second));
  connections_.erase(it);
}

}  // namespace sbx::relay
