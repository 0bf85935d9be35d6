// Flow: one direction of a relayed connection, source socket -> bounded buffer -> sink socket.
//
// The sockets are driven edge-triggered: SocketState remembers whether the loop last saw each
// one readable/writable, and the Flow clears a flag when a call returns EAGAIN (or, see
// SocketState::short_io_drains, a short read or write). That is also how backpressure works:
// while the buffer is full the Flow simply stops reading, the source's kernel buffer fills and
// TCP closes its window; `readable` stays set, so reading resumes as soon as the sink takes
// bytes, with no epoll_ctl call either way.
//
// Half-close (libuv uv__drain): EOF from the source is passed on as shutdown(sink, SHUT_WR)
// only once every buffered byte has been written.
//
// Memory: the buffer is taken when a read needs it and given back whenever it drains empty, so
// an idle connection holds no buffer and an active one at most `capacity` bytes per direction.
// Given-back buffers wait in a small BufferPool shared by the flows of one relay, so a busy
// connection does not call malloc and free (and fault fresh pages in) on every wakeup.
//
// Bulk (splice mode, opt-in): once a read filled the whole buffer, and the buffer has drained,
// the Flow makes a pipe of its own and moves bytes source -> pipe -> sink with splice(2): the
// kernel passes page references, no byte is copied through user space, and what is in flight
// is kernel memory (at most one pipe's capacity), not ours. If the pipe can't be made (out of
// fds) the Flow keeps copying. splice(2) into a socket can't be told MSG_NOSIGNAL, so an
// owner enables it only when the process ignores SIGPIPE (SigpipeIgnored()).
// Caller: the loop thread. The Flow borrows the fds in SocketState; it never closes them (its
// own pipe it closes in Discard() or when destroyed).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "base/unique_fd.h"

namespace sbx::relay {

// One socket's readiness as last reported by edge-triggered epoll.
struct SocketState {
  int fd = -1;  // borrowed
  bool readable = false;
  bool writable = false;
  // Set by an owner that watches `fd` edge-triggered and clears it once an event reported a
  // hang-up (EPOLLRDHUP, EPOLLHUP, EPOLLERR). While set, a read or write that moves fewer
  // bytes than asked means the kernel queue is empty (full): the next byte (free space)
  // raises a new edge, so the flag is cleared without paying for the call that would return
  // EAGAIN. After a hang-up the EOF may sit behind the data, with no edge left to announce it,
  // so reads go on until EOF or EAGAIN.
  bool short_io_drains = false;
};

// Free buffers of one size, kept for reuse up to `max_kept`. Not thread-safe: one loop.
class BufferPool {
 public:
  BufferPool(size_t buffer_size, size_t max_kept) : size_(buffer_size), max_kept_(max_kept) {}
  [[nodiscard]] size_t buffer_size() const { return size_; }
  // A kept buffer, or a new one (uninitialized: every byte is read into before use).
  std::unique_ptr<char[]> Take();
  // Keeps `buffer` (of buffer_size() bytes) for the next Take(), or frees it when full.
  void Give(std::unique_ptr<char[]> buffer);
  [[nodiscard]] size_t kept() const { return free_.size(); }

 private:
  size_t size_;
  size_t max_kept_;
  std::vector<std::unique_ptr<char[]>> free_;
};

// True when SIGPIPE's disposition is SIG_IGN in this process (a query, nothing is changed).
bool SigpipeIgnored();

class Flow {
 public:
  // `pool`, when set, must outlive the Flow and hold buffers of `capacity` bytes. `splice`
  // allows splice mode (see above): only when SIGPIPE is ignored.
  explicit Flow(size_t capacity, BufferPool* pool = nullptr, bool splice = false)
      : capacity_(capacity), pool_(pool), splice_allowed_(splice) {}

  // Reads from `src` while it is readable and the buffer has room. Returns true when anything
  // changed (bytes read, EOF or an error seen).
  bool Fill(SocketState& src);
  // Writes buffered bytes to `dst` while it is writable; after EOF, once empty, shuts down
  // dst's write side. Returns true when anything changed.
  bool Drain(SocketState& dst);
  // Fill and Drain in turn until neither makes progress. Returns true when anything changed.
  bool Pump(SocketState& src, SocketState& dst);

  // Drops the buffer (it drained).
  void Release();
  // Drops the buffer and the pipe with whatever they hold (the connection is closing).
  void Discard();

  [[nodiscard]] bool eof() const { return eof_; }
  // EOF read, every byte written and the sink shut down: this direction is done.
  [[nodiscard]] bool finished() const { return shut_down_; }
  // errno of the read, write or shutdown that failed (ECONNRESET, EPIPE, ...); 0 when none.
  [[nodiscard]] int error() const { return error_; }
  // Bytes read and not yet written, in the buffer or the pipe.
  [[nodiscard]] size_t buffered() const { return tail_ - head_ + in_pipe_; }
  // The buffered bytes not yet written, to look at (not while splicing: then the bytes are in
  // the pipe, and this is empty).
  [[nodiscard]] std::string_view pending() const {
    return buffer_ ? std::string_view(buffer_.get() + head_, tail_ - head_) : std::string_view();
  }
  [[nodiscard]] size_t capacity() const { return capacity_; }
  [[nodiscard]] bool full() const {
    return splicing() ? in_pipe_ >= pipe_capacity_ : tail_ - head_ == capacity_;
  }
  [[nodiscard]] bool splicing() const { return pipe_read_.get() >= 0; }
  [[nodiscard]] bool has_buffer() const { return buffer_ != nullptr; }
  [[nodiscard]] uint64_t bytes_read() const { return bytes_read_; }
  [[nodiscard]] uint64_t bytes_written() const { return bytes_written_; }
  // Of bytes_written(), those moved by splice(2) (splice mode), not copied through the buffer.
  [[nodiscard]] uint64_t bytes_spliced() const { return bytes_spliced_; }

 private:
  // Room left at the tail, after moving unsent bytes to the front when the tail is full.
  size_t MakeRoom();
  // Enters splice mode when bulk was seen and the buffer is empty; false when it can't.
  bool MaybeStartSplicing();
  bool SpliceIn(SocketState& src);
  bool SpliceOut(SocketState& dst);
  bool ReadIntoBuffer(SocketState& src);
  bool WriteFromBuffer(SocketState& dst);

  size_t capacity_;
  BufferPool* pool_;
  bool splice_allowed_;
  bool bulk_seen_ = false;  // a read filled the whole buffer
  base::UniqueFd pipe_read_;
  base::UniqueFd pipe_write_;
  size_t pipe_capacity_ = 0;
  size_t in_pipe_ = 0;
  std::unique_ptr<char[]> buffer_;
  size_t head_ = 0;  // first unsent byte
  size_t tail_ = 0;  // end of the received bytes
  bool eof_ = false;
  bool shut_down_ = false;
  int error_ = 0;
  uint64_t bytes_read_ = 0;
  uint64_t bytes_written_ = 0;
  uint64_t bytes_spliced_ = 0;
};

}  // namespace sbx::relay
