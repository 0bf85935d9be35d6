// Working directory, environment, --args and inherited descriptors.
#include <fcntl.h>
#include <unistd.h>

#include <string>
#include <string_view>

#include "integration/sandbox_test.h"

namespace sbx::integration {
namespace {

using EnvironmentTest = SandboxTest;
using namespace std::string_view_literals;

// A pipe whose read end carries `data` to EOF (small data: fits the pipe buffer).
Fd PipeWith(std::string_view data) {
  Pipe pipe = MakePipe();
  EXPECT_EQ(write(pipe.write_end.get(), data.data(), data.size()),
            static_cast<ssize_t>(data.size()));
  return std::move(pipe.read_end);
}

TEST_F(EnvironmentTest, ChdirSetsWorkingDirectoryAndPwd) {
  Report r = ReportWith({"--chdir", "/usr/bin"});
  EXPECT_EQ(Get(r, "cwd"), "/usr/bin");
  EXPECT_EQ(Get(r, "env.PWD"), "/usr/bin");
}

TEST_F(EnvironmentTest, DefaultWorkingDirectoryIsCallersWhenVisible) {
  RunOptions run;
  run.cwd = "/usr/lib";
  Report r = ReportWith({}, run);
  EXPECT_EQ(Get(r, "cwd"), "/usr/lib");
  EXPECT_EQ(Get(r, "env.PWD"), "/usr/lib");
}

TEST_F(EnvironmentTest, DefaultWorkingDirectoryFallsBackToHome) {
  TempDir outside;  // not visible in the sandbox
  RunOptions run;
  run.cwd = outside.path();
  Report r = ReportWith({"--setenv", "HOME", "/etc"}, run);
  EXPECT_EQ(Get(r, "cwd"), "/etc");
}

TEST_F(EnvironmentTest, DefaultWorkingDirectoryFallsBackToRoot) {
  TempDir outside;
  RunOptions run;
  run.cwd = outside.path();
  Report r = ReportWith({"--unsetenv", "HOME"}, run);
  EXPECT_EQ(Get(r, "cwd"), "/");
}

TEST_F(EnvironmentTest, ClearenvLeavesOnlyPwd) {
  RunOptions run;
  run.cwd = "/";
  Report r = ReportWith({"--clearenv"}, run);
  EXPECT_EQ(Get(r, "env"), "1");
  EXPECT_EQ(Get(r, "env.PWD"), "/");
}

TEST_F(EnvironmentTest, ClearenvThenSetenv) {
  Report r = ReportWith({"--clearenv", "--setenv", "SBX_A", "a b", "--chdir", "/"});
  EXPECT_EQ(Get(r, "env"), "2");
  EXPECT_EQ(Get(r, "env.SBX_A"), "a b");
}

TEST_F(EnvironmentTest, SetenvBeforeClearenvIsCleared) {
  Report r = ReportWith({"--setenv", "SBX_A", "a", "--clearenv"});
  EXPECT_EQ(r.count("env.SBX_A"), 0U);
}

TEST_F(EnvironmentTest, SetenvOverridesInheritedValue) {
  RunOptions run;
  run.extra_env = {"SBX_VAR=from-host", "SBX_KEPT=kept"};
  Report r = ReportWith({"--setenv", "SBX_VAR", "from-option"}, run);
  EXPECT_EQ(Get(r, "env.SBX_VAR"), "from-option");
  EXPECT_EQ(Get(r, "env.SBX_KEPT"), "kept");
}

TEST_F(EnvironmentTest, SetenvAndUnsetenvComposeInOrder) {
  RunOptions run;
  run.extra_env = {"SBX_DROP=1", "SBX_RESET=1"};
  Report r = ReportWith({"--unsetenv", "SBX_DROP", "--setenv", "SBX_NEW", "1", "--unsetenv",
                         "SBX_NEW", "--unsetenv", "SBX_RESET", "--setenv", "SBX_RESET", "2"},
                        run);
  EXPECT_EQ(r.count("env.SBX_DROP"), 0U);
  EXPECT_EQ(r.count("env.SBX_NEW"), 0U);
  EXPECT_EQ(Get(r, "env.SBX_RESET"), "2");
}

TEST_F(EnvironmentTest, SetenvPathDrivesCommandLookup) {
  Args options = TypicalProfile();
  options.insert(options.end(), {"--ro-bind", ProbeHostPath(), "/sbx-bin/probe-cmd", "--clearenv",
                                 "--setenv", "PATH", "/sbx-bin", "--chdir", "/"});
  RunResult result = RunCommand(BwrapArgv(options, {"probe-cmd", "report"}));
  ASSERT_EQ(result.exit_code, 0) << Describe(result);
  Report r = ParseReport(result.out);
  EXPECT_EQ(Get(r, "argv0"), "probe-cmd");
  EXPECT_EQ(Get(r, "env.PATH"), "/sbx-bin");
  EXPECT_EQ(Get(r, "env"), "2");
}

TEST_F(EnvironmentTest, ArgsFdIsParsedInPlace) {
  // NUL-separated; the final element needs no trailing NUL.
  Fd data = PipeWith("--setenv\0SBX_FROM_ARGS\0yes\0--chdir\0/usr"sv);
  RunOptions run;
  run.pass_fds = {{5, data.get()}};
  Report r = ReportWith({"--args", "5"}, run);
  EXPECT_EQ(Get(r, "env.SBX_FROM_ARGS"), "yes");
  EXPECT_EQ(Get(r, "cwd"), "/usr");
  EXPECT_EQ(Get(r, "fds"), "0 1 2");  // the --args fd was closed after reading
}

TEST_F(EnvironmentTest, ArgsIsRepeatableAndLaterOptionsWin) {
  Fd first = PipeWith("--setenv\0SBX_X\0one\0"sv);
  Fd second = PipeWith("--setenv\0SBX_X\0two\0--setenv\0SBX_Y\0y\0"sv);
  RunOptions run;
  run.pass_fds = {{5, first.get()}, {6, second.get()}};
  Report r = ReportWith({"--args", "5", "--args", "6"}, run);
  EXPECT_EQ(Get(r, "env.SBX_X"), "two");
  EXPECT_EQ(Get(r, "env.SBX_Y"), "y");
}

TEST_F(EnvironmentTest, ArgsDataStopsAtFirstNonOption) {
  // A COMMAND cannot come from --args: parsing of the data stops at `word`, and the rest of
  // the data is silently ignored.
  Fd data = PipeWith("--setenv\0SBX_A\0a\0word\0--setenv\0SBX_B\0b"sv);
  RunOptions run;
  run.pass_fds = {{5, data.get()}};
  Report r = ReportWith({"--args", "5"}, run);
  EXPECT_EQ(Get(r, "env.SBX_A"), "a");
  EXPECT_EQ(r.count("env.SBX_B"), 0U);
}

TEST_F(EnvironmentTest, InheritedFdsPassThrough) {
  Pipe pipe = MakePipe();
  RunOptions run;
  run.pass_fds = {{7, pipe.write_end.get()}};
  Report r = ReportWith({}, run);
  EXPECT_EQ(Get(r, "fds"), "0 1 2 7");
  EXPECT_EQ(Get(r, "fd.7"), "pipe");
  Report with_pid_ns = ReportWith({"--unshare-pid"}, run);
  EXPECT_EQ(Get(with_pid_ns, "fds"), "0 1 2 7");
}

TEST_F(EnvironmentTest, InheritedDirectoryFdPassesThrough) {
  // bwrap's semantics, for both backends (`run` is the one that closes them): a host
  // directory left open at fd 9 by the caller reaches the command.
  TempDir host_dir;
  Fd dir(open(host_dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_GE(dir.get(), 0);
  RunOptions run;
  run.pass_fds = {{9, dir.get()}};
  Report r = ReportWith({}, run);
  EXPECT_EQ(Get(r, "fds"), "0 1 2 9");
  EXPECT_EQ(Get(r, "fd.9"), host_dir.path());
}

}  // namespace
}  // namespace sbx::integration
