// Listener handoff: how the sandbox's supervisor gives each route's TCP listener to the host
// relay, which then accepts the agent's connections itself (docs/tunnel.md).
//
//   supervisor: socket, bind 127.77.0.N:PORT, listen   (inside the sandbox's netns)
//               ==listener over route-N.sock (SCM_RIGHTS), once==>  host relay; closes its copy
//   agent --TCP--> the listener <--accept4-- host relay <--TCP--> upstream
//
// The channel is a connected Unix stream socket (the supervisor's one connection to a route's
// socket). Wire format: one message per socket, one byte (kHandoffByte) carrying exactly one
// fd in an SCM_RIGHTS control message; the supervisor sends one, its route's listener. The
// route is the socket the channel connected to, never anything in the message.
//
// Sender: the supervisor (SendSocket). Receiver: the host relay (ReceiveSockets), which
// treats every fd as hostile: a message that does not carry exactly one fd of a listening TCP
// socket is refused and every fd it carried is closed.
// Both sides: any single thread; the functions never block (MSG_DONTWAIT).
#pragma once

#include <array>
#include <cstddef>
#include <string_view>

#include "base/error.h"
#include "base/unique_fd.h"

namespace sbx::relay {

inline constexpr char kHandoffByte = 'H';
// Messages per recvmmsg call.
inline constexpr size_t kHandoffBatch = 32;

// Sends `fd` as one message: kHandoffByte with `fd` in SCM_RIGHTS. The caller still owns `fd`
// and closes it (the receiver has its own reference). Errors: EAGAIN (the channel is full),
// EPIPE/ECONNRESET (the receiver is gone).
base::Status SendSocket(int channel, int fd);

// Why a received message was refused (kOk: accepted).
enum class HandoffCheck {
  kOk,
  kNoFd,          // a byte without an fd (or with another kind of control message)
  kExtraFds,      // more than one fd in the message: all are closed
  kTruncated,     // MSG_CTRUNC: the kernel dropped fds that did not fit (or our fd table is full)
  kNotSocket,     // fstat: not S_ISSOCK
  kNotStream,     // SO_TYPE != SOCK_STREAM
  kNotInet,       // SO_DOMAIN is not AF_INET/AF_INET6
  kNotTcp,        // SO_PROTOCOL != IPPROTO_TCP (SCTP, MPTCP)
  kNotListening,  // SO_ACCEPTCONN 0: not a listening socket
  kQueryFailed    // fstat, getsockopt or fcntl failed
};
std::string_view HandoffCheckName(HandoffCheck check);
// The errno a refusal is recorded with (the ledger's "error" text).
int HandoffCheckErrno(HandoffCheck check);

// Checks one received fd (see HandoffCheck) and, when it passes, sets O_NONBLOCK on it (the
// open file description is shared with the sender, which closes its copy right after
// sending). Costs fstat, four getsockopt, F_GETFL.
HandoffCheck CheckHandedOffListener(int fd);

struct ReceivedSocket {
  base::UniqueFd fd;  // set only when check == kOk
  HandoffCheck check = HandoffCheck::kOk;
};

struct ReceiveBatch {
  std::array<ReceivedSocket, kHandoffBatch> items;
  size_t count = 0;
  bool closed = false;  // EOF or a fatal error: the channel is finished
  int err = 0;          // the errno behind `closed`, 0 at EOF
};

// Receives up to kHandoffBatch messages without blocking, each fd checked by
// CheckHandedOffListener. Every fd that arrived is either in an item with check == kOk or already
// closed. count == 0 and !closed: nothing was waiting.
void ReceiveSockets(int channel, ReceiveBatch& batch);

}  // namespace sbx::relay
