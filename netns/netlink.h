// Owning handles for libnl-3 / libnl-route-3 objects, and the translation of libnl's
// NLE_* error codes into errno-carrying base::Error values.
//
// libnl reports failures as negative NLE_* codes, having already squeezed the kernel's errno
// through nl_syserr2nlerr (many errnos -> one code). NlErrorToErrno maps them back to the
// closest errno; where the exact kernel errno matters, CallWithKernelErrno captures the
// errno carried in the kernel's NLMSG_ERROR reply before libnl translates it.
//
// Threading: libnl sockets are not thread-safe; every handle here is used by one thread.
#pragma once

#include <netlink/addr.h>
#include <netlink/cache.h>
#include <netlink/handlers.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/socket.h>

#include <string>
#include <utility>

#include "base/c_handle.h"
#include "base/error.h"
#include "base/unique_fd.h"

namespace sbx::netns {

using NlSocket = base::CHandle<nl_sock, nl_socket_free>;  // closes its fd too
using NlCache = base::CHandle<nl_cache, nl_cache_free>;
using RtnlLink = base::CHandle<rtnl_link, rtnl_link_put>;
using RtnlAddr = base::CHandle<rtnl_addr, rtnl_addr_put>;
using NlAddr = base::CHandle<nl_addr, nl_addr_put>;

// The errno closest to a libnl error code; accepts NLE_X and -NLE_X. 0 for NLE_SUCCESS,
// EIO for codes without a counterpart (NLE_FAILURE, unknown codes).
int NlErrorToErrno(int nl_error) noexcept;

// Error{NlErrorToErrno(nl_error), op, subject}.
base::Error NlError(int nl_error, std::string op, std::string subject = {});

// Runs `request`, a libnl call that sends one request and waits for its ACK (rtnl_addr_add,
// rtnl_link_change, ...) and returns 0 or a positive errno. When the kernel refused the
// request, the errno is the one from its NLMSG_ERROR reply, not the lossy NLE_* round trip.
// Calls that install their own error callback (nl_pickup_keep_syserr) fall back to
// NlErrorToErrno. Allocates nothing; safe in the sandbox child.
template <typename Request>
int CallWithKernelErrno(nl_sock* sock, Request&& request) noexcept;

// Wraps an already bound NETLINK_ROUTE socket. On success the returned handle owns the fd
// (nl_socket_free closes it); on failure the fd is closed with `fd`.
base::Result<NlSocket> AdoptRouteSocket(base::UniqueFd fd);

// socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE) + bind to a kernel-chosen port
// + AdoptRouteSocket. The caller owns the socket; it is not inherited across exec.
base::Result<NlSocket> OpenRouteSocket();

namespace internal {
// nl_recvmsg_err_cb_t that stores -nlmsgerr.error into *(int*)arg and stops parsing.
int StoreKernelErrno(sockaddr_nl* peer, nlmsgerr* err, void* arg);
}  // namespace internal

template <typename Request>
int CallWithKernelErrno(nl_sock* sock, Request&& request) noexcept {
  int kernel_errno = 0;
  nl_socket_modify_err_cb(sock, NL_CB_CUSTOM, internal::StoreKernelErrno, &kernel_errno);
  const int rc = std::forward<Request>(request)();
  // Never leave a pointer to this stack frame behind in the socket.
  nl_socket_modify_err_cb(sock, NL_CB_DEFAULT, nullptr, nullptr);
  if (rc >= 0) return 0;
  return kernel_errno != 0 ? kernel_errno : NlErrorToErrno(rc);
}

}  // namespace sbx::netns
