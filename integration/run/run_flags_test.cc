// Two flags of `run` checked by their effect: --seccomp-allow GROUP (the relaxed group's
// syscall reaches the kernel inside; an unknown group is refused before anything starts) and
// --bwrap-path P with --backend bwrap (the bwrap at P is the one executed; a missing P is
// refused). Runs as root and as an unprivileged user; the --bwrap-path tests use the bwrap
// backend whatever $SBX_RUN_BACKEND says, since the flag means nothing to the native one.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <string>

#include "integration/run/run_support.h"

namespace sbx::integration::run {
namespace {

size_t Lines(const std::string& text) {
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

class RunFlagsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string missing = MissingPrerequisite({"sh"});
    if (!missing.empty()) GTEST_SKIP() << missing;
    HandToSandboxUser(work_.path());
  }

  Args Dirs() const { return {"--workspace", work_.path(), "--out", out_.path()}; }

  // `ateam-sandbox run --backend bwrap --bwrap-path BWRAP ... -- command`.
  RunResult RunWithBwrapAt(const std::string& bwrap, const Args& command) const {
    Args argv = {AteamPath(),    "run", "--backend", "bwrap",
                 "--bwrap-path", bwrap, "--ro",      ProbeHostPath()};
    Args dirs = Dirs();
    argv.insert(argv.end(), dirs.begin(), dirs.end());
    argv.emplace_back("--");
    argv.insert(argv.end(), command.begin(), command.end());
    return RunCommand(argv);
  }

  TempDir work_, out_;
};

TEST_F(RunFlagsTest, SeccompAllowKeyringLetsKeyctlReachTheKernel) {
  Args keyctl = {ProbeHostPath(), "try-syscall", "keyctl"};
  RunResult strict = RunAteam(Dirs(), keyctl);
  ASSERT_EQ(strict.exit_code, 0) << Describe(strict);
  EXPECT_EQ(Get(ParseReport(strict.out), "keyctl"), "EPERM") << Describe(strict);

  Args relaxed_options = Dirs();
  relaxed_options.insert(relaxed_options.end(), {"--seccomp-allow", "keyring"});
  RunResult relaxed = RunAteam(relaxed_options, keyctl);
  ASSERT_EQ(relaxed.exit_code, 0) << Describe(relaxed);
  // The kernel answers: the session keyring's id (KEYCTL_GET_KEYRING_ID falls back to the
  // user session keyring when the process has none).
  EXPECT_EQ(Get(ParseReport(relaxed.out), "keyctl"), "OK") << Describe(relaxed);
}

TEST_F(RunFlagsTest, SeccompAllowUnknownGroupIsOneLineAndExit125) {
  Args options = Dirs();
  options.insert(options.end(), {"--seccomp-allow", "no-such-group"});
  RunResult res = RunAteam(options, {"/bin/sh", "-c", "echo agent-ran"});
  EXPECT_EQ(res.exit_code, 125) << Describe(res);
  EXPECT_EQ(Lines(res.err), 1u) << Describe(res);
  EXPECT_NE(res.err.find("no-such-group"), std::string::npos) << Describe(res);
  EXPECT_EQ(res.out, "") << "the agent ran: " << Describe(res);
}

TEST_F(RunFlagsTest, BwrapPathIsTheBwrapThatRuns) {
  if (access("/usr/bin/bwrap", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/bwrap";
  TempDir wrapper_dir;
  // The wrapper runs as the sandbox's host uid (a root caller's bwrap runs as the run-as
  // user), so the record goes to a directory anyone may write.
  const std::string records = wrapper_dir.Sub("records");
  ASSERT_EQ(mkdir(records.c_str(), 0777), 0);
  ASSERT_EQ(chmod(records.c_str(), 0777), 0);
  const std::string record = records + "/used";
  const std::string wrapper = wrapper_dir.Sub("my-bwrap");
  WriteFile(wrapper, "#!/bin/sh\necho \"used by uid $(id -u)\" >> " + record +
                         "\nexec /usr/bin/bwrap \"$@\"\n");
  ASSERT_EQ(chmod(wrapper.c_str(), 0755), 0);

  RunResult res = RunWithBwrapAt(wrapper, {ProbeHostPath(), "report"});
  ASSERT_EQ(res.exit_code, 0) << Describe(res);
  Report r = ParseReport(res.out);
  EXPECT_NE(Get(r, "uid"), "<missing uid>") << Describe(res);  // the agent really ran
  std::string used = ReadFile(record).value_or("");
  // Exactly one execution of the wrapper, by the caller or (root) the sandbox's user.
  EXPECT_EQ(Lines(used), 1u) << used;
  // For root, the dispatch's leased uid: neither root's nor the overflow uid.
  if (IsRoot()) {
    EXPECT_TRUE(used.starts_with("used by uid ")) << used;
    EXPECT_NE(used, "used by uid 0\n");
    EXPECT_NE(used, "used by uid 65534\n");
  } else {
    EXPECT_EQ(used, "used by uid " + std::to_string(getuid()) + "\n");
  }
}

TEST_F(RunFlagsTest, MissingBwrapPathIsOneLineAndExit125) {
  TempDir empty;
  const std::string missing = empty.Sub("no-bwrap-here");
  RunResult res = RunWithBwrapAt(missing, {"/bin/sh", "-c", "echo agent-ran"});
  EXPECT_EQ(res.exit_code, 125) << Describe(res);
  EXPECT_EQ(Lines(res.err), 1u) << Describe(res);
  EXPECT_NE(res.err.find(missing), std::string::npos) << Describe(res);
  EXPECT_EQ(res.out, "") << "the agent ran: " << Describe(res);
}

}  // namespace
}  // namespace sbx::integration::run
