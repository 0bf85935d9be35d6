#include "netns/netlink.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <netlink/errno.h>
#include <netlink/route/route.h>

#include <cerrno>

#include "tests/netns/ns_child.h"

namespace sbx::netns {
namespace {

TEST(NetlinkTest, MapsLibnlErrorsToErrno) {
  EXPECT_EQ(NlErrorToErrno(NLE_SUCCESS), 0);
  EXPECT_EQ(NlErrorToErrno(-NLE_PERM), EPERM);
  EXPECT_EQ(NlErrorToErrno(NLE_PERM), EPERM);
  EXPECT_EQ(NlErrorToErrno(-NLE_EXIST), EEXIST);
  EXPECT_EQ(NlErrorToErrno(-NLE_NODEV), ENODEV);
  EXPECT_EQ(NlErrorToErrno(-NLE_OBJ_NOTFOUND), ENOENT);
  EXPECT_EQ(NlErrorToErrno(-NLE_NOACCESS), EACCES);
  EXPECT_EQ(NlErrorToErrno(-NLE_NOMEM), ENOMEM);
  EXPECT_EQ(NlErrorToErrno(-NLE_FAILURE), EIO);
  EXPECT_EQ(NlErrorToErrno(-999), EIO);
}

// Where libnl's errno -> NLE mapping is one-to-one, ours inverts it.
TEST(NetlinkTest, InvertsNlSyserr2nlerr) {
  for (int err : {EPERM, EEXIST, EINVAL, ENOMEM, EACCES, EBUSY, ENODEV, EAFNOSUPPORT, EOPNOTSUPP,
                  EINTR, EAGAIN, ERANGE, EADDRNOTAVAIL, ENOENT, EBADF}) {
    EXPECT_EQ(NlErrorToErrno(-nl_syserr2nlerr(err)), err) << err;
  }
}

TEST(NetlinkTest, NlErrorCarriesErrnoAndText) {
  base::Error e = NlError(-NLE_PERM, "Can't add address", "127.0.0.1");
  EXPECT_EQ(e.err(), EPERM);
  EXPECT_EQ(e.Render(), "Can't add address 127.0.0.1: Operation not permitted");
}

TEST(NetlinkTest, RouteSocketIsCloexecAndClosed) {
  int fd = -1;
  {
    auto sock = OpenRouteSocket();
    ASSERT_TRUE(sock) << sock.error().Render();
    fd = nl_socket_get_fd(sock->get());
    ASSERT_GE(fd, 0);
    EXPECT_NE(::fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
    EXPECT_NE(nl_socket_get_local_port(sock->get()), 0U);
  }
  EXPECT_EQ(::fcntl(fd, F_GETFD), -1);
}

TEST(NetlinkTest, AdoptRejectsNonNetlinkFd) {
  base::UniqueFd fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(fd);
  auto sock = AdoptRouteSocket(std::move(fd));
  ASSERT_FALSE(sock);
  EXPECT_EQ(sock.error().err(), EBADF);  // getsockname: ENOTSOCK -> NLE_BAD_SOCK -> EBADF
}

// The kernel answers a delete of a missing IPv4 route with ESRCH, which libnl reports as
// NLE_OBJ_NOTFOUND (-> ENOENT); CallWithKernelErrno keeps the kernel's own errno.
std::string DeleteMissingRoute() {
  if (auto entered = testing::EnterUserAndNetNs(true); !entered.empty()) return entered;
  auto sock = OpenRouteSocket();
  if (!sock) return sock.error().Render();
  nl_addr* raw_dst = nullptr;
  if (nl_addr_parse("10.99.0.0/16", AF_INET, &raw_dst) < 0) return "nl_addr_parse";
  NlAddr dst(raw_dst);
  base::CHandle<rtnl_route, rtnl_route_put> route(rtnl_route_alloc());
  rtnl_route_set_family(route.get(), AF_INET);
  rtnl_route_set_table(route.get(), RT_TABLE_MAIN);
  if (rtnl_route_set_dst(route.get(), dst.get()) < 0) return "rtnl_route_set_dst";
  int libnl_rc = 0;
  const int err = CallWithKernelErrno(sock->get(), [&] {
    libnl_rc = rtnl_route_delete(sock->get(), route.get(), 0);
    return libnl_rc;
  });
  if (err != ESRCH) return "kernel errno " + std::to_string(err) + ", expected ESRCH";
  if (NlErrorToErrno(libnl_rc) != ENOENT)
    return "libnl's code changed: " + std::to_string(libnl_rc);
  // The callback is gone afterwards: a plain libnl call reports libnl's own code again.
  const int again = rtnl_route_delete(sock->get(), route.get(), 0);
  if (NlErrorToErrno(again) != ENOENT) return "after: " + std::to_string(again);
  return {};
}

TEST(NetlinkTest, CallWithKernelErrnoKeepsTheKernelsErrno) {
  auto outcome = testing::RunInChild(DeleteMissingRoute);
  if (outcome.skipped()) GTEST_SKIP() << outcome.message;
  EXPECT_TRUE(outcome.passed()) << outcome.message;
}

}  // namespace
}  // namespace sbx::netns
