#include "netns/netlink.h"

#include <linux/netlink.h>
#include <netlink/errno.h>
#include <sys/socket.h>

#include <cerrno>

namespace sbx::netns {

namespace {

struct NlErrnoPair {
  int nl_error;
  int err;
};

// The inverse of nl_syserr2nlerr where it is one-to-one, the nearest errno elsewhere.
constexpr NlErrnoPair kNlErrno[] = {
    {NLE_SUCCESS, 0},
    {NLE_INTR, EINTR},
    {NLE_BAD_SOCK, EBADF},
    {NLE_AGAIN, EAGAIN},
    {NLE_NOMEM, ENOMEM},
    {NLE_EXIST, EEXIST},
    {NLE_INVAL, EINVAL},
    {NLE_RANGE, ERANGE},
    {NLE_MSGSIZE, EMSGSIZE},
    {NLE_OPNOTSUPP, EOPNOTSUPP},
    {NLE_AF_NOSUPPORT, EAFNOSUPPORT},
    {NLE_OBJ_NOTFOUND, ENOENT},  // libnl folds the kernel's ENOENT and ESRCH into this code
    {NLE_NOATTR, ENODATA},
    {NLE_MISSING_ATTR, EINVAL},
    {NLE_AF_MISMATCH, EAFNOSUPPORT},
    {NLE_SEQ_MISMATCH, EPROTO},
    {NLE_MSG_OVERFLOW, ENOBUFS},  // the kernel dropped messages: recvmsg would say ENOBUFS
    {NLE_MSG_TRUNC, EMSGSIZE},
    {NLE_NOADDR, EADDRNOTAVAIL},
    {NLE_SRCRT_NOSUPPORT, EOPNOTSUPP},
    {NLE_MSG_TOOSHORT, EBADMSG},
    {NLE_MSGTYPE_NOSUPPORT, EOPNOTSUPP},
    {NLE_OBJ_MISMATCH, EINVAL},
    {NLE_NOCACHE, EINVAL},
    {NLE_BUSY, EBUSY},
    {NLE_PROTO_MISMATCH, EPROTONOSUPPORT},
    {NLE_NOACCESS, EACCES},
    {NLE_PERM, EPERM},
    {NLE_PKTLOC_FILE, ENOENT},
    {NLE_PARSE_ERR, EBADMSG},
    {NLE_NODEV, ENODEV},
    {NLE_IMMUTABLE, EINVAL},
    {NLE_DUMP_INTR, EAGAIN},  // a dump changed while it was read; the caller may retry
    {NLE_ATTRSIZE, ERANGE},
};

}  // namespace

int NlErrorToErrno(int nl_error) noexcept {
  const int code = nl_error < 0 ? -nl_error : nl_error;
  for (const NlErrnoPair& pair : kNlErrno) {
    if (pair.nl_error == code) return pair.err;
  }
  return EIO;  // NLE_FAILURE and codes newer than these headers
}

base::Error NlError(int nl_error, std::string op, std::string subject) {
  return {NlErrorToErrno(nl_error), std::move(op), std::move(subject)};
}

namespace internal {

int StoreKernelErrno(sockaddr_nl* /*peer*/, nlmsgerr* err, void* arg) {
  *static_cast<int*>(arg) = -err->error;
  // NL_STOP makes libnl return its own translation of err->error, as without this callback.
  return NL_STOP;
}

}  // namespace internal

base::Result<NlSocket> AdoptRouteSocket(base::UniqueFd fd) {
  NlSocket sock(nl_socket_alloc());
  if (!sock) return base::Error(ENOMEM, "Can't allocate", "netlink socket");
  if (int rc = nl_socket_set_fd(sock.get(), NETLINK_ROUTE, fd.get()); rc < 0) {
    return NlError(rc, "Can't use NETLINK_ROUTE socket");
  }
  static_cast<void>(fd.release());  // owned by `sock` from here on
  return sock;
}

base::Result<NlSocket> OpenRouteSocket() {
  base::UniqueFd fd(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE));
  if (!fd) return base::ErrnoError("Failed to create NETLINK_ROUTE socket");
  sockaddr_nl local{};
  local.nl_family = AF_NETLINK;  // nl_pid 0: the kernel picks a unique port
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&local), sizeof(local)) != 0) {
    return base::ErrnoError("Failed to bind NETLINK_ROUTE socket");
  }
  return AdoptRouteSocket(std::move(fd));
}

}  // namespace sbx::netns
