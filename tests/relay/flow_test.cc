// Flow over socketpairs: copying, lazy buffers, backpressure, half-close after drain, errors.
#include "relay/flow.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "base/unique_fd.h"

namespace sbx::relay {
namespace {

using base::FdPair;

// A non-blocking socketpair: `[0]` is the relay's side, `[1]` the test's peer.
FdPair NonBlockingPair() {
  auto pair = base::MakeSocketPair(SOCK_STREAM | SOCK_NONBLOCK);
  EXPECT_TRUE(pair);
  return std::move(*pair);
}

std::string ReadAvailable(int fd) {
  std::string out;
  char buf[65536];
  for (;;) {
    ssize_t n = ::recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

// True once the peer of `fd` has shut down its write side and everything was read.
bool AtEof(int fd) {
  char c;
  return ::recv(fd, &c, 1, MSG_DONTWAIT) == 0;
}

size_t Unread(int fd) {
  int n = 0;
  ::ioctl(fd, FIONREAD, &n);
  return static_cast<size_t>(n);
}

void WriteAll(int fd, const std::string& data) {
  ASSERT_EQ(::send(fd, data.data(), data.size(), 0), static_cast<ssize_t>(data.size()));
}

TEST(FlowTest, CopiesBytesThenPassesEofOn) {
  FdPair src = NonBlockingPair();
  FdPair dst = NonBlockingPair();
  WriteAll(src.write_end.get(), "hello relay");
  ::shutdown(src.write_end.get(), SHUT_WR);

  Flow flow(4096);
  SocketState in{src.read_end.get(), true, false};
  SocketState out{dst.read_end.get(), false, true};
  EXPECT_TRUE(flow.Pump(in, out));
  EXPECT_TRUE(flow.eof());
  EXPECT_TRUE(flow.finished());
  EXPECT_EQ(flow.error(), 0);
  EXPECT_EQ(flow.bytes_written(), 11u);
  EXPECT_EQ(ReadAvailable(dst.write_end.get()), "hello relay");
  EXPECT_TRUE(AtEof(dst.write_end.get()));
}

TEST(FlowTest, BufferExistsOnlyWhileBytesAreInFlight) {
  FdPair src = NonBlockingPair();
  FdPair dst = NonBlockingPair();
  Flow flow(4096);
  EXPECT_FALSE(flow.has_buffer());
  SocketState in{src.read_end.get(), true, false};
  SocketState out{dst.read_end.get(), false, false};  // sink not writable yet
  WriteAll(src.write_end.get(), "abc");
  flow.Pump(in, out);
  EXPECT_TRUE(flow.has_buffer());
  EXPECT_EQ(flow.buffered(), 3u);
  EXPECT_FALSE(in.readable) << "EAGAIN must clear the readable flag";
  out.writable = true;
  flow.Pump(in, out);
  EXPECT_EQ(flow.buffered(), 0u);
  EXPECT_FALSE(flow.has_buffer()) << "a drained buffer is given back";
}

TEST(FlowTest, StopsReadingWhileTheSinkIsFull) {
  FdPair src = NonBlockingPair();
  FdPair dst = NonBlockingPair();
  int small = 4096;
  ::setsockopt(dst.read_end.get(), SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
  ::setsockopt(dst.write_end.get(), SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
  // Fill the source with more than the sink, the Flow and the socket buffers can hold.
  std::string chunk(4096, 'x');
  size_t written = 0;
  while (::send(src.write_end.get(), chunk.data(), chunk.size(), MSG_DONTWAIT) > 0) {
    written += chunk.size();
  }
  ASSERT_GT(written, 64u * 1024);

  Flow flow(8192);
  SocketState in{src.read_end.get(), true, false};
  SocketState out{dst.read_end.get(), false, true};
  flow.Pump(in, out);
  EXPECT_FALSE(out.writable) << "the sink must have filled up";
  EXPECT_TRUE(flow.full());
  EXPECT_TRUE(in.readable) << "the source was not drained: it keeps its readiness";
  EXPECT_GT(Unread(src.read_end.get()), 0u) << "backpressure leaves bytes in the source";
  EXPECT_EQ(flow.bytes_read(), flow.bytes_written() + flow.buffered());

  // The peer reads; the sink is writable again; the flow resumes on its own flag.
  size_t drained = ReadAvailable(dst.write_end.get()).size();
  EXPECT_GT(drained, 0u);
  out.writable = true;
  uint64_t before = flow.bytes_read();
  flow.Pump(in, out);
  EXPECT_GT(flow.bytes_read(), before);
}

TEST(FlowTest, HalfCloseWaitsUntilTheBufferDrained) {
  FdPair src = NonBlockingPair();
  FdPair dst = NonBlockingPair();
  WriteAll(src.write_end.get(), "tail");
  ::shutdown(src.write_end.get(), SHUT_WR);
  Flow flow(4096);
  SocketState in{src.read_end.get(), true, false};
  SocketState out{dst.read_end.get(), false, false};
  flow.Pump(in, out);
  EXPECT_TRUE(flow.eof());
  EXPECT_FALSE(flow.finished());
  EXPECT_FALSE(AtEof(dst.write_end.get())) << "EOF must not overtake buffered bytes";

  out.writable = true;
  flow.Pump(in, out);
  EXPECT_TRUE(flow.finished());
  EXPECT_EQ(ReadAvailable(dst.write_end.get()), "tail");
  EXPECT_TRUE(AtEof(dst.write_end.get()));
  // The other direction of the sink still works: half-close, not close.
  WriteAll(dst.write_end.get(), "reply");
  EXPECT_EQ(ReadAvailable(dst.read_end.get()), "reply");
}

TEST(FlowTest, WriteToAVanishedPeerIsAnErrorNotASignal) {
  FdPair src = NonBlockingPair();
  FdPair dst = NonBlockingPair();
  dst.write_end.reset();  // the sink's peer is gone
  WriteAll(src.write_end.get(), "lost");
  Flow flow(4096);
  SocketState in{src.read_end.get(), true, false};
  SocketState out{dst.read_end.get(), false, true};
  flow.Pump(in, out);  // would kill the test with SIGPIPE without MSG_NOSIGNAL
  EXPECT_EQ(flow.error(), EPIPE);
  EXPECT_FALSE(flow.finished());
}

TEST(FlowTest, ReadErrorIsReported) {
  FdPair src = NonBlockingPair();
  FdPair dst = NonBlockingPair();
  // Closing a Unix socket with unread data in its receive queue resets the peer.
  WriteAll(src.read_end.get(), "unread");
  src.write_end.reset();
  Flow flow(4096);
  SocketState in{src.read_end.get(), true, false};
  SocketState out{dst.read_end.get(), false, true};
  flow.Pump(in, out);
  EXPECT_EQ(flow.error(), ECONNRESET);
}

TEST(FlowTest, ShortReadEndsTheReadsWhenTheOwnerIsEdgeTriggered) {
  FdPair src = NonBlockingPair();
  WriteAll(src.write_end.get(), "abc");
  Flow flow(4096);
  SocketState in{src.read_end.get(), true, false, /*short_io_drains=*/true};
  EXPECT_TRUE(flow.Fill(in));
  EXPECT_EQ(flow.buffered(), 3u);
  EXPECT_FALSE(in.readable) << "3 of 4096 bytes: the queue is empty, no EAGAIN read needed";
  // After a hang-up the EOF behind the data must still be found without a new edge.
  WriteAll(src.write_end.get(), "def");
  ::shutdown(src.write_end.get(), SHUT_WR);
  in.readable = true;
  in.short_io_drains = false;
  EXPECT_TRUE(flow.Fill(in));
  EXPECT_EQ(flow.buffered(), 6u);
  EXPECT_TRUE(flow.eof());
}

TEST(FlowTest, PoolGivesDrainedBuffersBackForReuse) {
  BufferPool pool(4096, 1);
  FdPair src = NonBlockingPair();
  FdPair dst = NonBlockingPair();
  Flow first(4096, &pool);
  Flow second(4096, &pool);
  SocketState in{src.read_end.get(), true, false};
  SocketState out{dst.read_end.get(), false, true};
  WriteAll(src.write_end.get(), "one");
  first.Pump(in, out);
  EXPECT_FALSE(first.has_buffer());
  EXPECT_EQ(pool.kept(), 1u) << "the drained buffer waits in the pool";
  WriteAll(src.write_end.get(), "two");
  in.readable = true;
  second.Pump(in, out);
  EXPECT_EQ(pool.kept(), 1u) << "taken and given back, never more than max_kept";
  EXPECT_EQ(ReadAvailable(dst.write_end.get()), "onetwo");
}

TEST(FlowTest, BulkSwitchesToSpliceAndKeepsOrderAndHalfClose) {
  FdPair src = NonBlockingPair();
  FdPair dst = NonBlockingPair();
  Flow flow(4096, nullptr, /*splice=*/true);
  SocketState in{src.read_end.get(), false, false};
  SocketState out{dst.read_end.get(), false, true};
  std::string sent;
  std::string received;
  // Feed and drain in rounds, as a loop would: the first full buffer marks the flow as bulk,
  // later rounds go through the pipe. Every byte must arrive once and in order.
  for (int round = 0; round < 64; ++round) {
    std::string chunk(size_t{8192} + static_cast<size_t>(round) * 37,
                      static_cast<char>('a' + round % 26));
    WriteAll(src.write_end.get(), chunk);
    sent += chunk;
    in.readable = true;
    out.writable = true;
    flow.Pump(in, out);
    received += ReadAvailable(dst.write_end.get());
    ASSERT_EQ(flow.error(), 0);
  }
  EXPECT_TRUE(flow.splicing());
  EXPECT_FALSE(flow.has_buffer()) << "bulk bytes wait in the pipe, not in user space";
  ::shutdown(src.write_end.get(), SHUT_WR);
  in.readable = true;
  out.writable = true;
  flow.Pump(in, out);
  received += ReadAvailable(dst.write_end.get());
  EXPECT_TRUE(flow.finished());
  EXPECT_EQ(received.size(), sent.size());
  EXPECT_TRUE(received == sent);
  EXPECT_EQ(flow.bytes_written(), sent.size());
  EXPECT_TRUE(AtEof(dst.write_end.get()));
  flow.Discard();
  EXPECT_FALSE(flow.splicing());
}

}  // namespace
}  // namespace sbx::relay
