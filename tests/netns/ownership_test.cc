#include "netns/ownership.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "base/unique_fd.h"
#include "tests/netns/ns_child.h"

namespace sbx::netns {
namespace {

using testing::EnterNestedUserNs;
using testing::EnterUserAndNetNs;
using testing::RunInChild;

// "" when `status` is the not-owned error (EPERM), else a description.
std::string ExpectNotOwned(const base::Status& status) {
  if (status) return "check passed for a foreign network namespace";
  if (status.error().err() != EPERM) return "unexpected error: " + status.error().Render();
  if (status.error().Render().find("not owned by our user namespace") == std::string::npos) {
    return "unexpected message: " + status.error().Render();
  }
  return {};
}

TEST(OwnershipTest, PassesInOwnNetns) {
  auto outcome = RunInChild([]() -> std::string {
    if (auto entered = EnterUserAndNetNs(true); !entered.empty()) return entered;
    if (auto status = CheckNetnsOwnedByOwnUserns(); !status) return status.error().Render();
    return {};
  });
  if (outcome.skipped()) GTEST_SKIP() << outcome.message;
  EXPECT_TRUE(outcome.passed()) << outcome.message;
}

// The supervisor's failure case: a user namespace that still sits in a network namespace
// created by its parent (here: its parent's fresh netns; as root on the host it would be the
// host's netns). NS_GET_USERNS refuses to name an ancestor: EPERM.
TEST(OwnershipTest, FailsForNetnsOwnedByParentUserns) {
  auto outcome = RunInChild([]() -> std::string {
    if (::geteuid() == 0) {
      if (::unshare(CLONE_NEWNET) != 0) return std::string("unshare(CLONE_NEWNET) failed");
    } else if (auto entered = EnterUserAndNetNs(true); !entered.empty()) {
      return entered;
    }
    if (auto status = CheckNetnsOwnedByOwnUserns(); !status) {
      return "own netns: " + status.error().Render();
    }
    if (auto nested = EnterNestedUserNs(); !nested.empty()) return nested;
    return ExpectNotOwned(CheckNetnsOwnedByOwnUserns());
  });
  if (outcome.skipped()) GTEST_SKIP() << outcome.message;
  EXPECT_TRUE(outcome.passed()) << outcome.message;
}

// The other direction: a netns owned by a child user namespace, checked against the
// parent's user namespace, is not "ours" either (the kernel answers, the inodes differ).
TEST(OwnershipTest, FailsForNetnsOwnedByChildUserns) {
  auto outcome = RunInChild([]() -> std::string {
    base::UniqueFd outer_user(::open("/proc/self/ns/user", O_RDONLY | O_CLOEXEC));
    if (!outer_user) return "open /proc/self/ns/user";
    if (auto entered = EnterUserAndNetNs(true); !entered.empty()) return entered;
    base::UniqueFd net(::open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC));
    if (!net) return "open /proc/self/ns/net";
    auto status = CheckNetnsOwnedByUserns(net.get(), outer_user.get());
    if (auto err = ExpectNotOwned(status); !err.empty()) return err;
    if (status.error().Render().find("owned by user:[") == std::string::npos) {
      return "message names no namespaces: " + status.error().Render();
    }
    return {};
  });
  if (outcome.skipped()) GTEST_SKIP() << outcome.message;
  EXPECT_TRUE(outcome.passed()) << outcome.message;
}

// Root without a new user namespace: unshare(CLONE_NEWNET) alone gives a netns owned by
// root's current user namespace (the initial one on a host): the check passes.
TEST(OwnershipTest, RootNewNetOnlyIsOwnedByOwnUserns) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: unshare(CLONE_NEWNET) without a userns";
  auto outcome = RunInChild([]() -> std::string {
    if (::unshare(CLONE_NEWNET) != 0) return "unshare(CLONE_NEWNET) failed";
    if (auto status = CheckNetnsOwnedByOwnUserns(); !status) return status.error().Render();
    return {};
  });
  EXPECT_TRUE(outcome.passed()) << outcome.message;
}

TEST(OwnershipTest, BadFdIsAnError) {
  base::UniqueFd not_ns(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(not_ns);
  auto status = CheckNetnsOwnedByUserns(not_ns.get(), not_ns.get());
  ASSERT_FALSE(status);
  EXPECT_EQ(status.error().err(), ENOTTY);
}

}  // namespace
}  // namespace sbx::netns
