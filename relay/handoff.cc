#include "relay/handoff.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "base/socket_message.h"

namespace sbx::relay {
namespace {

// Room for this many fds per received message, so a message with a few extra fds is seen
// (and refused) whole; past it the kernel sets MSG_CTRUNC and closes the rest itself.
constexpr size_t kFdsSeenPerMessage = 8;

// One control buffer per message, aligned for cmsghdr.
template <size_t kFds>
struct alignas(cmsghdr) ControlBuffer {
  char bytes[CMSG_SPACE(sizeof(int) * kFds)];
};

bool IntOption(int fd, int level, int name, int* value) {
  socklen_t len = sizeof(*value);
  return ::getsockopt(fd, level, name, value, &len) == 0 && len == sizeof(*value);
}

// Takes ownership of every fd in the SCM_RIGHTS messages of `msg`; returns how many there were
// and keeps the first in `first`.
size_t TakeFds(msghdr& msg, base::UniqueFd& first) {
  size_t count = 0;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < n; ++i) {
      int fd = -1;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      base::UniqueFd owned(fd);
      if (count++ == 0) first = std::move(owned);  // any other closes here
    }
  }
  return count;
}

}  // namespace

base::Status SendSocket(int channel, int fd) {
  char byte = kHandoffByte;
  base::SocketMessage<int> message(&byte, 1);
  message.Attach(SOL_SOCKET, SCM_RIGHTS, fd);
  if (message.Send(channel, MSG_DONTWAIT | MSG_NOSIGNAL) != 1) {
    return base::ErrnoError("Can't hand over a socket");
  }
  return {};
}

std::string_view HandoffCheckName(HandoffCheck check) {
  switch (check) {
    case HandoffCheck::kOk:
      return "ok";
    case HandoffCheck::kNoFd:
      return "no-fd";
    case HandoffCheck::kExtraFds:
      return "extra-fds";
    case HandoffCheck::kTruncated:
      return "truncated";
    case HandoffCheck::kNotSocket:
      return "not-socket";
    case HandoffCheck::kNotStream:
      return "not-stream";
    case HandoffCheck::kNotInet:
      return "not-inet";
    case HandoffCheck::kNotTcp:
      return "not-tcp";
    case HandoffCheck::kNotListening:
      return "not-listening";
    case HandoffCheck::kQueryFailed:
      return "query-failed";
  }
  return "unknown";
}

int HandoffCheckErrno(HandoffCheck check) {
  switch (check) {
    case HandoffCheck::kOk:
      return 0;
    case HandoffCheck::kNoFd:
    case HandoffCheck::kExtraFds:
    case HandoffCheck::kTruncated:
      return EPROTO;
    case HandoffCheck::kNotSocket:
      return ENOTSOCK;
    case HandoffCheck::kNotStream:
      return ESOCKTNOSUPPORT;
    case HandoffCheck::kNotInet:
      return EAFNOSUPPORT;
    case HandoffCheck::kNotTcp:
      return EPROTONOSUPPORT;
    case HandoffCheck::kNotListening:
      return EINVAL;
    case HandoffCheck::kQueryFailed:
      return EBADF;
  }
  return EPROTO;
}

HandoffCheck CheckHandedOffListener(int fd) {
  // fstat first: getsockopt on a non-socket only fails, but the brief of this check is "a
  // socket, of this kind", and fstat is what proves the first half for any fd type.
  struct stat st {};
  if (::fstat(fd, &st) != 0) return HandoffCheck::kQueryFailed;
  if (!S_ISSOCK(st.st_mode)) return HandoffCheck::kNotSocket;
  int type = 0;
  int domain = 0;
  int protocol = 0;
  int listening = 0;
  if (!IntOption(fd, SOL_SOCKET, SO_TYPE, &type) ||
      !IntOption(fd, SOL_SOCKET, SO_DOMAIN, &domain) ||
      !IntOption(fd, SOL_SOCKET, SO_PROTOCOL, &protocol) ||
      !IntOption(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening)) {
    return HandoffCheck::kQueryFailed;
  }
  if (type != SOCK_STREAM) return HandoffCheck::kNotStream;
  if (domain != AF_INET && domain != AF_INET6) return HandoffCheck::kNotInet;
  if (protocol != IPPROTO_TCP) return HandoffCheck::kNotTcp;
  if (listening == 0) return HandoffCheck::kNotListening;
  int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0) return HandoffCheck::kQueryFailed;
  if ((flags & O_NONBLOCK) == 0 && ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    return HandoffCheck::kQueryFailed;
  }
  return HandoffCheck::kOk;
}

void ReceiveSockets(int channel, ReceiveBatch& batch) {
  batch.count = 0;
  batch.closed = false;
  batch.err = 0;
  std::array<mmsghdr, kHandoffBatch> msgs{};
  std::array<ControlBuffer<kFdsSeenPerMessage>, kHandoffBatch> controls;
  std::array<char, kHandoffBatch> bytes{};
  std::array<iovec, kHandoffBatch> iovs{};
  for (size_t i = 0; i < kHandoffBatch; ++i) {
    iovs[i] = {&bytes[i], 1};
    msghdr& m = msgs[i].msg_hdr;
    m.msg_iov = &iovs[i];
    m.msg_iovlen = 1;
    m.msg_control = controls[i].bytes;
    m.msg_controllen = sizeof(controls[i].bytes);
  }
  int got;
  do {
    // MSG_CMSG_CLOEXEC: the received fds are close-on-exec from the start.
    got = ::recvmmsg(channel, msgs.data(), kHandoffBatch, MSG_DONTWAIT | MSG_CMSG_CLOEXEC, nullptr);
  } while (got < 0 && errno == EINTR);
  if (got < 0) {
    if (errno != EAGAIN) {
      batch.closed = true;
      batch.err = errno;
    }
    return;
  }
  for (size_t i = 0; i < static_cast<size_t>(got); ++i) {
    msghdr& m = msgs[i].msg_hdr;
    ReceivedSocket& item = batch.items[batch.count];
    item.fd.reset();
    size_t fds = TakeFds(m, item.fd);  // takes them all, so none can leak past this point
    if (msgs[i].msg_len == 0 && fds == 0) {
      batch.closed = true;  // EOF: a stream recvmmsg fills the remaining entries with it too
      break;
    }
    if ((m.msg_flags & MSG_CTRUNC) != 0) {
      item.check = HandoffCheck::kTruncated;
    } else if (fds == 0) {
      item.check = HandoffCheck::kNoFd;
    } else if (fds > 1) {
      item.check = HandoffCheck::kExtraFds;
    } else {
      item.check = CheckHandedOffListener(item.fd.get());
    }
    if (item.check != HandoffCheck::kOk) item.fd.reset();
    ++batch.count;
  }
}

}  // namespace sbx::relay
