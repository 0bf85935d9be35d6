// The `run`-only parts of a plan: tmpfs inode counts, the /dev size, the sandbox's own
// sysctls and rlimits. The bwrap face never sets them, and the bwrap renderer drops what
// bwrap cannot express.
#include <sys/resource.h>

#include <gtest/gtest.h>

#include <algorithm>

#include "runtime/bwrap_render.h"
#include "runtime/failure_message.h"
#include "runtime/plan_printer.h"
#include "tests/support/plan_fixtures.h"

namespace sbx::runtime {
namespace {

using fixtures::Compile;
using fixtures::TypicalSpec;
using fixtures::UserHost;

SandboxSpec SpecWithLimits() {
  SandboxSpec spec = TypicalSpec();
  spec.ops = {DevOp{.dest = "/dev", .size = 65536, .nr_inodes = 64},
              TmpfsOp{.dest = "/tmp", .perms = 01777, .size = 8388608, .nr_inodes = 1024}};
  spec.self_limits.sysctls = {{"user/max_user_namespaces", 0}, {"user/max_inotify_instances", 64}};
  spec.self_limits.rlimits = {{RLIMIT_NPROC, 4096}, {RLIMIT_CORE, 0}};
  return spec;
}

TEST(SelfLimitsPlanTest, ThePlanCarriesAndPrintsThem) {
  Plan plan = Compile(SpecWithLimits(), UserHost());
  ASSERT_EQ(plan.self_limits.sysctls.size(), 2U);
  ASSERT_EQ(plan.self_limits.rlimits.size(), 2U);
  std::string text = PrintPlan(plan);
  for (const char* line :
       {"op 0: dev /dev size=65536 nr_inodes=64\n",
        "op 1: tmpfs /tmp mode=1777 size=8388608 nr_inodes=1024\n",
        "sysctl in the sandbox's user namespace: user/max_user_namespaces = 0\n",
        "sysctl in the sandbox's user namespace: user/max_inotify_instances = 64\n",
        "rlimit: nproc at most 4096\n", "rlimit: core at most 0\n"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << "in\n" << text;
  }
}

// Without a user namespace of the sandbox's own, the sysctls would be the host's.
TEST(SelfLimitsPlanTest, SysctlsNeedAUserNamespace) {
  SandboxSpec spec = SpecWithLimits();
  spec.unshare_user_try = false;
  auto plan = CompilePlan(spec, fixtures::RootHost());
  ASSERT_FALSE(plan);
  EXPECT_NE(plan.error().Render().find("need a user namespace"), std::string::npos);
  spec.unshare_user = true;
  EXPECT_TRUE(CompilePlan(spec, fixtures::RootHost()));
}

TEST(SelfLimitsPlanTest, APlanWithoutThemPrintsAsBefore) {
  std::string text = PrintPlan(Compile(TypicalSpec(), UserHost()));
  EXPECT_EQ(text.find("sysctl"), std::string::npos) << text;
  EXPECT_EQ(text.find("rlimit"), std::string::npos) << text;
  EXPECT_EQ(text.find("nr_inodes"), std::string::npos) << text;
  EXPECT_NE(text.find("op 3: dev /dev\n"), std::string::npos) << text;
}

TEST(SelfLimitsPlanTest, BwrapGetsTheSizeButNoInodeCountNorDevSize) {
  std::vector<std::string> args = RenderBwrapArgs(Compile(SpecWithLimits(), UserHost()));
  auto at = std::find(args.begin(), args.end(), "--size");
  ASSERT_NE(at, args.end());
  EXPECT_EQ(*(at + 1), "8388608");
  EXPECT_EQ(std::count(args.begin(), args.end(), "--size"), 1);
  for (const auto& arg : args) EXPECT_EQ(arg.find("nr_inodes"), std::string::npos) << arg;
}

TEST(SelfLimitsPlanTest, AFailureNamesTheSetting) {
  Plan plan = Compile(SpecWithLimits(), UserHost());
  SetupFailure sysctl{static_cast<uint32_t>(Phase::kSelfLimits), 0, EACCES, 1};
  EXPECT_EQ(RenderFailure(plan, sysctl, ""),
            "Can't set /proc/sys/user/max_inotify_instances in the sandbox: Permission denied");
  SetupFailure rlimit{static_cast<uint32_t>(Phase::kSelfLimits), 0, EPERM, 3};
  EXPECT_EQ(
      RenderFailure(plan, rlimit, ""),
      "Can't lower resource limit " + std::to_string(RLIMIT_CORE) + ": Operation not permitted");
}

}  // namespace
}  // namespace sbx::runtime
