// Fuzzes the receiving side of the listener handoff (relay::ReceiveSockets and its check,
// CheckHandedOffListener): the input is a script of messages a hostile supervisor could
// send down its channel, each carrying some fds of kinds the input picks (a listening TCP
// socket, a connected or bound one, UDP, a Unix socket, a pipe, a file).
//
// What must hold whatever arrives: an item is kOk exactly when it holds an fd, every kOk fd
// is a non-blocking listening TCP socket, and no received fd outlives the batch except
// the kOk ones (the fd count of the process is back where it was once they are closed).
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "base/unique_fd.h"
#include "fuzz/fuzz_input.h"
#include "relay/handoff.h"

namespace {

using sbx::base::UniqueFd;

size_t OpenFdCount() {
  size_t count = 0;
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return 0;
  while (const dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] != '.') ++count;
  }
  ::closedir(dir);
  return count;
}

// One fd of the kind `kind` picks; listening sockets bind port 0 on loopback.
UniqueFd MakeFd(uint8_t kind) {
  switch (kind % 8) {
    case 0:
    case 1: {  // the one kind that passes: a listening TCP socket (v4 or v6)
      const int family = kind % 8 == 0 ? AF_INET : AF_INET6;
      UniqueFd fd(::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0));
      if (fd && ::listen(fd.get(), 1) != 0) fd.reset();
      return fd;
    }
    case 2:  // TCP, never listening
      return UniqueFd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    case 3:
      return UniqueFd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    case 4: {  // a listening Unix stream socket (abstract, autobound)
      UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
      sockaddr_un addr{};
      addr.sun_family = AF_UNIX;
      if (fd && (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(sa_family_t)) != 0 ||
                 ::listen(fd.get(), 1) != 0)) {
        fd.reset();
      }
      return fd;
    }
    case 5: {
      int pipe_fds[2];
      if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return {};
      ::close(pipe_fds[1]);
      return UniqueFd(pipe_fds[0]);
    }
    case 6:
      return UniqueFd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    default:  // SCTP where the kernel has it, else nothing is attached for this one
      return UniqueFd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_SCTP));
  }
}

// Sends one message on `channel`: one data byte (two when bit 4 of `header` is set; the
// first is kHandoffByte unless bit 6 is set) and `fds` in SCM_RIGHTS, in one control message
// or, when bit 5 is set, split over two.
bool SendMessage(int channel, uint8_t header, const std::vector<UniqueFd>& fds) {
  constexpr size_t kMaxFds = 16;
  char bytes[2] = {(header & 0x40) != 0 ? 'X' : sbx::relay::kHandoffByte, 'Y'};
  iovec iov{bytes, (header & 0x10) != 0 ? 2U : 1U};
  alignas(cmsghdr) char control[2 * CMSG_SPACE(sizeof(int) * kMaxFds)] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  const size_t first = (header & 0x20) != 0 ? fds.size() / 2 : fds.size();
  const size_t parts[2] = {first, fds.size() - first};
  size_t control_len = 0;
  size_t next = 0;
  for (size_t part : parts) {
    if (part == 0) continue;
    auto* c = reinterpret_cast<cmsghdr*>(control + control_len);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * part);
    for (size_t i = 0; i < part; ++i, ++next) {
      const int fd = fds[next].get();
      std::memcpy(CMSG_DATA(c) + i * sizeof(int), &fd, sizeof(int));
    }
    control_len += CMSG_SPACE(sizeof(int) * part);
  }
  if (control_len != 0) {
    msg.msg_control = control;
    msg.msg_controllen = control_len;
  }
  return ::sendmsg(channel, &msg, MSG_DONTWAIT | MSG_NOSIGNAL) >= 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 256) return -1;
  sbx::fuzz::InputReader input(data, size);
  const size_t before = OpenFdCount();
  {
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) return 0;
    UniqueFd sender(pair[0]);
    UniqueFd receiver(pair[1]);

    // Each message: a header byte (see SendMessage), then one kind byte per fd.
    while (!input.empty()) {
      const uint8_t header = input.Byte();
      const size_t fd_count = header & 0x0f;  // 0-15
      std::vector<UniqueFd> fds;
      for (size_t i = 0; i < fd_count; ++i) {
        UniqueFd fd = MakeFd(input.Byte());
        if (fd) fds.push_back(std::move(fd));
      }
      if (!SendMessage(sender.get(), header, fds)) break;
    }
    if ((size & 1) != 0) sender.reset();  // sometimes the receiver sees EOF as well

    for (;;) {
      sbx::relay::ReceiveBatch batch;
      sbx::relay::ReceiveSockets(receiver.get(), batch);
      for (size_t i = 0; i < batch.count; ++i) {
        const sbx::relay::ReceivedSocket& item = batch.items[i];
        const bool ok = item.check == sbx::relay::HandoffCheck::kOk;
        sbx::fuzz::Check(ok == static_cast<bool>(item.fd), "an fd kept with a refusal");
        if (!ok) continue;
        int type = 0;
        int listening = 0;
        socklen_t len = sizeof(int);
        ::getsockopt(item.fd.get(), SOL_SOCKET, SO_TYPE, &type, &len);
        len = sizeof(int);
        ::getsockopt(item.fd.get(), SOL_SOCKET, SO_ACCEPTCONN, &listening, &len);
        sbx::fuzz::Check(type == SOCK_STREAM && listening == 1, "accepted a non-listener");
        sbx::fuzz::Check((::fcntl(item.fd.get(), F_GETFL) & O_NONBLOCK) != 0,
                         "accepted fd left blocking");
      }
      if (batch.closed || batch.count == 0) break;
    }
  }
  sbx::fuzz::Check(OpenFdCount() == before, "an fd leaked past ReceiveSockets");
  return 0;
}
