// runtime::ValidateSpec on hand-built specs: bwrap's post-parse checks and their order.
#include <gtest/gtest.h>

#include "runtime/host_facts.h"
#include "runtime/spec.h"
#include "tests/cli/bwrap_test_util.h"

namespace sbx::runtime {
namespace {

SandboxSpec WithCommand() {
  SandboxSpec spec;
  spec.command = {"true"};
  return spec;
}

std::string Check(const SandboxSpec& spec, const HostFacts& host = cli::testing::UserHost()) {
  const base::Status status = ValidateSpec(spec, host);
  if (status) return "ok";
  if (status.error().kind() == base::Error::Kind::kUsage) return "usage";
  return status.error().Render();
}

TEST(ValidateSpecTest, PlainSpecIsValid) {
  EXPECT_EQ(Check(WithCommand()), "ok");
  EXPECT_EQ(Check(WithCommand(), cli::testing::RootHost()), "ok");
}

TEST(ValidateSpecTest, MissingCommandIsUsage) { EXPECT_EQ(Check(SandboxSpec{}), "usage"); }

TEST(ValidateSpecTest, UserNamespaceChecksComeBeforeTheCommandCheck) {
  SandboxSpec spec;
  spec.disable_userns = true;
  EXPECT_EQ(Check(spec), "--disable-userns requires --unshare-user");
  spec.unshare_user = true;
  EXPECT_EQ(Check(spec), "usage");
}

// bwrap 0.11.1 refuses --userns only next to --unshare-user(-try) (and in setuid mode);
// --userns2 without --userns and --pidns with --unshare-pid (a nested pid namespace) are
// accepted and fail, if at all, at setns() time.
TEST(ValidateSpecTest, JoinedNamespaceCombinations) {
  SandboxSpec spec = WithCommand();
  spec.userns_fd = 3;
  spec.unshare_user_try = true;
  EXPECT_EQ(Check(spec), "--userns not compatible --unshare-user-try");
  spec.unshare_user = true;
  EXPECT_EQ(Check(spec), "--userns not compatible --unshare-user");
  spec = WithCommand();
  spec.userns2_fd = 4;
  EXPECT_EQ(Check(spec), "ok");
  EXPECT_EQ(Check(spec, cli::testing::RootHost()), "ok");
  spec.pidns_fd = 5;
  spec.unshare_pid = true;
  spec.as_pid_1 = true;
  EXPECT_EQ(Check(spec), "ok");
  // --userns counts as a user namespace for --uid, also for root.
  spec = WithCommand();
  spec.userns_fd = 0;
  spec.uid = 5;
  EXPECT_EQ(Check(spec, cli::testing::RootHost()), "ok");
}

TEST(ValidateSpecTest, UsernsBlockFdOrder) {
  SandboxSpec spec = WithCommand();
  spec.userns_block_fd = 3;
  spec.disable_userns = true;
  EXPECT_EQ(Check(spec), "--userns-block-fd requires --unshare-user");
  spec.unshare_user = true;
  EXPECT_EQ(Check(spec), "--userns-block-fd requires --info-fd");
  spec.info_fd = 4;
  EXPECT_EQ(Check(spec), "--disable-userns is not compatible with  --userns-block-fd");
  spec.disable_userns = false;
  EXPECT_EQ(Check(spec), "ok");
}

TEST(ValidateSpecTest, UsernsConflicts) {
  SandboxSpec spec = WithCommand();
  spec.userns_fd = 0;
  spec.unshare_user = true;
  spec.unshare_user_try = true;
  EXPECT_EQ(Check(spec), "--userns not compatible --unshare-user");
  spec.unshare_user = false;
  EXPECT_EQ(Check(spec), "--userns not compatible --unshare-user-try");
  spec.unshare_user_try = false;
  EXPECT_EQ(Check(spec), "ok");
  EXPECT_EQ(Check(spec, cli::testing::SetuidHost()), "--userns doesn't work in setuid mode");
}

TEST(ValidateSpecTest, UidAsRootNeedsAUserNamespace) {
  const HostFacts root = cli::testing::RootHost();
  SandboxSpec spec = WithCommand();
  spec.uid = 5;
  EXPECT_EQ(Check(spec, root), "Specifying --uid requires --unshare-user or --userns");
  EXPECT_EQ(Check(spec), "ok");  // implied user namespace
  spec.unshare_user_try = true;
  EXPECT_EQ(Check(spec, root), "ok");  // the kernel allows one
  HostFacts no_userns = root;
  no_userns.user_namespaces = false;
  EXPECT_EQ(Check(spec, no_userns), "Specifying --uid requires --unshare-user or --userns");
  spec.uid.reset();
  spec.gid = 7;
  EXPECT_EQ(Check(spec, no_userns), "Specifying --gid requires --unshare-user or --userns");
  spec.gid = 0;
  EXPECT_EQ(Check(spec, no_userns), "ok");  // the caller's own gid
}

TEST(ValidateSpecTest, UidWithUsernsFdAsNonRoot) {
  SandboxSpec spec = WithCommand();
  spec.userns_fd = 3;  // no implied user namespace, but --userns counts
  spec.uid = 5;
  EXPECT_EQ(Check(spec), "ok");
}

TEST(ValidateSpecTest, HostnameAndPid1) {
  SandboxSpec spec = WithCommand();
  spec.ops.emplace_back(SetHostnameOp{.hostname = "h"});
  spec.as_pid_1 = true;
  spec.lock_files = {"/l"};
  EXPECT_EQ(Check(spec), "Specifying --hostname requires --unshare-uts");
  spec.unshare_uts = true;
  EXPECT_EQ(Check(spec), "Specifying --as-pid-1 requires --unshare-pid");
  spec.unshare_pid = true;
  EXPECT_EQ(Check(spec), "Specifying --as-pid-1 and --lock-file is not permitted");
  spec.lock_files.clear();
  EXPECT_EQ(Check(spec), "ok");
}

TEST(ValidateSpecTest, SetuidCapAddLooksAtTheResultingSet) {
  const HostFacts setuid = cli::testing::SetuidHost();
  SandboxSpec spec = WithCommand();
  using Kind = security::CapChange::Kind;
  spec.cap_changes = {{Kind::kAdd, 5}, {Kind::kDrop, 5}};
  EXPECT_EQ(Check(spec, setuid), "ok");
  spec.cap_changes.push_back({Kind::kAdd, 40});
  EXPECT_EQ(Check(spec, setuid), "--cap-add in setuid mode can be used only by root");
  spec.cap_changes.push_back({Kind::kDrop, std::nullopt});
  EXPECT_EQ(Check(spec, setuid), "ok");
  EXPECT_EQ(Check(spec, cli::testing::RootHost()), "ok");
}

}  // namespace
}  // namespace sbx::runtime
