// The dry run's view of the agent's sandbox: what the supervisor adds (the network
// namespace), what it takes away (capabilities, its own mounts), and a bwrap line that a
// root caller can run as the sandbox's ids.
#include "dispatch/plan/dry_run.h"

#include <sched.h>

#include <gtest/gtest.h>

#include <string>

#include "tests/support/plan_fixtures.h"

namespace sbx::dispatch {
namespace {

runtime::Plan SupervisorPlan() {
  runtime::Plan plan;
  plan.clone_flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID;
  plan.ops = {runtime::BindOp{.source = "/usr", .dest = "/usr", .read_only = true},
              runtime::TmpfsOp{.dest = "/run/ateam-tunnel", .perms = 0755, .size = std::nullopt},
              runtime::BindOp{.source = "/build/ateam-sandbox",
                              .dest = "/run/ateam-tunnel/supervisor",
                              .read_only = true},
              runtime::BindOp{.source = "/run/ateam-sandbox-0/dispatch-x/route-0.sock",
                              .dest = "/run/ateam-tunnel/route-0.sock",
                              .read_only = true},
              runtime::BindDataOp{.fd = 9, .dest = "/etc/hosts", .read_only = true, .perms = 0644},
              runtime::BindOp{.source = "/w/ws", .dest = "/w/ws"}};
  plan.caps.permitted = plan.caps.effective = security::CapBits{1} << 21;  // CAP_SYS_ADMIN
  plan.caps.bounding = security::CapBits{1} << 21;
  plan.seccomp_programs = {{1, 2, 3}};
  plan.as_pid_1 = true;
  plan.exec_file = "/run/ateam-tunnel/supervisor";
  plan.argv = {"/run/ateam-tunnel/supervisor", "supervise", "--", "echo", "hi"};
  plan.env = {"HOME=/home/ateam-sandbox"};
  return plan;
}

TEST(DryRunTest, TheAgentHasTheNetworkNamespaceNoCapabilitiesAndNoTunnelMounts) {
  runtime::Plan agent = AgentViewPlan(SupervisorPlan(), {"echo", "hi"});
  EXPECT_NE(agent.clone_flags & CLONE_NEWNET, 0U);
  EXPECT_TRUE(agent.configure_loopback);
  EXPECT_EQ(agent.caps.permitted, 0U);
  EXPECT_EQ(agent.caps.effective, 0U);
  EXPECT_EQ(agent.caps.bounding, security::CapBits{0});
  EXPECT_TRUE(agent.seccomp_programs.empty());
  ASSERT_EQ(agent.ops.size(), 2U);
  EXPECT_EQ(std::get<runtime::BindOp>(agent.ops[0]).dest, "/usr");
  EXPECT_EQ(std::get<runtime::BindOp>(agent.ops[1]).dest, "/w/ws");
  EXPECT_EQ(agent.exec_file, "echo");
  EXPECT_EQ(agent.argv, (std::vector<std::string>{"echo", "hi"}));
  EXPECT_FALSE(agent.as_pid_1);
}

TEST(DryRunTest, TheBwrapLineHasNoFdsNoSeccompAndTheAgentsCommand) {
  runtime::Plan agent = AgentViewPlan(SupervisorPlan(), {"echo", "hi"});
  std::string line = RunnableBwrapLine(agent, "/usr/bin/bwrap", std::nullopt);
  EXPECT_TRUE(line.starts_with("/usr/bin/bwrap ")) << line;
  EXPECT_NE(line.find("--unshare-net"), std::string::npos) << line;
  EXPECT_EQ(line.find("seccomp"), std::string::npos) << line;
  EXPECT_EQ(line.find("-data"), std::string::npos) << line;
  EXPECT_EQ(line.find("ateam-tunnel"), std::string::npos) << line;
  EXPECT_TRUE(line.ends_with(" -- echo hi")) << line;
}

TEST(DryRunTest, ARootCallersLineRunsBwrapAsTheSandboxIds) {
  runtime::Plan agent = AgentViewPlan(SupervisorPlan(), {"true"});
  std::string line =
      RunnableBwrapLine(agent, "bwrap", runtime::SandboxSpec::HostIds{.uid = 1234, .gid = 567});
  EXPECT_TRUE(line.starts_with("setpriv --reuid=1234 --regid=567 --clear-groups -- bwrap "))
      << line;
}

TEST(DryRunTest, ALeasedDispatchsLineNamesTheLeasedIds) {
  runtime::Plan agent = AgentViewPlan(SupervisorPlan(), {"true"});
  std::string line = RunnableBwrapLine(
      agent, "bwrap", runtime::SandboxSpec::HostIds{.uid = 65534, .gid = 65534}, /*leased=*/true);
  EXPECT_TRUE(line.starts_with(
      R"(setpriv --reuid="$LEASED_UID" --regid="$LEASED_GID" --clear-groups -- bwrap )"))
      << line;
}

HarvestPlan Harvest(const RunAsIds& run_as) {
  auto plan =
      CompileHarvestPlan({.workspace = "/w/ws", .run_as = run_as},
                         run_as ? runtime::fixtures::RootHost() : runtime::fixtures::UserHost());
  EXPECT_TRUE(plan) << plan.error().Render();
  return plan ? std::move(*plan) : HarvestPlan{};
}

// The harvest's sandboxes are shown with their script named, not spelt out (it is the same
// in every dispatch), and with the workspace read-only and no route out.
TEST(DryRunTest, TheHarvestRunsAreShownWithTheirScriptNamed) {
  const HarvestPlan harvest = Harvest(std::nullopt);
  const std::string patch = DescribeHarvestRun(harvest.patch, "patch", std::nullopt);
  EXPECT_NE(patch.find("argv: /bin/sh -c <the patch script> ateam-harvest ateam agent"),
            std::string::npos)
      << patch;
  EXPECT_NE(patch.find("bind /w/ws -> /w/ws (ro)"), std::string::npos) << patch;
  EXPECT_NE(patch.find("namespaces: user mnt pid net"), std::string::npos) << patch;
  EXPECT_NE(patch.find("env: HOME=/tmp\n"), std::string::npos) << patch;
  EXPECT_EQ(patch.find("format-patch"), std::string::npos) << "the script spelt out:\n" << patch;
  const std::string base = DescribeHarvestRun(harvest.base_read, "base read", std::nullopt);
  EXPECT_NE(base.find("argv: /bin/sh -c <the base read script> ateam-harvest\n"), std::string::npos)
      << base;
}

// A leased dispatch's git runs as the leased ids on both sides of its maps, which the dry
// run cannot know: named, never shown as the ids the plan was compiled with.
TEST(DryRunTest, ALeasedHarvestNamesTheLeasedIds) {
  const runtime::SandboxSpec::HostIds ids{.uid = 65534, .gid = 65534};
  const std::string patch = DescribeHarvestRun(Harvest(ids).patch, "patch", ids);
  EXPECT_NE(patch.find("uid map: LEASED_UID LEASED_UID 1\n"), std::string::npos) << patch;
  EXPECT_NE(patch.find("gid map: LEASED_GID LEASED_GID 1\n"), std::string::npos) << patch;
  EXPECT_NE(patch.find("sandbox ids: LEASED_UID:LEASED_GID\n"), std::string::npos) << patch;
  EXPECT_EQ(patch.find("65534"), std::string::npos) << patch;
}

}  // namespace
}  // namespace sbx::dispatch
