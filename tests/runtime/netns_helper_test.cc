// When the sandbox's network namespace is made by the helper beside the mounts
// (runtime/child/netns_helper.h), and the message when that fails.
#include <gtest/gtest.h>

#include <cerrno>

#include "runtime/child/netns_helper.h"
#include "runtime/failure_message.h"
#include "runtime/plan_compiler.h"

#include "tests/support/plan_fixtures.h"

namespace sbx::runtime {
namespace {

using fixtures::Compile;
using fixtures::RootHost;
using fixtures::TypicalSpec;
using fixtures::UserHost;

TEST(NetnsHelperTest, UsedForTheTypicalProfileOfBothCallers) {
  EXPECT_TRUE(NetnsFromHelper(Compile(TypicalSpec(), UserHost())));
  EXPECT_TRUE(NetnsFromHelper(Compile(TypicalSpec(), RootHost())));
}

TEST(NetnsHelperTest, NotWithoutANewNetworkNamespace) {
  SandboxSpec spec = TypicalSpec();
  spec.unshare_net = false;
  EXPECT_FALSE(NetnsFromHelper(Compile(spec, UserHost())));
}

// Anything that looks at the child's namespaces from outside before it runs must see the
// final ones, so the clone makes them as bwrap does.
TEST(NetnsHelperTest, NotWhenTheNamespacesAreObservedBeforeTheCommand) {
  for (int which = 0; which < 3; ++which) {
    SandboxSpec spec = TypicalSpec();
    if (which == 0) spec.info_fd = 5;
    if (which == 1) spec.json_status_fd = 5;
    if (which == 2) spec.userns_block_fd = 5;
    EXPECT_FALSE(NetnsFromHelper(Compile(spec, UserHost()))) << which;
  }
}

TEST(NetnsHelperTest, NotWithJoinedNamespacesOrMapsWrittenByTheMonitor) {
  SandboxSpec joined = TypicalSpec();
  joined.pidns_fd = 5;
  EXPECT_FALSE(NetnsFromHelper(Compile(joined, UserHost())));
  SandboxSpec run_as = TypicalSpec();
  run_as.run_as = SandboxSpec::HostIds{65534, 65534};
  Plan plan = Compile(run_as, RootHost());
  ASSERT_TRUE(plan.userns && plan.userns->written_by_parent);
  EXPECT_FALSE(NetnsFromHelper(plan));
}

TEST(NetnsHelperTest, FailureReadsLikeTheCloneFailure) {
  Plan plan = Compile(TypicalSpec(), UserHost());
  SetupFailure f{static_cast<uint32_t>(Phase::kCreateNetns), 0, ENOMEM, 0};
  EXPECT_EQ(RenderFailure(plan, f, ""), "Creating new namespace failed: Cannot allocate memory");
  f.err = ENOSPC;
  EXPECT_EQ(RenderFailure(plan, f, ""),
            "Creating new namespace failed: nesting depth or /proc/sys/user/max_*_namespaces "
            "exceeded (ENOSPC)");
}

}  // namespace
}  // namespace sbx::runtime
