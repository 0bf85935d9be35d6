#include "runtime/plan_compiler.h"

#include <gtest/gtest.h>
#include <sched.h>

#include "runtime/plan_printer.h"

#include "tests/support/plan_fixtures.h"

namespace sbx::runtime {
namespace {

using fixtures::RootHost;
using fixtures::TypicalSpec;
using fixtures::UserHost;

TEST(PlanCompilerTest, GoldenPlanForUnprivilegedCaller) {
  auto plan = CompilePlan(TypicalSpec(), UserHost());
  ASSERT_TRUE(plan) << plan.error().Render();
  EXPECT_EQ(PrintPlan(*plan),
            "mode: unprivileged\n"
            "namespaces: user mnt pid net ipc uts cgroup\n"
            "uid map: 0 1000 1\n"
            "gid map: 0 1000 1\n"
            "nested uid map: 1000 0 1\n"
            "nested gid map: 1000 0 1\n"
            "sandbox ids: 1000:1000\n"
            "op 0: bind /usr -> /usr (ro)\n"
            "op 1: symlink /bin -> usr/bin\n"
            "op 2: proc /proc\n"
            "op 3: dev /dev\n"
            "op 4: tmpfs /tmp mode=0755\n"
            "loopback: up\n"
            "caps: capabilities: bounding set keeps none\n"
            "caps: capabilities: permitted=effective=inheritable none\n"
            "caps: capabilities: ambient raise none before exec\n"
            "seccomp programs: 0\n"
            "no_new_privs: yes; new session: yes; die with parent: yes\n"
            "pid 1: reaper\n"
            "cwd: /home/user | /home/user | /\n"
            "exec: true argv: true\n"
            "env: 2 variables\n");
}

TEST(PlanCompilerTest, GoldenPlanForRootCaller) {
  SandboxSpec spec = TypicalSpec();
  spec.unshare_user_try = false;
  auto plan = CompilePlan(spec, RootHost());
  ASSERT_TRUE(plan) << plan.error().Render();
  EXPECT_EQ(PrintPlan(*plan),
            "mode: root\n"
            "namespaces: mnt pid net ipc uts cgroup\n"
            "sandbox ids: 0:0\n"
            "op 0: bind /usr -> /usr (ro)\n"
            "op 1: symlink /bin -> usr/bin\n"
            "op 2: proc /proc\n"
            "op 3: dev /dev\n"
            "op 4: tmpfs /tmp mode=0755\n"
            "loopback: up\n"
            "caps: capabilities: bounding set unchanged (no new user namespace)\n"
            "caps: capabilities: caller's sets kept, capset skipped (root caller, no "
            "--cap-add/--cap-drop)\n"
            "caps: capabilities: ambient raise all before exec\n"
            "seccomp programs: 0\n"
            "no_new_privs: yes; new session: yes; die with parent: yes\n"
            "pid 1: reaper\n"
            "cwd: /work | /home/user | /\n"
            "exec: true argv: true\n"
            "env: 2 variables\n");
}

TEST(PlanCompilerTest, RootCallerGetsNoUserNamespaceUnlessAsked) {
  SandboxSpec spec = TypicalSpec();
  spec.unshare_user_try = false;
  auto plan = CompilePlan(spec, RootHost());
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->mode, PrivilegeMode::kRoot);
  EXPECT_FALSE(plan->userns.has_value());
  EXPECT_EQ(plan->clone_flags & CLONE_NEWUSER, 0U);
  EXPECT_TRUE(plan->caps.skip_capset);  // root without cap options keeps its caps
}

TEST(PlanCompilerTest, UserTryCreatesUserNamespaceForRootWhenAvailable) {
  auto plan = CompilePlan(TypicalSpec(), RootHost());
  ASSERT_TRUE(plan);
  ASSERT_TRUE(plan->userns.has_value());
  EXPECT_EQ(plan->userns->uid.inside, 0U);
  EXPECT_EQ(plan->userns->uid.outside, 0U);
  EXPECT_FALSE(plan->userns->second_uid.has_value());
  HostFacts no_userns = RootHost();
  no_userns.user_namespaces = false;
  plan = CompilePlan(TypicalSpec(), no_userns);
  ASSERT_TRUE(plan);
  EXPECT_FALSE(plan->userns.has_value());
}

TEST(PlanCompilerTest, WithoutDevTheCallerIsMappedDirectly) {
  SandboxSpec spec = TypicalSpec();
  spec.ops.erase(spec.ops.begin() + 3);  // no --dev
  auto plan = CompilePlan(spec, UserHost());
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->userns->uid.inside, 1000U);
  EXPECT_EQ(plan->userns->uid.outside, 1000U);
  EXPECT_FALSE(plan->userns->second_uid.has_value());
}

TEST(PlanCompilerTest, UidOptionChangesTheSandboxIds) {
  SandboxSpec spec = TypicalSpec();
  spec.uid = 0;
  spec.gid = 0;
  auto plan = CompilePlan(spec, UserHost());
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->sandbox_uid, 0U);
  EXPECT_FALSE(plan->userns->second_uid.has_value());  // --dev maps to 0 already
}

TEST(PlanCompilerTest, RelativeBindSourcesAreMadeAbsolute) {
  SandboxSpec spec = TypicalSpec();
  spec.ops = {BindOp{.source = "data", .dest = "/data"}};
  auto plan = CompilePlan(spec, UserHost());
  ASSERT_TRUE(plan);
  EXPECT_EQ(std::get<BindOp>(plan->ops[0]).source, "/home/user/data");
}

TEST(PlanCompilerTest, ReaperOnlyWhenNeeded) {
  SandboxSpec spec = TypicalSpec();
  spec.unshare_pid = false;
  auto plan = CompilePlan(spec, UserHost());
  ASSERT_TRUE(plan);
  EXPECT_FALSE(plan->reaper);
  EXPECT_FALSE(plan->fresh_proc);
  spec.sync_fd = 5;
  plan = CompilePlan(spec, UserHost());
  EXPECT_TRUE(plan->reaper);
  spec = TypicalSpec();
  spec.as_pid_1 = true;
  plan = CompilePlan(spec, UserHost());
  EXPECT_FALSE(plan->reaper);
}

TEST(PlanCompilerTest, ChdirAndArgv0) {
  SandboxSpec spec = TypicalSpec();
  spec.chdir = "/tmp";
  spec.argv0 = "renamed";
  auto plan = CompilePlan(spec, UserHost());
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->cwd_candidates, std::vector<std::string>{"/tmp"});
  EXPECT_TRUE(plan->chdir_is_explicit);
  EXPECT_EQ(plan->exec_file, "true");
  EXPECT_EQ(plan->argv.front(), "renamed");
}

TEST(PlanCompilerTest, MissingCgroupNamespaceIsAnErrorOnlyWhenRequired) {
  HostFacts host = UserHost();
  host.cgroup_namespaces = false;
  SandboxSpec spec = TypicalSpec();
  auto plan = CompilePlan(spec, host);  // -try: silently skipped
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->clone_flags & CLONE_NEWCGROUP, 0U);
  spec.unshare_cgroup = true;
  plan = CompilePlan(spec, host);
  ASSERT_FALSE(plan);
  EXPECT_EQ(plan.error().Render(),
            "Cannot create new cgroup namespace because the kernel does not support it");
}

TEST(PlanCompilerTest, UnprivilegedCapAddIsKeptThroughExec) {
  SandboxSpec spec = TypicalSpec();
  spec.cap_changes = {security::CapChange{security::CapChange::Kind::kAdd, 12}};  // CAP_NET_ADMIN
  auto plan = CompilePlan(spec, UserHost());
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->caps.ambient, security::CapBits{1} << 12);
  EXPECT_EQ(plan->caps.bounding, security::CapBits{1} << 12);
}

}  // namespace
}  // namespace sbx::runtime
