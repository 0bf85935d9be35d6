#include "netns/loopback.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <gtest/gtest.h>
#include <linux/if_addr.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "base/unique_fd.h"
#include "netns/link_state.h"
#include "tests/netns/ns_child.h"

namespace sbx::netns {
namespace {

using testing::ChildOutcome;
using testing::EnterNestedUserNs;
using testing::EnterUserAndNetNs;
using testing::Note;
using testing::RunInChild;

std::string Describe(const LoopbackFailure& failure) { return ToError(failure).Render(); }

int CountOpenFds() {
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  int count = 0;
  while (::readdir(dir) != nullptr) ++count;
  ::closedir(dir);
  return count;
}

// "" when the namespace holds exactly one link, lo, up and running, with 127.0.0.1/8
// scope host, permanent.
std::string CheckOnlyLoUp() {
  auto links = ListLinks();
  if (!links) return links.error().Render();
  const std::string seen = DescribeLinks(*links);
  if (links->size() != 1) return "expected lo alone, found:\n" + seen;
  const LinkState& lo = links->front();
  if (lo.name != "lo" || !lo.up() || !lo.loopback() || !lo.running()) {
    return "lo not up/loopback/running: " + seen;
  }
  auto v4 = std::find_if(lo.addresses.begin(), lo.addresses.end(),
                         [](const IpAddress& ip) { return ip.family == AF_INET; });
  if (v4 == lo.addresses.end() || v4->address != "127.0.0.1" || v4->prefix_len != 8) {
    return "no 127.0.0.1/8 on lo: " + seen;
  }
  if (v4->scope != RT_SCOPE_HOST || (v4->flags & IFA_F_PERMANENT) == 0) {
    return "127.0.0.1 has scope " + std::to_string(v4->scope) + ", flags " +
           std::to_string(v4->flags);
  }
  return {};
}

std::string BringUpAndCheck(bool write_id_map) {
  if (auto entered = EnterUserAndNetNs(write_id_map); !entered.empty()) return entered;
  if (auto failure = BringUpLoopback()) return Describe(*failure);
  return CheckOnlyLoUp();
}

void ExpectPassed(const ChildOutcome& outcome) { EXPECT_TRUE(outcome.passed()) << outcome.message; }

TEST(LoopbackTest, StepsRenderAsBwrapMessages) {
  EXPECT_EQ(Describe({LoopbackStep::kLookUpLo, ENODEV}),
            "loopback: Failed to look up lo: No such device");
  EXPECT_EQ(Describe({LoopbackStep::kCreateSocket, EMFILE}),
            "loopback: Failed to create NETLINK_ROUTE socket: Too many open files");
  EXPECT_EQ(Describe({LoopbackStep::kBindSocket, EADDRINUSE}),
            "loopback: Failed to bind NETLINK_ROUTE socket: Address already in use");
  EXPECT_EQ(Describe({LoopbackStep::kNewAddr, EPERM}),
            "loopback: Failed RTM_NEWADDR: Operation not permitted");
  EXPECT_EQ(Describe({LoopbackStep::kNewLink, EPERM}),
            "loopback: Failed RTM_NEWLINK: Operation not permitted");
  EXPECT_EQ(ToError({LoopbackStep::kNewAddr, EACCES}).err(), EACCES);
}

// bwrap's order: lo is configured before the child writes its own id map.
TEST(LoopbackTest, BringsUpLoBeforeIdMapIsWritten) {
  auto outcome = RunInChild([] { return BringUpAndCheck(/*write_id_map=*/false); });
  if (outcome.skipped()) GTEST_SKIP() << outcome.message;
  ExpectPassed(outcome);
}

TEST(LoopbackTest, BringsUpLoWithIdMapWritten) {
  auto outcome = RunInChild([] { return BringUpAndCheck(/*write_id_map=*/true); });
  if (outcome.skipped()) GTEST_SKIP() << outcome.message;
  ExpectPassed(outcome);
}

TEST(LoopbackTest, SecondCallIsSuccess) {
  auto outcome = RunInChild([]() -> std::string {
    if (auto entered = EnterUserAndNetNs(true); !entered.empty()) return entered;
    if (auto failure = BringUpLoopback()) return "first: " + Describe(*failure);
    if (auto failure = BringUpLoopback()) return "second: " + Describe(*failure);
    return CheckOnlyLoUp();
  });
  if (outcome.skipped()) GTEST_SKIP() << outcome.message;
  ExpectPassed(outcome);
}

TEST(LoopbackTest, ClosesItsSocket) {
  auto outcome = RunInChild([]() -> std::string {
    if (auto entered = EnterUserAndNetNs(true); !entered.empty()) return entered;
    const int before = CountOpenFds();
    if (auto failure = BringUpLoopback()) return Describe(*failure);
    const int after = CountOpenFds();
    if (before != after) {
      return "open fds " + std::to_string(before) + " -> " + std::to_string(after);
    }
    return {};
  });
  if (outcome.skipped()) GTEST_SKIP() << outcome.message;
  ExpectPassed(outcome);
}

// Every 127/8 address is local once lo carries 127.0.0.1/8: the tunnel's route listeners
// bind 127.77.0.N without adding addresses.
std::string ConnectThroughRouteAddress() {
  if (auto entered = EnterUserAndNetNs(true); !entered.empty()) return entered;
  if (auto failure = BringUpLoopback()) return Describe(*failure);
  base::UniqueFd listener(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  ::inet_pton(AF_INET, "127.77.0.5", &addr.sin_addr);
  auto* sa = reinterpret_cast<sockaddr*>(&addr);
  socklen_t len = sizeof(addr);
  if (!listener || ::bind(listener.get(), sa, len) != 0 || ::listen(listener.get(), 1) != 0 ||
      ::getsockname(listener.get(), sa, &len) != 0) {
    return std::string("listen on 127.77.0.5: ") + std::strerror(errno);
  }
  base::UniqueFd client(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!client || ::connect(client.get(), sa, len) != 0) {
    return std::string("connect to 127.77.0.5: ") + std::strerror(errno);
  }
  base::UniqueFd server(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
  char byte = 'x';
  if (!server || ::write(client.get(), "y", 1) != 1 || ::read(server.get(), &byte, 1) != 1) {
    return std::string("accept/exchange: ") + std::strerror(errno);
  }
  return byte == 'y' ? "" : "wrong byte received";
}

TEST(LoopbackTest, TcpToRouteAddressWorksInsideNetns) {
  auto outcome = RunInChild(ConnectThroughRouteAddress);
  if (outcome.skipped()) GTEST_SKIP() << outcome.message;
  ExpectPassed(outcome);
}

TEST(LoopbackTest, FailsWithoutCapNetAdminWhileLoIsDown) {
  auto outcome = RunInChild([]() -> std::string {
    if (auto entered = EnterUserAndNetNs(true); !entered.empty()) return entered;
    // The netns belongs to the outer user namespace; the nested one has no CAP_NET_ADMIN
    // over it.
    if (auto nested = EnterNestedUserNs(); !nested.empty()) return nested;
    auto failure = BringUpLoopback();
    if (!failure) return "succeeded without CAP_NET_ADMIN";
    if (failure->step != LoopbackStep::kNewAddr || failure->err != EPERM) {
      return "unexpected failure: " + Describe(*failure);
    }
    return {};
  });
  if (outcome.skipped()) GTEST_SKIP() << outcome.message;
  ExpectPassed(outcome);
}

// systemd's rule: EPERM while lo is already up means someone else configured it.
TEST(LoopbackTest, PermissionErrorIsSuccessWhenLoIsAlreadyUp) {
  auto outcome = RunInChild([]() -> std::string {
    if (auto entered = EnterUserAndNetNs(true); !entered.empty()) return entered;
    if (auto failure = BringUpLoopback()) return "privileged: " + Describe(*failure);
    if (auto nested = EnterNestedUserNs(); !nested.empty()) return nested;
    if (auto failure = BringUpLoopback()) return "unprivileged: " + Describe(*failure);
    return CheckOnlyLoUp();
  });
  if (outcome.skipped()) GTEST_SKIP() << outcome.message;
  ExpectPassed(outcome);
}

}  // namespace
}  // namespace sbx::netns
