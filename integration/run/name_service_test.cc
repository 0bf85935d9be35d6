// A static executable never loads the host's NSS modules (cli/name_service.h): with an
// nsswitch.conf naming modules that are missing or built for another glibc, --run-as and
// --allow lookups still end in one line and a defined exit code, never a crash.
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <fstream>

#include "integration/run/run_support.h"

namespace sbx::integration::run {
namespace {

class RunNameServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string missing = MissingPrerequisite({"unshare", "mount", "sh"});
    if (!missing.empty()) GTEST_SKIP() << missing;
    if (getuid() != 0) {
      GTEST_SKIP() << "needs root: binds a hostile /etc/nsswitch.conf in a private mount "
                      "namespace, and --run-as is for root callers";
    }
    std::ofstream(conf_.Sub("nsswitch.conf"))
        << "passwd: files nosuchmodule systemd sss\n"
           "group: files nosuchmodule systemd sss\n"
           "hosts: files mdns4_minimal [NOTFOUND=return] resolve nosuchmodule dns\n";
    HandToSandboxUser(work_.path());
  }

  // `run` with the hostile nsswitch.conf in place of the host's.
  RunResult RunWithHostileNss(const Args& options) {
    Args argv = {"unshare",
                 "-m",
                 "--propagation",
                 "private",
                 "sh",
                 "-c",
                 "mount --bind \"$0\" /etc/nsswitch.conf && exec \"$@\"",
                 conf_.Sub("nsswitch.conf")};
    Args run = RunArgv(options, {"true"});
    argv.insert(argv.end(), run.begin(), run.end());
    return RunCommand(argv);
  }

  TempDir conf_, work_, out_;
};

TEST_F(RunNameServiceTest, UnknownRunAsUserIsOneLineNotACrash) {
  RunResult res = RunWithHostileNss(
      {"--workspace", work_.path(), "--out", out_.path(), "--run-as", "nosuchuser-sbx"});
  EXPECT_EQ(res.term_signal, 0) << Describe(res);
  EXPECT_EQ(res.exit_code, 125) << Describe(res);
  EXPECT_NE(res.err.find("no such user"), std::string::npos) << Describe(res);
  EXPECT_EQ(res.err.find('\n'), res.err.size() - 1) << Describe(res);
}

TEST_F(RunNameServiceTest, KnownUserFromPasswdStillResolves) {
  RunResult res =
      RunWithHostileNss({"--workspace", work_.path(), "--out", out_.path(), "--run-as", "nobody"});
  EXPECT_EQ(res.exit_code, 0) << Describe(res);
}

TEST_F(RunNameServiceTest, UnresolvableAllowIsOneLineNotACrash) {
  RunResult res = RunWithHostileNss(
      {"--workspace", work_.path(), "--out", out_.path(), "--allow", "nosuch.invalid"});
  EXPECT_EQ(res.term_signal, 0) << Describe(res);
  EXPECT_EQ(res.exit_code, 125) << Describe(res);
  EXPECT_NE(res.err.find("nosuch.invalid"), std::string::npos) << Describe(res);
}

}  // namespace
}  // namespace sbx::integration::run
