// Every bwrap 0.11.1 option lands in the right SandboxSpec field or SpecOp.
#include <gtest/gtest.h>

#include <variant>

#include "tests/cli/bwrap_test_util.h"

namespace sbx::cli {
namespace {

using runtime::SandboxSpec;
using testing::Parse;

// Parses `args` + "true" and expects a runnable spec.
SandboxSpec RunnableSpec(std::vector<std::string> args, std::vector<std::string> env = {}) {
  args.emplace_back("true");
  BwrapParse parse = Parse(args, std::move(env));
  EXPECT_EQ(parse.outcome, BwrapOutcome::kRun);
  EXPECT_TRUE(parse.diagnostics.empty()) << parse.diagnostics.front();
  return std::move(parse.spec);
}

template <typename Op>
const Op& OpAt(const SandboxSpec& spec, size_t index) {
  EXPECT_LT(index, spec.ops.size());
  EXPECT_TRUE(std::holds_alternative<Op>(spec.ops.at(index)));
  return std::get<Op>(spec.ops.at(index));
}

TEST(BwrapOptionsTest, CommandAndItsArgumentsAreNotParsed) {
  BwrapParse parse = Parse({"--unshare-ipc", "ls", "--frob", "-l"});
  ASSERT_EQ(parse.outcome, BwrapOutcome::kRun);
  EXPECT_EQ(parse.spec.command, (std::vector<std::string>{"ls", "--frob", "-l"}));
  EXPECT_TRUE(parse.spec.unshare_ipc);
}

TEST(BwrapOptionsTest, DoubleDashMakesNextWordTheCommand) {
  BwrapParse parse = Parse({"--unshare-pid", "--", "--weird-cmd", "x"});
  ASSERT_EQ(parse.outcome, BwrapOutcome::kRun);
  EXPECT_EQ(parse.spec.command, (std::vector<std::string>{"--weird-cmd", "x"}));
}

TEST(BwrapOptionsTest, NamespaceFlags) {
  const SandboxSpec spec =
      RunnableSpec({"--unshare-user", "--unshare-user-try", "--unshare-ipc", "--unshare-pid",
                    "--unshare-net", "--unshare-uts", "--unshare-cgroup", "--unshare-cgroup-try"});
  EXPECT_TRUE(spec.unshare_user && spec.unshare_user_try && spec.unshare_ipc);
  EXPECT_TRUE(spec.unshare_pid && spec.unshare_net && spec.unshare_uts);
  EXPECT_TRUE(spec.unshare_cgroup && spec.unshare_cgroup_try);
}

TEST(BwrapOptionsTest, UnshareAllSetsTheTryVariants) {
  const SandboxSpec spec = RunnableSpec({"--unshare-all"});
  EXPECT_TRUE(spec.unshare_user_try);
  EXPECT_FALSE(spec.unshare_user);
  EXPECT_TRUE(spec.unshare_ipc && spec.unshare_pid && spec.unshare_uts && spec.unshare_net);
  EXPECT_TRUE(spec.unshare_cgroup_try);
  EXPECT_FALSE(spec.unshare_cgroup);
}

TEST(BwrapOptionsTest, ShareNetAfterUnshareAllKeepsHostNetwork) {
  const SandboxSpec spec = RunnableSpec({"--unshare-all", "--share-net"});
  EXPECT_FALSE(spec.unshare_net);
  EXPECT_TRUE(spec.unshare_pid);
}

TEST(BwrapOptionsTest, ShareNetBeforeUnshareAllIsUndone) {
  EXPECT_TRUE(RunnableSpec({"--share-net", "--unshare-all"}).unshare_net);
  EXPECT_FALSE(RunnableSpec({"--unshare-net", "--share-net"}).unshare_net);
}

TEST(BwrapOptionsTest, UserNamespaceOptions) {
  const SandboxSpec spec =
      RunnableSpec({"--userns", "3", "--userns2", "4", "--assert-userns-disabled", "--pidns", "0"});
  EXPECT_EQ(spec.userns_fd, 3);
  EXPECT_EQ(spec.userns2_fd, 4);
  EXPECT_EQ(spec.pidns_fd, 0);
  EXPECT_TRUE(spec.assert_userns_disabled);
  EXPECT_TRUE(RunnableSpec({"--unshare-user", "--disable-userns"}).disable_userns);
}

TEST(BwrapOptionsTest, UidGidAsNonRoot) {
  const SandboxSpec spec = RunnableSpec({"--uid", "5", "--gid", "010"});
  EXPECT_EQ(spec.uid, 5U);
  EXPECT_EQ(spec.gid, 10U);  // decimal, not octal
}

TEST(BwrapOptionsTest, ProcessOptions) {
  const SandboxSpec spec = RunnableSpec({"--chdir", "/work", "--new-session", "--die-with-parent",
                                         "--unshare-pid", "--as-pid-1", "--argv0", "zero"});
  EXPECT_EQ(spec.chdir, "/work");
  EXPECT_TRUE(spec.new_session && spec.die_with_parent && spec.as_pid_1);
  EXPECT_EQ(spec.argv0, "zero");
}

TEST(BwrapOptionsTest, MonitoringFds) {
  const SandboxSpec spec =
      RunnableSpec({"--sync-fd", "3", "--block-fd", "4", "--info-fd", "5", "--json-status-fd", "6",
                    "--seccomp", "7", "--unshare-user", "--userns-block-fd", "8"});
  EXPECT_EQ(spec.sync_fd, 3);
  EXPECT_EQ(spec.block_fd, 4);
  EXPECT_EQ(spec.info_fd, 5);
  EXPECT_EQ(spec.json_status_fd, 6);
  EXPECT_EQ(spec.seccomp_fd, 7);
  EXPECT_EQ(spec.userns_block_fd, 8);
}

TEST(BwrapOptionsTest, LockFilesInOrder) {
  EXPECT_EQ(RunnableSpec({"--lock-file", "/a", "--lock-file", "/b"}).lock_files,
            (std::vector<std::string>{"/a", "/b"}));
}

TEST(BwrapOptionsTest, BindVariants) {
  const SandboxSpec spec = RunnableSpec({"--bind", "s1", "d1", "--bind-try", "s2", "d2",
                                         "--ro-bind", "s3", "d3", "--ro-bind-try", "s4", "d4",
                                         "--dev-bind", "s5", "d5", "--dev-bind-try", "s6", "d6"});
  ASSERT_EQ(spec.ops.size(), 6U);
  const bool expected[6][3] = {{false, false, false}, {false, false, true}, {true, false, false},
                               {true, false, true},   {false, true, false}, {false, true, true}};
  for (size_t i = 0; i < 6; ++i) {
    const auto& bind = OpAt<runtime::BindOp>(spec, i);
    // Appended rather than `"s" + std::to_string(...)`: GCC 12 at -O3 warns falsely
    // (-Wrestrict) on a literal inserted in front of a temporary string.
    const std::string n = std::to_string(i + 1);
    EXPECT_EQ(bind.source, std::string("s").append(n));
    EXPECT_EQ(bind.dest, std::string("d").append(n));
    EXPECT_EQ(bind.read_only, expected[i][0]) << i;
    EXPECT_EQ(bind.allow_devices, expected[i][1]) << i;
    EXPECT_EQ(bind.skip_missing, expected[i][2]) << i;
  }
}

TEST(BwrapOptionsTest, BindFdVariants) {
  const SandboxSpec spec = RunnableSpec({"--bind-fd", "3", "/a", "--ro-bind-fd", "4", "/b"});
  EXPECT_EQ(OpAt<runtime::BindFdOp>(spec, 0).fd, 3);
  EXPECT_EQ(OpAt<runtime::BindFdOp>(spec, 0).dest, "/a");
  EXPECT_FALSE(OpAt<runtime::BindFdOp>(spec, 0).read_only);
  EXPECT_EQ(OpAt<runtime::BindFdOp>(spec, 1).fd, 4);
  EXPECT_TRUE(OpAt<runtime::BindFdOp>(spec, 1).read_only);
}

TEST(BwrapOptionsTest, MountOpsKeepCommandLineOrder) {
  const SandboxSpec spec = RunnableSpec({"--proc", "/proc", "--dev", "/dev", "--mqueue", "/mq",
                                         "--remount-ro", "/usr", "--symlink", "usr/lib", "/lib"});
  EXPECT_EQ(OpAt<runtime::ProcOp>(spec, 0).dest, "/proc");
  EXPECT_EQ(OpAt<runtime::DevOp>(spec, 1).dest, "/dev");
  EXPECT_EQ(OpAt<runtime::MqueueOp>(spec, 2).dest, "/mq");
  EXPECT_EQ(OpAt<runtime::RemountRoOp>(spec, 3).dest, "/usr");
  EXPECT_EQ(OpAt<runtime::SymlinkOp>(spec, 4).target, "usr/lib");
  EXPECT_EQ(OpAt<runtime::SymlinkOp>(spec, 4).dest, "/lib");
}

TEST(BwrapOptionsTest, DefaultsLeavePermsAndSizeUnset) {
  const SandboxSpec spec =
      RunnableSpec({"--tmpfs", "/t", "--dir", "/d", "--file", "3", "/f", "--bind-data", "4", "/b"});
  EXPECT_FALSE(OpAt<runtime::TmpfsOp>(spec, 0).perms);
  EXPECT_FALSE(OpAt<runtime::TmpfsOp>(spec, 0).size);
  EXPECT_FALSE(OpAt<runtime::DirOp>(spec, 1).perms);
  EXPECT_FALSE(OpAt<runtime::FileOp>(spec, 2).perms);
  EXPECT_FALSE(OpAt<runtime::BindDataOp>(spec, 3).perms);
}

TEST(BwrapOptionsTest, PermsApplyToTheNextCreatingOption) {
  const SandboxSpec spec = RunnableSpec({"--perms", "0700",           "--dir", "/d",    "--perms",
                                         "0640",    "--file",         "3",     "/f",    "--perms",
                                         "600",     "--bind-data",    "4",     "/b",    "--perms",
                                         "0444",    "--ro-bind-data", "5",     "/r",    "--perms",
                                         "1777",    "--tmpfs",        "/t",    "--dir", "/plain"});
  EXPECT_EQ(OpAt<runtime::DirOp>(spec, 0).perms, 0700U);
  EXPECT_EQ(OpAt<runtime::FileOp>(spec, 1).perms, 0640U);
  EXPECT_EQ(OpAt<runtime::FileOp>(spec, 1).fd, 3);
  EXPECT_EQ(OpAt<runtime::BindDataOp>(spec, 2).perms, 0600U);
  EXPECT_FALSE(OpAt<runtime::BindDataOp>(spec, 2).read_only);
  EXPECT_EQ(OpAt<runtime::BindDataOp>(spec, 3).perms, 0444U);
  EXPECT_TRUE(OpAt<runtime::BindDataOp>(spec, 3).read_only);
  EXPECT_EQ(OpAt<runtime::TmpfsOp>(spec, 4).perms, 01777U);
  EXPECT_FALSE(OpAt<runtime::DirOp>(spec, 5).perms);  // consumed, not sticky
}

TEST(BwrapOptionsTest, PermsAndSizeCombineInEitherOrder) {
  const SandboxSpec spec =
      RunnableSpec({"--perms", "0700", "--size", "4096", "--tmpfs", "/a", "--size", "0x100000",
                    "--perms", "0750", "--tmpfs", "/b", "--size", "010", "--tmpfs", "/c"});
  EXPECT_EQ(OpAt<runtime::TmpfsOp>(spec, 0).perms, 0700U);
  EXPECT_EQ(OpAt<runtime::TmpfsOp>(spec, 0).size, 4096U);
  EXPECT_EQ(OpAt<runtime::TmpfsOp>(spec, 1).perms, 0750U);
  EXPECT_EQ(OpAt<runtime::TmpfsOp>(spec, 1).size, 0x100000U);
  EXPECT_FALSE(OpAt<runtime::TmpfsOp>(spec, 2).perms);
  EXPECT_EQ(OpAt<runtime::TmpfsOp>(spec, 2).size, 8U);  // leading zero: octal
}

TEST(BwrapOptionsTest, Chmod) {
  const SandboxSpec spec = RunnableSpec({"--chmod", "4755", "/bin/x"});
  const auto& op = OpAt<runtime::ChmodOp>(spec, 0);
  EXPECT_EQ(op.path, "/bin/x");
  EXPECT_EQ(op.mode, 04755U);
}

TEST(BwrapOptionsTest, OverlaysTakeTheSourcesBeforeThem) {
  const SandboxSpec spec =
      RunnableSpec({"--overlay-src", "/l1", "--overlay-src", "/l2", "--overlay", "/up", "/wk", "/o",
                    "--overlay-src", "/t1", "--tmp-overlay", "/t", "--overlay-src", "/r1",
                    "--overlay-src", "/r2", "--ro-overlay", "/r"});
  using Mode = runtime::OverlayOp::Mode;
  const auto& rw = OpAt<runtime::OverlayOp>(spec, 0);
  EXPECT_EQ(rw.mode, Mode::kReadWrite);
  EXPECT_EQ(rw.lower_sources, (std::vector<std::string>{"/l1", "/l2"}));
  EXPECT_EQ(rw.upper, "/up");
  EXPECT_EQ(rw.work, "/wk");
  EXPECT_EQ(rw.dest, "/o");
  const auto& tmp = OpAt<runtime::OverlayOp>(spec, 1);
  EXPECT_EQ(tmp.mode, Mode::kTemporary);
  EXPECT_EQ(tmp.lower_sources, (std::vector<std::string>{"/t1"}));
  EXPECT_EQ(tmp.dest, "/t");
  const auto& ro = OpAt<runtime::OverlayOp>(spec, 2);
  EXPECT_EQ(ro.mode, Mode::kReadOnly);
  EXPECT_EQ(ro.lower_sources, (std::vector<std::string>{"/r1", "/r2"}));
  EXPECT_TRUE(ro.upper.empty());
  EXPECT_EQ(ro.dest, "/r");
}

TEST(BwrapOptionsTest, HostnameQueuesAnOpEachTime) {
  BwrapParse parse =
      Parse({"--unshare-uts", "--hostname", "a", "--bind", "/", "/", "--hostname", "b", "true"});
  ASSERT_EQ(parse.outcome, BwrapOutcome::kRun);
  ASSERT_EQ(parse.spec.ops.size(), 3U);
  EXPECT_EQ(OpAt<runtime::SetHostnameOp>(parse.spec, 0).hostname, "a");
  EXPECT_EQ(OpAt<runtime::SetHostnameOp>(parse.spec, 2).hostname, "b");
  EXPECT_EQ(parse.diagnostics,
            (std::vector<std::string>{"bwrap: Only the last --hostname option will take effect"}));
}

TEST(BwrapOptionsTest, CapabilitiesInOrder) {
  const SandboxSpec spec =
      RunnableSpec({"--cap-add", "CAP_KILL", "--cap-drop", "cap_net_raw", "--cap-add", "all",
                    "--cap-drop", "ALL", "--cap-add", "12"});
  using Kind = security::CapChange::Kind;
  ASSERT_EQ(spec.cap_changes.size(), 5U);
  EXPECT_EQ(spec.cap_changes[0].kind, Kind::kAdd);
  EXPECT_EQ(spec.cap_changes[0].cap, 5);  // CAP_KILL
  EXPECT_EQ(spec.cap_changes[1].kind, Kind::kDrop);
  EXPECT_EQ(spec.cap_changes[1].cap, 13);  // CAP_NET_RAW
  EXPECT_EQ(spec.cap_changes[2].kind, Kind::kAdd);
  EXPECT_FALSE(spec.cap_changes[2].cap);  // ALL
  EXPECT_EQ(spec.cap_changes[3].kind, Kind::kDrop);
  EXPECT_FALSE(spec.cap_changes[3].cap);
  EXPECT_EQ(spec.cap_changes[4].cap, 12);
}

TEST(BwrapOptionsTest, EnvironmentEditsApplyInOrder) {
  const SandboxSpec spec = RunnableSpec(
      {"--setenv", "A", "1", "--unsetenv", "B", "--setenv", "C", "x=y", "--setenv", "A", "2"},
      {"A=0", "B=b", "PATH=/bin"});
  EXPECT_EQ(spec.env, (std::vector<std::string>{"A=2", "PATH=/bin", "C=x=y"}));
}

TEST(BwrapOptionsTest, ClearenvDropsOnlyWhatCameBefore) {
  EXPECT_EQ(
      RunnableSpec({"--setenv", "A", "1", "--clearenv", "--setenv", "B", "2"}, {"PATH=/bin"}).env,
      (std::vector<std::string>{"B=2"}));
  EXPECT_EQ(RunnableSpec({"--clearenv", "--unsetenv", "X"}, {"X=1"}).env,
            std::vector<std::string>{});
}

TEST(BwrapOptionsTest, EnvironmentPassesThroughUntouched) {
  EXPECT_EQ(RunnableSpec({}, {"HOME=/h", "TERM=dumb"}).env,
            (std::vector<std::string>{"HOME=/h", "TERM=dumb"}));
}

TEST(BwrapOptionsTest, LevelPrefixIsReported) {
  BwrapParse parse = Parse({"--level-prefix", "true"});
  EXPECT_EQ(parse.outcome, BwrapOutcome::kRun);
  EXPECT_TRUE(parse.level_prefix);
  EXPECT_FALSE(Parse({"true"}).level_prefix);
}

TEST(BwrapOptionsTest, RepeatedSingleValueOptionsKeepTheLast) {
  BwrapParse parse = Parse({"--chdir", "/a", "--chdir", "/b", "--sync-fd", "3", "--sync-fd", "4",
                            "--uid", "1", "--uid", "2", "true"});
  ASSERT_EQ(parse.outcome, BwrapOutcome::kRun);
  EXPECT_EQ(parse.spec.chdir, "/b");
  EXPECT_EQ(parse.spec.sync_fd, 4);
  EXPECT_EQ(parse.spec.uid, 2U);
  EXPECT_EQ(parse.diagnostics.size(), 3U);
}

}  // namespace
}  // namespace sbx::cli
