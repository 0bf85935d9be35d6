// The bwrap executable is bwrap whatever it is called: re-executed through /proc/self/exe
// from inside its own sandbox (a nested sandbox, as bubblewrap's own tests and programs
// that re-exec their launcher do), or installed under another name. The face is fixed when
// the executable is built, never read from argv[0].
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "integration/sandbox_test.h"

namespace sbx::integration {
namespace {

class SelfExecTest : public SandboxTest {
 protected:
  void SetUp() override {
    SandboxTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    // `ateam-sandbox bwrap` selects the face with a subcommand, which /proc/self/exe and a
    // copy do not repeat; with --backend bwrap the executable is the real bwrap.
    const Args& prefix = BwrapPrefix();
    if (prefix.size() > 1 && !(Contains(prefix, "--backend") && Contains(prefix, "bwrap"))) {
      GTEST_SKIP() << "the command under test is a subcommand of ateam-sandbox, not a bwrap "
                      "executable";
    }
  }
};

TEST_F(SelfExecTest, ProcSelfExeInsideTheSandboxIsBwrapToo) {
  // A user namespace in which the nested bwrap may make its own namespaces and mounts.
  RunResult r =
      RunCommand(BwrapArgv({"--unshare-user", "--uid",  "0",      "--gid", "0",
                            "--cap-add",      "ALL",    "--bind", "/",     "/",
                            "--bind",         "/proc",  "/proc",  "--",    "/proc/self/exe",
                            "--unshare-all",  "--bind", "/",      "/",     "--bind",
                            "/proc",          "/proc"},
                           {"echo", "hello"}));
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, "hello\n") << Describe(r);
  EXPECT_EQ(r.err, "") << Describe(r);
}

TEST_F(SelfExecTest, AnyNameGivesTheBwrapFace) {
  if (BwrapPrefix().size() > 1) GTEST_SKIP() << "the command under test is not one executable";
  TempDir dir;
  for (const char* name : {"bwrap.real", "sandbox"}) {
    std::string copy = dir.Sub(name);
    std::filesystem::copy_file(BwrapPrefix().front(), copy);
    ASSERT_EQ(chmod(copy.c_str(), 0755), 0);
    RunResult r = RunCommand({copy, "--ro-bind", "/", "/", "--unshare-pid", "echo", "hello"});
    EXPECT_EQ(r.exit_code, 0) << Describe(r);
    EXPECT_EQ(r.out, "hello\n") << Describe(r);
    RunResult usage = RunCommand({copy, "--help"});
    EXPECT_EQ(usage.out.rfind("usage: " + copy + " [OPTIONS...] [--] COMMAND [ARGS...]\n", 0), 0U)
        << Describe(usage);
  }
}

}  // namespace
}  // namespace sbx::integration
