// Flow: one direction of a relayed connection, source socket -> bounded buffer -> sink socket.
//
// The sockets are driven edge-triggered: SocketState remembers whether the loop last saw each
// one readable/writable, and the Flow clears a flag when a call returns EAGAIN. That is also
// how backpressure works: while the buffer is full the Flow simply stops reading, the source's
// kernel buffer fills and TCP closes its window; `readable` stays set, so reading resumes as
// soon as the sink takes bytes, with no epoll_ctl call either way.
//
// Half-close (libuv uv__drain): EOF from the source is passed on as shutdown(sink, SHUT_WR)
// only once every buffered byte has been written.
//
// Memory: the buffer is allocated when a read needs it and freed whenever it drains empty, so
// an idle connection holds no buffer and an active one at most `capacity` bytes per direction.
// Caller: the loop thread. The Flow borrows the fds in SocketState; it never closes them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace sbx::relay {

// One socket's readiness as last reported by edge-triggered epoll.
struct SocketState {
  int fd = -1;  // borrowed
  bool readable = false;
  bool writable = false;
};

class Flow {
 public:
  explicit Flow(size_t capacity) : capacity_(capacity) {}

  // Reads from `src` while it is readable and the buffer has room. Returns true when anything
  // changed (bytes read, EOF or an error seen).
  bool Fill(SocketState& src);
  // Writes buffered bytes to `dst` while it is writable; after EOF, once empty, shuts down
  // dst's write side. Returns true when anything changed.
  bool Drain(SocketState& dst);
  // Fill and Drain in turn until neither makes progress. Returns true when anything changed.
  bool Pump(SocketState& src, SocketState& dst);

  // Drops the buffer (the connection is closing).
  void Release();

  [[nodiscard]] bool eof() const { return eof_; }
  // EOF read, every byte written and the sink shut down: this direction is done.
  [[nodiscard]] bool finished() const { return shut_down_; }
  // errno of the read, write or shutdown that failed (ECONNRESET, EPIPE, ...); 0 when none.
  [[nodiscard]] int error() const { return error_; }
  [[nodiscard]] size_t buffered() const { return tail_ - head_; }
  [[nodiscard]] size_t capacity() const { return capacity_; }
  [[nodiscard]] bool full() const { return buffered() == capacity_; }
  [[nodiscard]] bool has_buffer() const { return buffer_ != nullptr; }
  [[nodiscard]] uint64_t bytes_read() const { return bytes_read_; }
  [[nodiscard]] uint64_t bytes_written() const { return bytes_written_; }

 private:
  // Room left at the tail, after moving unsent bytes to the front when the tail is full.
  size_t MakeRoom();

  size_t capacity_;
  std::unique_ptr<char[]> buffer_;
  size_t head_ = 0;  // first unsent byte
  size_t tail_ = 0;  // end of the received bytes
  bool eof_ = false;
  bool shut_down_ = false;
  int error_ = 0;
  uint64_t bytes_read_ = 0;
  uint64_t bytes_written_ = 0;
};

}  // namespace sbx::relay
