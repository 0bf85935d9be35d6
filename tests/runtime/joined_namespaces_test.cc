// --userns, --userns2 and --pidns at plan level: what the compiler decides, how the plan
// prints, how the bwrap backend renders it, and the child's failure messages.
#include <gtest/gtest.h>
#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <vector>

#include "runtime/bwrap_render.h"
#include "runtime/failure_message.h"
#include "runtime/plan_compiler.h"
#include "runtime/plan_printer.h"

#include "tests/support/plan_fixtures.h"

namespace sbx::runtime {
namespace {

using fixtures::Compile;
using fixtures::RootHost;
using fixtures::UserHost;
using Args = std::vector<std::string>;

// A minimal spec: ro /usr, --proc, running `true`.
SandboxSpec SmallSpec() {
  SandboxSpec spec;
  spec.ops = {BindOp{.source = "/usr", .dest = "/usr", .read_only = true}, ProcOp{.dest = "/proc"}};
  spec.env = {"PATH=/usr/bin"};
  spec.command = {"true"};
  return spec;
}

TEST(JoinedNamespacesTest, UsernsReplacesTheImpliedUserNamespace) {
  SandboxSpec spec = SmallSpec();
  spec.userns_fd = 3;
  Plan plan = Compile(spec, UserHost());
  EXPECT_EQ(plan.clone_flags & CLONE_NEWUSER, 0U);
  EXPECT_FALSE(plan.userns.has_value());  // no maps: the joined namespace has its own
  EXPECT_EQ(plan.joined.userns_fd, 3);
  EXPECT_FALSE(plan.joined.switch_uid.has_value());
  EXPECT_FALSE(plan.joined.switch_gid.has_value());
  // The joined namespace hands out a full bounding set; it is trimmed as for a new one.
  ASSERT_TRUE(plan.caps.bounding.has_value());
  EXPECT_EQ(*plan.caps.bounding, 0U);
  EXPECT_EQ(plan.sandbox_uid, 1000U);
}

TEST(JoinedNamespacesTest, UsernsSwitchesOnlyToIdsThatDiffer) {
  SandboxSpec spec = SmallSpec();
  spec.userns_fd = 0;  // fd 0 is a valid choice since 0.11.1
  spec.uid = 5;
  spec.gid = 1000;
  Plan plan = Compile(spec, UserHost());
  EXPECT_EQ(plan.joined.userns_fd, 0);
  EXPECT_EQ(plan.joined.switch_uid, 5U);
  EXPECT_FALSE(plan.joined.switch_gid.has_value());
  EXPECT_EQ(plan.sandbox_uid, 5U);
}

TEST(JoinedNamespacesTest, RootWithUsernsKeepsItsCapabilitiesAndBoundsThem) {
  SandboxSpec spec = SmallSpec();
  spec.userns_fd = 4;
  Plan plan = Compile(spec, RootHost());
  EXPECT_EQ(plan.clone_flags & CLONE_NEWUSER, 0U);
  EXPECT_TRUE(plan.caps.skip_capset);
  ASSERT_TRUE(plan.caps.bounding.has_value());
  EXPECT_EQ(*plan.caps.bounding, RootHost().effective_caps);
}

TEST(JoinedNamespacesTest, PidnsIsJoinedNotCloned) {
  SandboxSpec spec = SmallSpec();
  spec.pidns_fd = 5;
  Plan plan = Compile(spec, RootHost());
  EXPECT_EQ(plan.clone_flags & CLONE_NEWPID, 0U);
  EXPECT_EQ(plan.joined.pidns_fd, 5);
  EXPECT_FALSE(plan.joined.new_pidns_below);
  EXPECT_TRUE(plan.fresh_proc);  // bwrap mounts a new procfs for a joined pid namespace
  EXPECT_FALSE(plan.reaper);     // no pid 1 of our own: the namespace has one

  spec.unshare_pid = true;
  plan = Compile(spec, RootHost());
  EXPECT_EQ(plan.clone_flags & CLONE_NEWPID, 0U);
  EXPECT_TRUE(plan.joined.new_pidns_below);
  EXPECT_TRUE(plan.reaper);  // pid 1 of the new namespace below the joined one
}

TEST(JoinedNamespacesTest, GoldenPlanWithAllThree) {
  SandboxSpec spec = SmallSpec();
  spec.userns_fd = 3;
  spec.userns2_fd = 4;
  spec.pidns_fd = 5;
  spec.unshare_pid = true;
  spec.uid = 0;
  spec.gid = 0;
  Plan plan = Compile(spec, UserHost());
  EXPECT_EQ(PrintPlan(plan),
            "mode: unprivileged\n"
            "namespaces: mnt\n"
            "join user namespace: fd 3 before clone then uid 0 then gid 0\n"
            "join pid namespace: fd 5, then a new pid namespace below it\n"
            "join user namespace after setup: fd 4\n"
            "sandbox ids: 0:0\n"
            "op 0: bind /usr -> /usr (ro)\n"
            "op 1: proc /proc\n"
            "caps: capabilities: bounding set keeps none\n"
            "caps: capabilities: permitted=effective=inheritable none\n"
            "caps: capabilities: ambient raise none before exec\n"
            "seccomp programs: 0\n"
            "no_new_privs: yes; new session: no; die with parent: no\n"
            "pid 1: reaper\n"
            "cwd: /home/user | /\n"
            "exec: true argv: true\n"
            "env: 1 variables\n");
}

TEST(JoinedNamespacesTest, PlansWithoutThemPrintNoJoinLines) {
  Plan plan = Compile(SmallSpec(), UserHost());
  EXPECT_EQ(PrintPlan(plan).find("join "), std::string::npos);
}

TEST(JoinedNamespacesTest, BwrapBackendPassesTheFds) {
  SandboxSpec spec = SmallSpec();
  spec.userns_fd = 3;
  spec.userns2_fd = 4;
  spec.pidns_fd = 5;
  spec.unshare_pid = true;
  spec.uid = 7;
  Args options = RenderBwrapOptions(Compile(spec, UserHost()));
  Args expected_start = {"--unshare-pid", "--userns", "3",     "--userns2", "4",
                         "--pidns",       "5",        "--uid", "7"};
  ASSERT_GE(options.size(), expected_start.size());
  EXPECT_EQ(Args(options.begin(), options.begin() + expected_start.size()), expected_start);
  // No --unshare-user: bwrap refuses it with --userns.
  EXPECT_EQ(std::find(options.begin(), options.end(), "--unshare-user"), options.end());
}

TEST(JoinedNamespacesTest, BwrapBackendAloneUserns2AndPidns) {
  SandboxSpec spec = SmallSpec();
  spec.userns2_fd = 55;
  Args options = RenderBwrapOptions(Compile(spec, UserHost()));
  EXPECT_EQ(Args(options.begin(), options.begin() + 3),
            (Args{"--unshare-user", "--userns2", "55"}));
  spec = SmallSpec();
  spec.pidns_fd = 0;
  options = RenderBwrapOptions(Compile(spec, RootHost()));
  EXPECT_EQ(Args(options.begin(), options.begin() + 2), (Args{"--pidns", "0"}));
}

std::string Render(const Plan& plan, Phase phase, int err, uint32_t detail = 0) {
  return RenderFailure(plan, SetupFailure{static_cast<uint32_t>(phase), 0, err, detail}, "");
}

TEST(JoinedNamespacesTest, ChildFailureMessagesAreBwraps) {
  SandboxSpec spec = SmallSpec();
  spec.userns_fd = 3;
  spec.uid = 5;
  spec.gid = 6;
  Plan plan = Compile(spec, UserHost());
  EXPECT_EQ(Render(plan, Phase::kJoinPidns, EBADF, 0), "Setting pidns failed: Bad file descriptor");
  EXPECT_EQ(Render(plan, Phase::kJoinPidns, EAGAIN, 1),
            "Can't fork for --pidns: Resource temporarily unavailable");
  EXPECT_EQ(Render(plan, Phase::kJoinPidns, EPERM, 2), "unshare pid ns: Operation not permitted");
  EXPECT_EQ(Render(plan, Phase::kJoinPidns, EINVAL, 3), "Can't send pid: Invalid argument");
  EXPECT_EQ(Render(plan, Phase::kSwitchJoinedIds, EINVAL, 0),
            "unable to switch to uid 5: Invalid argument");
  EXPECT_EQ(Render(plan, Phase::kSwitchJoinedIds, EPERM, 1),
            "unable to switch to gid 6: Operation not permitted");
  EXPECT_EQ(Render(plan, Phase::kJoinUserns2, EINVAL), "Setting userns2 failed: Invalid argument");
}

}  // namespace
}  // namespace sbx::runtime
