// SocketMessage: one sendmsg/recvmsg message of one data buffer and at most one control
// message (SCM_RIGHTS with one fd, SCM_CREDENTIALS), laid out once instead of at every
// call site. Allocates nothing, so the child after clone may use it.
#pragma once

#include <sys/socket.h>
#include <sys/types.h>

#include <cerrno>
#include <cstddef>
#include <cstring>

namespace sbx::base {

template <typename Payload>
class SocketMessage {
 public:
  // `data` must outlive the message; it is what is sent, or where a received one goes.
  SocketMessage(void* data, size_t size) : iov_{data, size} {
    msg_.msg_iov = &iov_;
    msg_.msg_iovlen = 1;
    msg_.msg_control = control_;
    msg_.msg_controllen = sizeof(control_);
  }
  SocketMessage(const SocketMessage&) = delete;  // msg_ points into this object
  SocketMessage& operator=(const SocketMessage&) = delete;

  // Before sending: attaches `payload` as the one control message of `level`/`type`.
  void Attach(int level, int type, const Payload& payload) {
    // The buffer is aligned and sized for exactly this header and payload.
    auto* c = reinterpret_cast<cmsghdr*>(control_);
    c->cmsg_level = level;
    c->cmsg_type = type;
    c->cmsg_len = CMSG_LEN(sizeof(Payload));
    std::memcpy(CMSG_DATA(c), &payload, sizeof(Payload));
  }
  // Before sending: no control message at all.
  void Detach() {
    msg_.msg_control = nullptr;
    msg_.msg_controllen = 0;
  }

  // sendmsg/recvmsg, retried on EINTR; the byte count or -1 with errno.
  ssize_t Send(int fd, int flags) {
    ssize_t n;
    do {
      n = ::sendmsg(fd, &msg_, flags);
    } while (n < 0 && errno == EINTR);
    return n;
  }
  ssize_t Receive(int fd, int flags) {
    ssize_t n;
    do {
      n = ::recvmsg(fd, &msg_, flags);
    } while (n < 0 && errno == EINTR);
    return n;
  }

  // After receiving: the payload of a control message of `level`/`type` and exactly
  // Payload's size, if one came.
  bool Find(int level, int type, Payload* out) {
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg_); c != nullptr; c = CMSG_NXTHDR(&msg_, c)) {
      if (c->cmsg_level == level && c->cmsg_type == type &&
          c->cmsg_len == CMSG_LEN(sizeof(Payload))) {
        std::memcpy(out, CMSG_DATA(c), sizeof(Payload));
        return true;
      }
    }
    return false;
  }
  [[nodiscard]] bool HasControl() const { return msg_.msg_controllen != 0; }

 private:
  iovec iov_;
  alignas(cmsghdr) char control_[CMSG_SPACE(sizeof(Payload))] = {};
  msghdr msg_{};
};

}  // namespace sbx::base
