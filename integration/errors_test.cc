// Bad input: exact diagnostics (one `bwrap: ...` line on stderr) and exit codes, plus
// --help, --version and the usage text (docs/bwrap-behaviour.md, "Diagnostics and exit codes").
#include <regex>
#include <string>

#include "integration/sandbox_test.h"

namespace sbx::integration {
namespace {

using ErrorsTest = SandboxTest;

constexpr char kUsageTail[] = " [OPTIONS...] [--] COMMAND [ARGS...]";

// Runs prefix + TypicalProfile() + options + command; expects exit 1, nothing on stdout and
// exactly `bwrap: <message>` on stderr.
void ExpectFatal(const Args& options, const Args& command, const std::string& message) {
  Args all = TypicalProfile();
  all.insert(all.end(), options.begin(), options.end());
  RunResult r = RunCommand(BwrapArgv(all, command));
  EXPECT_EQ(r.exit_code, 1) << Describe(r);
  EXPECT_EQ(r.out, "") << Describe(r);
  EXPECT_EQ(r.err, "bwrap: " + message + "\n") << Describe(r);
}

void ExpectFatal(const Args& options, const std::string& message) {
  ExpectFatal(options, {kProbe, "exit", "0"}, message);
}

std::string FirstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

void ExpectUsageLine(const std::string& text) {
  std::string line = FirstLine(text);
  if (BwrapPrefix().size() == 1) {
    // argv[0] exactly as invoked.
    EXPECT_EQ(line, "usage: " + BwrapPrefix()[0] + kUsageTail);
  } else {
    EXPECT_EQ(line.rfind("usage: ", 0), 0U) << line;
    EXPECT_GE(line.size(), sizeof kUsageTail) << line;
    EXPECT_EQ(line.substr(line.size() - (sizeof kUsageTail - 1)), kUsageTail) << line;
  }
}

TEST_F(ErrorsTest, HelpPrintsUsageOnStdout) {
  RunResult r = RunCommand(BwrapArgv({"--help"}, {}));
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.err, "");
  ExpectUsageLine(r.out);
  EXPECT_NE(r.out.find("--unshare-user"), std::string::npos);
}

TEST_F(ErrorsTest, NoArgumentsPrintsUsageOnStderr) {
  RunResult help = RunCommand(BwrapArgv({"--help"}, {}));
  RunResult r = RunCommand(BwrapArgv({}, {}));
  EXPECT_EQ(r.exit_code, 1) << Describe(r);
  EXPECT_EQ(r.out, "");
  ExpectUsageLine(r.err);
  EXPECT_EQ(r.err, help.out);
}

TEST_F(ErrorsTest, OptionsWithoutCommandPrintUsage) {
  RunResult r = RunCommand(BwrapArgv({"--unshare-ipc", "--chdir", "/"}, {}));
  EXPECT_EQ(r.exit_code, 1) << Describe(r);
  ExpectUsageLine(r.err);
}

TEST_F(ErrorsTest, Version) {
  RunResult r = RunCommand(BwrapArgv({"--version"}, {}));
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_TRUE(std::regex_match(r.out, std::regex("bubblewrap [0-9]+\\.[0-9]+\\.[0-9]+\n")))
      << r.out;
  EXPECT_EQ(r.err, "");
  // At its position in the option walk: later words are never looked at.
  RunResult later = RunCommand(BwrapArgv({"--unshare-ipc", "--version", "--frobnicate"}, {}));
  EXPECT_EQ(later.exit_code, 0) << Describe(later);
  EXPECT_EQ(later.out, r.out);
}

TEST_F(ErrorsTest, UnknownOption) { ExpectFatal({"--frobnicate"}, "Unknown option --frobnicate"); }

TEST_F(ErrorsTest, MissingOptionArguments) {
  ExpectFatal({"--bind", "/"}, {}, "--bind takes two arguments");
  ExpectFatal({"--chdir"}, {}, "--chdir takes one argument");
  ExpectFatal({"--setenv", "X"}, {}, "--setenv takes two arguments");
  ExpectFatal({"--uid"}, {}, "--uid takes an argument");
  ExpectFatal({"--tmpfs"}, {}, "--tmpfs takes an argument");
}

TEST_F(ErrorsTest, MissingBindSource) {
  ExpectFatal({"--bind", "/nonexistent-sbx-src", "/mnt"},
              "Can't find source path /nonexistent-sbx-src: No such file or directory");
  ExpectFatal({"--ro-bind", "/nonexistent-sbx-src", "/mnt"},
              "Can't find source path /nonexistent-sbx-src: No such file or directory");
}

TEST_F(ErrorsTest, BadFd) {
  ExpectFatal({"--info-fd", "x"}, "Invalid fd: x");
  ExpectFatal({"--sync-fd", "-1"}, "Invalid fd: -1");
  ExpectFatal({"--json-status-fd", "0x5"}, "Invalid fd: 0x5");
  ExpectFatal({"--args", "77"}, "Can't read --args data: Bad file descriptor");
}

TEST_F(ErrorsTest, ArgsInsideArgsData) {
  Pipe pipe = MakePipe();
  std::string data(
      "--args\0"
      "5",
      8);
  ASSERT_EQ(write(pipe.write_end.get(), data.data(), data.size()), 8);
  pipe.write_end.reset();
  RunOptions run;
  run.pass_fds = {{6, pipe.read_end.get()}};
  RunResult r = RunProbe({"--args", "6"}, {"exit", "0"}, run);
  EXPECT_EQ(r.exit_code, 1) << Describe(r);
  EXPECT_EQ(r.err, "bwrap: --args not supported in arguments file\n");
}

TEST_F(ErrorsTest, NonexistentChdir) {
  ExpectFatal({"--chdir", "/nonexistent"},
              "Can't chdir to /nonexistent: No such file or directory");
}

TEST_F(ErrorsTest, CommandNotFound) {
  ExpectFatal({}, {"/nonexistent-sbx-cmd"},
              "execvp /nonexistent-sbx-cmd: No such file or directory");
  ExpectFatal({}, {"nonexistent-sbx-cmd"}, "execvp nonexistent-sbx-cmd: No such file or directory");
}

TEST_F(ErrorsTest, CommandIsDirectory) { ExpectFatal({}, {"/"}, "execvp /: Permission denied"); }

TEST_F(ErrorsTest, InvalidIds) {
  ExpectFatal({"--uid", "abc"}, "Invalid uid: abc");
  ExpectFatal({"--gid", "abc"}, "Invalid gid: abc");
  ExpectFatal({"--unshare-user", "--uid", "-1"}, "Invalid uid: -1");
}

TEST_F(ErrorsTest, HostnameRequiresUts) {
  ExpectFatal({"--hostname", "x"}, "Specifying --hostname requires --unshare-uts");
}

TEST_F(ErrorsTest, AsPid1RequiresPidNamespace) {
  ExpectFatal({"--as-pid-1"}, "Specifying --as-pid-1 requires --unshare-pid");
  ExpectFatal({"--unshare-pid", "--as-pid-1", "--lock-file", "/x"},
              "Specifying --as-pid-1 and --lock-file is not permitted");
}

TEST_F(ErrorsTest, UserNamespaceConflicts) {
  ExpectFatal({"--unshare-user", "--userns", "5"}, "--userns not compatible --unshare-user");
}

TEST_F(ErrorsTest, ModifierMisuse) {
  ExpectFatal({"--perms", "999", "--dir", "/x"}, "--perms takes an octal argument <= 07777");
  ExpectFatal({"--perms", "0755", "--chdir", "/"},
              "--perms must be followed by an option that creates a file");
  ExpectFatal({"--size", "100", "--dir", "/x"}, "--size must be followed by --tmpfs");
  ExpectFatal({"--size", "0", "--tmpfs", "/x"}, "--size takes a non-zero number of bytes");
  ExpectFatal({"--size", "123bogus", "--tmpfs", "/x"}, "--size takes a non-zero number of bytes");
  ExpectFatal({"--size", "9223372036854775809", "--tmpfs", "/x"},
              "--size (for tmpfs) is limited to 9223372036854775807");
  ExpectFatal({"--chmod", "9", "/x"}, "--chmod takes an octal argument <= 07777");
}

TEST_F(ErrorsTest, SetupFailures) {
  ExpectFatal({"--chmod", "0755", "/nonexistent"},
              "Can't chmod 0755 /nonexistent: No such file or directory");
  ExpectFatal({"--dir", "/usr/newdir"}, "Can't mkdir /usr/newdir: Read-only file system");
  ExpectFatal({"--remount-ro", "/usr/bin"},
              "Can't remount readonly on /newroot/usr/bin: Unable to find \"/newroot/usr/bin\" in "
              "mount table");
  ExpectFatal({"--remount-ro", "/nonexistent"},
              "Can't remount readonly on /newroot/nonexistent: realpath(destination): No such file "
              "or directory");
  ExpectFatal({"--bind-fd", "77", "/x"},
              "Can't find source path /proc/self/fd/77: No such file or directory");
}

TEST_F(ErrorsTest, UnknownCapability) {
  ExpectFatal({"--cap-add", "CAP_FOO"}, "unknown cap: CAP_FOO");
  ExpectFatal({"--cap-drop", "kill"}, "unknown cap: kill");
}

TEST_F(ErrorsTest, LabelsWithoutSelinux) {
  if (access("/sys/fs/selinux/enforce", F_OK) == 0) GTEST_SKIP() << "host has SELinux";
  ExpectFatal({"--exec-label", "x"}, "labeling not supported on this system");
}

TEST_F(ErrorsTest, RepeatedOptionWarnsAndLastWins) {
  RunResult r = RunProbe({"--chdir", "/", "--chdir", "/usr"}, {"report"});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.err, "bwrap: Only the last --chdir option will take effect\n");
  EXPECT_EQ(Get(ParseReport(r.out), "cwd"), "/usr");
}

TEST_F(ErrorsTest, DoubleDashEndsOptions) {
  ExpectFatal({"--"}, {"--frobnicate"}, "execvp --frobnicate: No such file or directory");
}

}  // namespace
}  // namespace sbx::integration
