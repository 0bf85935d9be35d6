#include "relay/flow.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace sbx::relay {

size_t Flow::MakeRoom() {
  if (!buffer_) buffer_.reset(new char[capacity_]);  // no zeroing: every byte is read into
  if (tail_ == capacity_ && head_ > 0) {
    std::memmove(buffer_.get(), buffer_.get() + head_, tail_ - head_);
    tail_ -= head_;
    head_ = 0;
  }
  return capacity_ - tail_;
}

bool Flow::Fill(SocketState& src) {
  bool changed = false;
  while (src.readable && !eof_ && error_ == 0 && !full()) {
    size_t room = MakeRoom();
    ssize_t n = ::read(src.fd, buffer_.get() + tail_, room);
    if (n > 0) {
      tail_ += static_cast<size_t>(n);
      bytes_read_ += static_cast<uint64_t>(n);
      changed = true;
    } else if (n == 0) {
      eof_ = true;
      changed = true;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      src.readable = false;
    } else if (errno != EINTR) {
      error_ = errno;
      changed = true;
    }
  }
  if (buffered() == 0) Release();  // a read that found EAGAIN or EOF leaves nothing to hold
  return changed;
}

bool Flow::Drain(SocketState& dst) {
  bool changed = false;
  while (dst.writable && buffered() > 0 && error_ == 0) {
    // MSG_NOSIGNAL: a peer that went away is an EPIPE to handle here, not a process-wide
    // SIGPIPE.
    ssize_t n = ::send(dst.fd, buffer_.get() + head_, buffered(), MSG_NOSIGNAL);
    if (n > 0) {
      head_ += static_cast<size_t>(n);
      bytes_written_ += static_cast<uint64_t>(n);
      changed = true;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      dst.writable = false;
    } else if (n < 0 && errno != EINTR) {
      error_ = errno;
      changed = true;
    }
  }
  if (buffered() == 0) Release();
  if (eof_ && buffered() == 0 && !shut_down_ && error_ == 0) {
    // Only now, with every byte delivered, may the sink learn that no more will come.
    if (::shutdown(dst.fd, SHUT_WR) < 0) error_ = errno;
    shut_down_ = true;
    changed = true;
  }
  return changed;
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
  buffer_.reset();
  head_ = 0;
  tail_ = 0;
}

}  // namespace sbx::relay
