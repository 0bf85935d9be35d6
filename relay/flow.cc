#include "relay/flow.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

namespace sbx::relay {
namespace {

constexpr unsigned kSpliceFlags = SPLICE_F_MOVE | SPLICE_F_NONBLOCK;

}  // namespace

bool SigpipeIgnored() {
  struct sigaction current {};
  if (::sigaction(SIGPIPE, nullptr, &current) < 0) return false;
  return (current.sa_flags & SA_SIGINFO) == 0 && current.sa_handler == SIG_IGN;
}

std::unique_ptr<char[]> BufferPool::Take() {
  if (free_.empty()) return std::unique_ptr<char[]>(new char[size_]);
  std::unique_ptr<char[]> buffer = std::move(free_.back());
  free_.pop_back();
  return buffer;
}

void BufferPool::Give(std::unique_ptr<char[]> buffer) {
  if (free_.size() < max_kept_) free_.push_back(std::move(buffer));
}

size_t Flow::MakeRoom() {
  if (!buffer_) {
    // No zeroing: every byte is read into before it is sent.
    buffer_ = pool_ != nullptr && pool_->buffer_size() == capacity_
                  ? pool_->Take()
                  : std::unique_ptr<char[]>(new char[capacity_]);
  }
  if (tail_ == capacity_ && head_ > 0) {
    std::memmove(buffer_.get(), buffer_.get() + head_, tail_ - head_);
    tail_ -= head_;
    head_ = 0;
  }
  return capacity_ - tail_;
}

bool Flow::MaybeStartSplicing() {
  if (splicing()) return true;
  if (!splice_allowed_ || !bulk_seen_ || tail_ != head_) return false;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) < 0) {
    splice_allowed_ = false;  // out of fds (or pipe quota): keep copying
    return false;
  }
  pipe_read_ = base::UniqueFd(fds[0]);
  pipe_write_ = base::UniqueFd(fds[1]);
  int size = ::fcntl(fds[1], F_GETPIPE_SZ);
  pipe_capacity_ = size > 0 ? static_cast<size_t>(size) : 4096;
  Release();
  return true;
}

bool Flow::Fill(SocketState& src) {
  bool changed = false;
  while (src.readable && !eof_ && error_ == 0 && !full()) {
    bool progressed = MaybeStartSplicing() ? SpliceIn(src) : ReadIntoBuffer(src);
    if (!progressed) break;
    changed = true;
  }
  if (tail_ == head_) Release();  // a read that found EAGAIN or EOF leaves nothing to hold
  return changed;
}

bool Flow::ReadIntoBuffer(SocketState& src) {
  for (;;) {
    size_t room = MakeRoom();
    ssize_t n = ::read(src.fd, buffer_.get() + tail_, room);
    if (n > 0) {
      tail_ += static_cast<size_t>(n);
      bytes_read_ += static_cast<uint64_t>(n);
      if (tail_ == capacity_ && head_ == 0) bulk_seen_ = true;
      if (src.short_io_drains && static_cast<size_t>(n) < room) src.readable = false;
      return true;
    }
    if (n == 0) {
      eof_ = true;
      return true;
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      src.readable = false;
      return false;
    }
    if (errno != EINTR) {
      error_ = errno;
      return true;
    }
  }
}

bool Flow::SpliceIn(SocketState& src) {
  for (;;) {
    ssize_t n = ::splice(src.fd, nullptr, pipe_write_.get(), nullptr, pipe_capacity_ - in_pipe_,
                         kSpliceFlags);
    if (n > 0) {
      in_pipe_ += static_cast<size_t>(n);
      bytes_read_ += static_cast<uint64_t>(n);
      return true;
    }
    if (n == 0) {
      eof_ = true;
      return true;
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      // EAGAIN means "source empty" or "pipe full" (the pipe counts pages, not bytes, so it
      // can fill before pipe_capacity_ bytes). Only an empty pipe proves the source empty;
      // otherwise stay readable and retry once the pipe drained.
      if (in_pipe_ == 0) src.readable = false;
      return false;
    }
    if (errno != EINTR) {
      error_ = errno;
      return true;
    }
  }
}

bool Flow::Drain(SocketState& dst) {
  bool changed = false;
  while (dst.writable && buffered() > 0 && error_ == 0) {
    bool progressed = in_pipe_ > 0 ? SpliceOut(dst) : WriteFromBuffer(dst);
    if (!progressed) break;
    changed = true;
  }
  if (tail_ == head_) Release();
  if (eof_ && buffered() == 0 && !shut_down_ && error_ == 0) {
    // Only now, with every byte delivered, may the sink learn that no more will come.
    if (::shutdown(dst.fd, SHUT_WR) < 0) error_ = errno;
    shut_down_ = true;
    changed = true;
  }
  return changed;
}

bool Flow::WriteFromBuffer(SocketState& dst) {
  for (;;) {
    // MSG_NOSIGNAL: a peer that went away is an EPIPE to handle here, not a process-wide
    // SIGPIPE.
    size_t want = tail_ - head_;
    ssize_t n = ::send(dst.fd, buffer_.get() + head_, want, MSG_NOSIGNAL);
    if (n > 0) {
      head_ += static_cast<size_t>(n);
      bytes_written_ += static_cast<uint64_t>(n);
      if (dst.short_io_drains && static_cast<size_t>(n) < want) dst.writable = false;
      return true;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      dst.writable = false;
      return false;
    }
    if (n < 0 && errno != EINTR) {
      error_ = errno;
      return true;
    }
  }
}

bool Flow::SpliceOut(SocketState& dst) {
  for (;;) {
    // The pipe holds in_pipe_ bytes, so EAGAIN can only mean the sink is full.
    ssize_t n = ::splice(pipe_read_.get(), nullptr, dst.fd, nullptr, in_pipe_, kSpliceFlags);
    if (n > 0) {
      in_pipe_ -= static_cast<size_t>(n);
      bytes_written_ += static_cast<uint64_t>(n);
      bytes_spliced_ += static_cast<uint64_t>(n);
      return true;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      dst.writable = false;
      return false;
    }
    if (n == 0 || errno != EINTR) {
      error_ = n == 0 ? EPIPE : errno;
      return true;
    }
  }
}

bool Flow::Pump(SocketState& src, SocketState& dst) {
  bool changed = false;
  for (;;) {
    bool filled = Fill(src);
    bool drained = Drain(dst);
    if (!filled && !drained) return changed;
    changed = true;
  }
}

void Flow::Release() {
  if (buffer_ && pool_ != nullptr && pool_->buffer_size() == capacity_) {
    pool_->Give(std::move(buffer_));
  }
  buffer_.reset();
  head_ = 0;
  tail_ = 0;
}

void Flow::Discard() {
  Release();
  pipe_read_.reset();
  pipe_write_.reset();
  in_pipe_ = 0;
}

}  // namespace sbx::relay
