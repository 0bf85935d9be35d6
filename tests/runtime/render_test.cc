// Golden renderings: a Plan (hand-built, or compiled from a SandboxSpec with fixed
// HostFacts) turned into bwrap options, and the shell-quoted --dry-run line.
#include "runtime/bwrap_render.h"

#include <gtest/gtest.h>
#include <linux/capability.h>
#include <sched.h>

#include "runtime/plan_compiler.h"

#include "tests/support/plan_fixtures.h"

namespace sbx::runtime {
namespace {

using Args = std::vector<std::string>;

using fixtures::Compile;
using fixtures::RootHost;
using fixtures::TypicalSpec;
using fixtures::UserHost;

TEST(BwrapRenderTest, UnprivilegedTypicalPlan) {
  Plan plan = Compile(TypicalSpec(), UserHost());
  // Ids equal the caller's, and an unprivileged plan keeping no capability is bwrap's
  // default: neither is written. PWD never comes from the plan.
  EXPECT_EQ(RenderBwrapCommandLine(plan),
            "bwrap --unshare-user --unshare-ipc --unshare-pid --unshare-net --unshare-uts"
            " --unshare-cgroup"
            " --ro-bind /usr /usr --symlink usr/bin /bin --proc /proc --dev /dev --tmpfs /tmp"
            " --new-session --die-with-parent"
            " --clearenv --setenv HOME /home/user --setenv PATH /usr/bin"
            " -- true");
}

TEST(BwrapRenderTest, RootWithoutUserNamespaceKeepsItsCapabilities) {
  SandboxSpec spec = TypicalSpec();
  spec.unshare_user_try = false;
  spec.unshare_cgroup_try = false;
  spec.ops = {BindOp{.source = "/", .dest = "/", .read_only = true}};
  spec.env = {};
  spec.new_session = spec.die_with_parent = false;
  spec.command = {"sh", "-c", "exit 3"};
  Plan plan = Compile(spec, RootHost());
  EXPECT_EQ(RenderBwrapArgs(plan),
            (Args{"--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--ro-bind",
                  "/", "/", "--clearenv", "--", "sh", "-c", "exit 3"}));
}

TEST(BwrapRenderTest, RootWithUserNamespaceIdsAndCapabilities) {
  SandboxSpec spec;
  spec.unshare_user = true;
  spec.uid = 1000;
  spec.gid = 100;
  spec.cap_changes = {{security::CapChange::Kind::kDrop, std::nullopt},
                      {security::CapChange::Kind::kAdd, CAP_SYS_PTRACE},
                      {security::CapChange::Kind::kAdd, CAP_NET_ADMIN}};
  spec.ops = {DevOp{.dest = "/dev"}};
  spec.command = {"id"};
  Plan plan = Compile(spec, RootHost());
  EXPECT_EQ(
      RenderBwrapOptions(plan),
      (Args{"--unshare-user", "--uid", "1000", "--gid", "100", "--dev", "/dev", "--cap-drop", "ALL",
            "--cap-add", "CAP_NET_ADMIN", "--cap-add", "CAP_SYS_PTRACE", "--clearenv"}));
}

TEST(BwrapRenderTest, UnprivilegedIdsAndEveryCapability) {
  SandboxSpec spec;
  spec.uid = 0;
  spec.gid = 0;
  spec.ops = {DevOp{.dest = "/dev"}};  // nested user namespace: the first mapping is 0 -> 1000
  spec.cap_changes = {{security::CapChange::Kind::kAdd, std::nullopt}};
  spec.disable_userns = true;
  spec.unshare_user = true;
  spec.command = {"true"};
  Plan plan = Compile(spec, UserHost());
  EXPECT_EQ(RenderBwrapOptions(plan),
            (Args{"--unshare-user", "--disable-userns", "--uid", "0", "--gid", "0", "--dev", "/dev",
                  "--cap-add", "ALL", "--clearenv"}));
}

TEST(BwrapRenderTest, RootDroppingOneCapabilityListsTheRest) {
  SandboxSpec spec;
  spec.cap_changes = {{security::CapChange::Kind::kDrop, CAP_DAC_READ_SEARCH}};
  spec.command = {"true"};
  HostFacts host = RootHost();
  host.cap_last_cap = 3;
  host.effective_caps = security::AllCaps(3);
  Plan plan = Compile(spec, host);
  EXPECT_EQ(RenderBwrapOptions(plan),
            (Args{"--cap-drop", "ALL", "--cap-add", "CAP_CHOWN", "--cap-add", "CAP_DAC_OVERRIDE",
                  "--cap-add", "CAP_FOWNER", "--clearenv"}));
}

// Every op kind, with its modifiers, in plan order; plus every fd and process option.
Plan EveryOptionPlan() {
  Plan plan;
  plan.mode = PrivilegeMode::kRoot;
  plan.clone_flags = CLONE_NEWNS | CLONE_NEWUTS;
  plan.ops = {
      BindOp{.source = "/src", .dest = "/a"},
      BindOp{.source = "/src", .dest = "/b", .read_only = true, .skip_missing = true},
      BindOp{.source = "/dev", .dest = "/dev", .allow_devices = true},
      BindOp{.source = "/opt", .dest = "/opt", .allow_devices = true, .skip_missing = true},
      BindOp{.source = "/x", .dest = "/x", .skip_missing = true},
      BindFdOp{.fd = 5, .dest = "/fd"},
      BindFdOp{.fd = 6, .dest = "/rofd", .read_only = true},
      RemountRoOp{.dest = "/a"},
      ProcOp{.dest = "/proc"},
      DevOp{.dest = "/dev"},
      TmpfsOp{.dest = "/tmp", .perms = 01777, .size = 1048576},
      TmpfsOp{.dest = "/run"},
      MqueueOp{.dest = "/dev/mqueue"},
      DirOp{.dest = "/d", .perms = 0700},
      DirOp{.dest = "/e"},
      FileOp{.fd = 7, .dest = "/f", .perms = 0644},
      BindDataOp{.fd = 8, .dest = "/g"},
      BindDataOp{.fd = 9, .dest = "/h", .read_only = true, .perms = 0400},
      SymlinkOp{.target = "usr/lib", .dest = "/lib"},
      ChmodOp{.path = "/d", .mode = 0750},
      SetHostnameOp{.hostname = "box"},
      OverlayOp{.mode = OverlayOp::Mode::kReadWrite,
                .lower_sources = {"/l1", "/l2"},
                .upper = "/up",
                .work = "/work",
                .dest = "/o1"},
      OverlayOp{.mode = OverlayOp::Mode::kTemporary, .lower_sources = {"/l1"}, .dest = "/o2"},
      OverlayOp{.mode = OverlayOp::Mode::kReadOnly, .lower_sources = {"/l1", "/l2"}, .dest = "/o3"},
  };
  plan.caps.skip_capset = true;
  plan.seccomp_programs = {{0, 0, 0, 0, 0, 0, 0xff, 0x7f}, {}};
  plan.new_session = plan.die_with_parent = plan.as_pid_1 = true;
  plan.info_fd = 10;
  plan.json_status_fd = 11;
  plan.sync_fd = 12;
  plan.block_fd = 13;
  plan.userns_block_fd = 14;
  plan.lock_files = {"/lock1", "/lock2"};
  plan.cwd_candidates = {"/d"};
  plan.chdir_is_explicit = true;
  plan.exec_file = "/bin/sh";
  plan.argv = {"login-sh", "-c", "echo hi"};
  plan.env = {"A=1", "B=x=y", "EMPTY="};
  return plan;
}

TEST(BwrapRenderTest, EveryOptionInOrder) {
  // Compared as the --dry-run line, one option per literal, so the golden stays readable.
  EXPECT_EQ(RenderBwrapCommandLine(EveryOptionPlan(), "bwrap", {.seccomp_programs = {20, 21}}),
            "bwrap --unshare-uts"
            " --bind /src /a"
            " --ro-bind-try /src /b"
            " --dev-bind /dev /dev"
            " --dev-bind-try /opt /opt"
            " --bind-try /x /x"
            " --bind-fd 5 /fd"
            " --ro-bind-fd 6 /rofd"
            " --remount-ro /a"
            " --proc /proc"
            " --dev /dev"
            " --perms 1777 --size 1048576 --tmpfs /tmp"
            " --tmpfs /run"
            " --mqueue /dev/mqueue"
            " --perms 0700 --dir /d"
            " --dir /e"
            " --perms 0644 --file 7 /f"
            " --bind-data 8 /g"
            " --perms 0400 --ro-bind-data 9 /h"
            " --symlink usr/lib /lib"
            " --chmod 0750 /d"
            " --hostname box"
            " --overlay-src /l1 --overlay-src /l2 --overlay /up /work /o1"
            " --overlay-src /l1 --tmp-overlay /o2"
            " --overlay-src /l1 --overlay-src /l2 --ro-overlay /o3"
            " --add-seccomp-fd 20 --add-seccomp-fd 21"
            " --new-session --die-with-parent --as-pid-1"
            " --info-fd 10 --json-status-fd 11 --sync-fd 12 --block-fd 13 --userns-block-fd 14"
            " --lock-file /lock1 --lock-file /lock2"
            " --chdir /d"
            " --clearenv --setenv A 1 --setenv B 'x=y' --setenv EMPTY ''"
            " --argv0 login-sh"
            " -- /bin/sh -c 'echo hi'");
}

TEST(BwrapRenderTest, SeccompWithoutFdNumbersUsesPlaceholdersAndSeccompFdPassesThrough) {
  Plan plan;
  plan.seccomp_programs = {{1}, {2}};
  plan.exec_file = "true";
  plan.argv = {"true"};
  EXPECT_EQ(
      RenderBwrapOptions(plan, {.seccomp_programs = {30}}),
      (Args{"--add-seccomp-fd", "30", "--add-seccomp-fd", "<seccomp-program-1>", "--clearenv"}));
  plan.seccomp_programs.clear();
  plan.seccomp_fd = 4;
  plan.assert_userns_disabled = true;
  EXPECT_EQ(RenderBwrapOptions(plan),
            (Args{"--assert-userns-disabled", "--seccomp", "4", "--clearenv"}));
}

TEST(BwrapRenderTest, CommandStartingWithDashFollowsDoubleDash) {
  Plan plan;
  plan.exec_file = "-weird";
  plan.argv = {"-weird", "--help"};
  EXPECT_EQ(RenderBwrapArgs(plan), (Args{"--clearenv", "--", "-weird", "--help"}));
}

TEST(BwrapRenderTest, ShellQuote) {
  EXPECT_EQ(ShellQuote("--ro-bind"), "--ro-bind");
  EXPECT_EQ(ShellQuote("/usr/lib/x86_64-linux-gnu"), "/usr/lib/x86_64-linux-gnu");
  EXPECT_EQ(ShellQuote(""), "''");
  EXPECT_EQ(ShellQuote("a b"), "'a b'");
  EXPECT_EQ(ShellQuote("it's"), "'it'\\''s'");
  EXPECT_EQ(ShellQuote("$HOME"), "'$HOME'");
  EXPECT_EQ(ShellQuote("x=y"), "'x=y'");
  EXPECT_EQ(ShellQuote("a\nb"), "'a\nb'");
  EXPECT_EQ(ShellQuote("*"), "'*'");
}

TEST(BwrapRenderTest, CommandLineForDryRun) {
  Plan plan;
  plan.clone_flags = CLONE_NEWNS | CLONE_NEWNET;
  plan.ops = {BindOp{.source = "/my dir", .dest = "/it's", .read_only = true}};
  plan.env = {"MSG=hello world"};
  plan.seccomp_programs = {{0}};
  plan.exec_file = "sh";
  plan.argv = {"sh", "-c", "echo $MSG"};
  EXPECT_EQ(RenderBwrapCommandLine(plan, "/usr/bin/bwrap"),
            "/usr/bin/bwrap --unshare-net --ro-bind '/my dir' '/it'\\''s' --add-seccomp-fd "
            "'<seccomp-program-0>' --clearenv --setenv MSG 'hello world' -- sh -c 'echo $MSG'");
}

TEST(BwrapRenderTest, CapNames) {
  EXPECT_EQ(BwrapCapName(CAP_NET_ADMIN), "CAP_NET_ADMIN");
  EXPECT_EQ(BwrapCapName(CAP_CHOWN), "CAP_CHOWN");
  EXPECT_EQ(BwrapCapName(63), "63");  // unknown to libcap: bwrap's cap_from_name takes numbers
}

}  // namespace
}  // namespace sbx::runtime
