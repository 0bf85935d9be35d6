// bwrap's messages, outcomes and exit statuses for everything the parser and the
// post-parse validation decide (docs/bwrap-behaviour.md, "Diagnostics and exit codes").
#include <gtest/gtest.h>

#include <cstdio>
#include <sstream>

#include "tests/cli/bwrap_test_util.h"

namespace sbx::cli {
namespace {

using testing::Parse;

struct FatalCase {
  std::vector<std::string> args;
  std::string message;  // without "bwrap: "
};

void ExpectFatal(const FatalCase& c, const runtime::HostFacts& host) {
  SCOPED_TRACE(::testing::PrintToString(c.args));
  const BwrapParse parse = Parse(c.args, {}, host);
  EXPECT_EQ(parse.outcome, BwrapOutcome::kFatal);
  EXPECT_EQ(parse.ExitStatus(), 1);
  ASSERT_FALSE(parse.diagnostics.empty());
  EXPECT_EQ(parse.diagnostics.back(), "bwrap: " + c.message);
}

TEST(BwrapMessagesTest, ParseErrors) {
  const FatalCase cases[] = {
      {{"--frobnicate"}, "Unknown option --frobnicate"},
      {{"-"}, "Unknown option -"},
      {{"--unshare-pid", "-x", "cmd"}, "Unknown option -x"},
      {{"--uid", "abc"}, "Invalid uid: abc"},
      {{"--gid", "-1"}, "Invalid gid: -1"},
      {{"--info-fd", "x"}, "Invalid fd: x"},
      {{"--sync-fd", "-1"}, "Invalid fd: -1"},
      {{"--add-seccomp-fd", "-1"}, "Invalid fd: -1"},
      {{"--seccomp", "0a"}, "Invalid fd: 0a"},
      {{"--args", "0x5"}, "Invalid fd: 0x5"},
      {{"--bind-fd", "x", "/a"}, "Invalid fd: x"},
      {{"--file", "", "/a"}, "Invalid fd: "},
      {{"--ro-bind-data", "3x", "/a"}, "Invalid fd: 3x"},
      {{"--userns", "4294967295"}, "Invalid fd: 4294967295"},
      {{"--perms", "999"}, "--perms takes an octal argument <= 07777"},
      {{"--perms", "10000"}, "--perms takes an octal argument <= 07777"},
      {{"--perms", ""}, "--perms takes an octal argument <= 07777"},
      {{"--chmod", "9", "/x"}, "--chmod takes an octal argument <= 07777"},
      {{"--cap-add", "CAP_FOO"}, "unknown cap: CAP_FOO"},
      {{"--cap-drop", "kill"}, "unknown cap: kill"},
      {{"--cap-add", "64"}, "unknown cap: 64"},
      {{"--argv0", "a", "--argv0", "b"}, "--argv0 used multiple times"},
      {{"--exec-label", "x"}, "labeling not supported on this system"},
      {{"--file-label", "x"}, "labeling not supported on this system"},
      {{"--setenv", "A=B", "c"}, "setenv failed"},
      {{"--setenv", "", "c"}, "setenv failed"},
      {{"--unsetenv", ""}, "unsetenv failed"},
      {{"--unsetenv", "A=b"}, "unsetenv failed"},
  };
  for (const FatalCase& c : cases) ExpectFatal(c, testing::UserHost());
}

TEST(BwrapMessagesTest, MissingArguments) {
  const FatalCase cases[] = {
      {{"--bind", "/"}, "--bind takes two arguments"},
      {{"--bind-try", "/"}, "--bind-try takes two arguments"},
      {{"--ro-bind"}, "--ro-bind takes two arguments"},
      {{"--dev-bind-try", "/"}, "--dev-bind-try takes two arguments"},
      {{"--bind-fd", "3"}, "--bind-fd takes two arguments"},
      {{"--ro-bind-fd", "3"}, "--bind-fd takes two arguments"},
      {{"--file", "3"}, "--file takes two arguments"},
      {{"--bind-data", "3"}, "--bind-data takes two arguments"},
      {{"--ro-bind-data"}, "--ro-bind-data takes two arguments"},
      {{"--symlink", "a"}, "--symlink takes two arguments"},
      {{"--setenv", "A"}, "--setenv takes two arguments"},
      {{"--chmod", "0755"}, "--chmod takes two arguments"},
      {{"--overlay", "a", "b"}, "--overlay takes three arguments"},
      {{"--argv0"}, "--argv0 takes one argument"},
      {{"--chdir"}, "--chdir takes one argument"},
      {{"--remount-ro"}, "--remount-ro takes one argument"},
  };
  for (const FatalCase& c : cases) ExpectFatal(c, testing::UserHost());
  for (const char* name : {"--args",       "--tmp-overlay",
                           "--ro-overlay", "--proc",
                           "--exec-label", "--file-label",
                           "--dev",        "--tmpfs",
                           "--mqueue",     "--dir",
                           "--lock-file",  "--sync-fd",
                           "--block-fd",   "--userns-block-fd",
                           "--info-fd",    "--json-status-fd",
                           "--seccomp",    "--add-seccomp-fd",
                           "--userns",     "--userns2",
                           "--pidns",      "--unsetenv",
                           "--uid",        "--gid",
                           "--hostname",   "--cap-add",
                           "--cap-drop",   "--perms",
                           "--size"}) {
    ExpectFatal({{name}, std::string(name) + " takes an argument"}, testing::UserHost());
  }
}

TEST(BwrapMessagesTest, Modifiers) {
  const std::string overlay =
      "--overlay-src must be followed by another --overlay-src or one of --overlay, "
      "--tmp-overlay, or --ro-overlay";
  const FatalCase cases[] = {
      {{"--perms", "0755", "--chdir", "/"},
       "--perms must be followed by an option that creates a file"},
      {{"--perms", "0755", "--bind", "/", "/"},
       "--perms must be followed by an option that creates a file"},
      {{"--perms", "0755", "--unshare-net"},
       "--perms must be followed by an option that creates a file"},
      {{"--size", "100", "--dir", "X"}, "--size must be followed by --tmpfs"},
      {{"--perms", "0755", "--size", "10", "--dir", "/x"}, "--size must be followed by --tmpfs"},
      {{"--perms", "0755", "--perms", "0700"}, "--perms given twice for the same action"},
      {{"--size", "1", "--perms", "0700", "--size", "2"}, "--size given twice for the same action"},
      {{"--size", "0"}, "--size takes a non-zero number of bytes"},
      {{"--size", "123bogus"}, "--size takes a non-zero number of bytes"},
      {{"--size", ""}, "--size takes a non-zero number of bytes"},
      {{"--size", "-1"}, "--size takes a non-zero number of bytes"},
      {{"--size", " 1"}, "--size takes a non-zero number of bytes"},
      {{"--size", "18446744073709551616"}, "--size takes a non-zero number of bytes"},
      {{"--size", "9223372036854775808"}, "--size (for tmpfs) is limited to 9223372036854775807"},
      {{"--overlay", "u", "w", "d"}, "--overlay requires at least one --overlay-src"},
      {{"--tmp-overlay", "d"}, "--tmp-overlay requires at least one --overlay-src"},
      {{"--overlay-src", "a", "--ro-overlay", "d"},
       "--ro-overlay requires at least two --overlay-src"},
      {{"--overlay-src"}, overlay},
      {{"--overlay-src", "a"}, overlay},
      {{"--overlay-src", "a", "true"}, overlay},
      {{"--overlay-src", "a", "--bind", "/", "/"}, overlay},
      {{"--overlay-src", "a", "--perms", "0755"}, overlay},
  };
  for (const FatalCase& c : cases) ExpectFatal(c, testing::UserHost());
}

TEST(BwrapMessagesTest, PendingModifiersBeforeTheCommandAreIgnored) {
  EXPECT_EQ(Parse({"--perms", "0755", "true"}).outcome, BwrapOutcome::kRun);
  EXPECT_EQ(Parse({"--size", "100", "--", "true"}).outcome, BwrapOutcome::kRun);
}

TEST(BwrapMessagesTest, SetuidModeRefusals) {
  const FatalCase cases[] = {
      {{"--overlay-src", "a"}, "The --overlay-src option is not permitted in setuid mode"},
      {{"--overlay", "a"}, "The --overlay option is not permitted in setuid mode"},
      {{"--tmp-overlay"}, "The --tmp-overlay option is not permitted in setuid mode"},
      {{"--ro-overlay", "x"}, "The --ro-overlay option is not permitted in setuid mode"},
      {{"--size"}, "The --size option is not permitted in setuid mode"},
      {{"--cap-add", "CAP_KILL", "true"}, "--cap-add in setuid mode can be used only by root"},
      {{"--userns", "3", "true"}, "--userns doesn't work in setuid mode"},
      {{"--userns2", "3", "true"}, "--userns2 doesn't work in setuid mode"},
  };
  for (const FatalCase& c : cases) ExpectFatal(c, testing::SetuidHost());
  EXPECT_EQ(
      Parse({"--cap-add", "ALL", "--cap-drop", "all", "true"}, {}, testing::SetuidHost()).outcome,
      BwrapOutcome::kRun);
}

TEST(BwrapMessagesTest, ValidationAsNonRoot) {
  const FatalCase cases[] = {
      {{"--hostname", "x", "true"}, "Specifying --hostname requires --unshare-uts"},
      {{"--as-pid-1", "true"}, "Specifying --as-pid-1 requires --unshare-pid"},
      {{"--unshare-pid", "--as-pid-1", "--lock-file", "/x", "true"},
       "Specifying --as-pid-1 and --lock-file is not permitted"},
      {{"--userns-block-fd", "3", "true"}, "--userns-block-fd requires --unshare-user"},
      {{"--unshare-user", "--userns-block-fd", "3", "true"},
       "--userns-block-fd requires --info-fd"},
      {{"--disable-userns", "true"}, "--disable-userns requires --unshare-user"},
      {{"--unshare-user", "--disable-userns", "--userns-block-fd", "3", "--info-fd", "4", "true"},
       "--disable-userns is not compatible with  --userns-block-fd"},
      {{"--unshare-user", "--userns", "5", "true"}, "--userns not compatible --unshare-user"},
      {{"--unshare-all", "--userns", "5", "true"}, "--userns not compatible --unshare-user-try"},
      // These checks come before the missing-COMMAND check.
      {{"--userns-block-fd", "3"}, "--userns-block-fd requires --unshare-user"},
  };
  for (const FatalCase& c : cases) ExpectFatal(c, testing::UserHost());
}

TEST(BwrapMessagesTest, UidGidNeedUserNamespaceOnlyAsRoot) {
  ExpectFatal({{"--uid", "5", "true"}, "Specifying --uid requires --unshare-user or --userns"},
              testing::RootHost());
  ExpectFatal({{"--gid", "5", "true"}, "Specifying --gid requires --unshare-user or --userns"},
              testing::RootHost());
  EXPECT_EQ(Parse({"--uid", "0", "--gid", "0", "true"}, {}, testing::RootHost()).outcome,
            BwrapOutcome::kRun);
  EXPECT_EQ(Parse({"--unshare-user", "--uid", "5", "true"}, {}, testing::RootHost()).outcome,
            BwrapOutcome::kRun);
  EXPECT_EQ(Parse({"--userns", "3", "--uid", "5", "true"}, {}, testing::RootHost()).outcome,
            BwrapOutcome::kRun);
  EXPECT_EQ(Parse({"--uid", "5", "--gid", "6", "true"}).outcome, BwrapOutcome::kRun);
}

TEST(BwrapMessagesTest, MissingCommandIsUsage) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {}, {"--unshare-pid"}, {"--unshare-pid", "--"}, {"--hostname", "x"}}) {
    const BwrapParse parse = Parse(args);
    EXPECT_EQ(parse.outcome, BwrapOutcome::kUsageError) << ::testing::PrintToString(args);
    EXPECT_EQ(parse.ExitStatus(), 1);
    EXPECT_TRUE(parse.diagnostics.empty());
  }
}

TEST(BwrapMessagesTest, HelpAtItsPosition) {
  const BwrapParse parse = Parse({"--chdir", "/", "--chdir", "/", "--help", "--frob"});
  EXPECT_EQ(parse.outcome, BwrapOutcome::kHelp);
  EXPECT_EQ(parse.ExitStatus(), 0);
  EXPECT_EQ(parse.diagnostics,
            (std::vector<std::string>{"bwrap: Only the last --chdir option will take effect"}));
  EXPECT_EQ(Parse({"--frob", "--help"}).outcome, BwrapOutcome::kFatal);
}

TEST(BwrapMessagesTest, VersionAloneAndAtItsPosition) {
  const std::vector<std::string> alone = {"--version"};
  EXPECT_TRUE(IsBwrapVersionOnly(alone));
  EXPECT_EQ(Parse(alone).outcome, BwrapOutcome::kVersion);
  EXPECT_FALSE(IsBwrapVersionOnly(std::vector<std::string>{"--version", "x"}));
  EXPECT_FALSE(IsBwrapVersionOnly(std::vector<std::string>{}));
  // Later words are never looked at; earlier ones are fully processed.
  EXPECT_EQ(Parse({"--version", "--frob"}).outcome, BwrapOutcome::kVersion);
  EXPECT_EQ(Parse({"--perms", "0755", "--version"}).outcome, BwrapOutcome::kVersion);
  EXPECT_EQ(Parse({"--frob", "--version"}).outcome, BwrapOutcome::kFatal);
  const BwrapParse parse = Parse({"--uid", "1", "--uid", "2", "--version"});
  EXPECT_EQ(parse.outcome, BwrapOutcome::kVersion);
  EXPECT_EQ(parse.ExitStatus(), 0);
  EXPECT_EQ(parse.diagnostics.size(), 1U);
  EXPECT_EQ(kBwrapVersionText, "bubblewrap 0.11.1");
}

TEST(BwrapMessagesTest, EveryOnlyTheLastWarning) {
  for (const char* name :
       {"--chdir", "--sync-fd", "--block-fd", "--userns-block-fd", "--info-fd", "--json-status-fd",
        "--seccomp", "--userns", "--userns2", "--pidns", "--uid", "--gid", "--hostname"}) {
    const BwrapParse parse = Parse({name, "3", name, "4", "--version"});
    EXPECT_EQ(parse.outcome, BwrapOutcome::kVersion) << name;
    EXPECT_EQ(parse.diagnostics,
              (std::vector<std::string>{"bwrap: Only the last " + std::string(name) +
                                        " option will take effect"}));
  }
}

TEST(BwrapMessagesTest, WarningIsPrintedBeforeTheValueIsChecked) {
  const BwrapParse parse = Parse({"--sync-fd", "3", "--sync-fd", "x"});
  EXPECT_EQ(parse.diagnostics,
            (std::vector<std::string>{"bwrap: Only the last --sync-fd option will take effect",
                                      "bwrap: Invalid fd: x"}));
}

TEST(BwrapMessagesTest, WarningsPrecedeValidationErrors) {
  const BwrapParse parse = Parse({"--hostname", "a", "--hostname", "b", "true"});
  EXPECT_EQ(parse.outcome, BwrapOutcome::kFatal);
  EXPECT_EQ(parse.diagnostics,
            (std::vector<std::string>{"bwrap: Only the last --hostname option will take effect",
                                      "bwrap: Specifying --hostname requires --unshare-uts"}));
}

TEST(BwrapMessagesTest, LevelPrefixAffectsOnlyLaterMessages) {
  const BwrapParse parse =
      Parse({"--chdir", "/", "--chdir", "/", "--level-prefix", "--chdir", "/", "--frob"});
  EXPECT_TRUE(parse.level_prefix);
  EXPECT_EQ(parse.diagnostics,
            (std::vector<std::string>{"bwrap: Only the last --chdir option will take effect",
                                      "<4>bwrap: Only the last --chdir option will take effect",
                                      "<3>bwrap: Unknown option --frob"}));
}

TEST(BwrapMessagesTest, LevelPrefixOnErrors) {
  EXPECT_EQ(Parse({"--level-prefix", "--frob"}).diagnostics,
            (std::vector<std::string>{"<3>bwrap: Unknown option --frob"}));
  EXPECT_EQ(Parse({"--level-prefix", "--hostname", "x", "true"}).diagnostics,
            (std::vector<std::string>{"<3>bwrap: Specifying --hostname requires --unshare-uts"}));
}

TEST(BwrapMessagesTest, FormatDiagnostic) {
  EXPECT_EQ(FormatBwrapDiagnostic(BwrapSeverity::kError, false, "x"), "bwrap: x");
  EXPECT_EQ(FormatBwrapDiagnostic(BwrapSeverity::kError, true, "x"), "<3>bwrap: x");
  EXPECT_EQ(FormatBwrapDiagnostic(BwrapSeverity::kWarning, true, "x"), "<4>bwrap: x");
}

TEST(BwrapMessagesTest, ArgumentCap) {
  std::vector<std::string> args(kBwrapMaxArgs - 1, "--unshare-ipc");
  args.emplace_back("true");
  EXPECT_EQ(Parse(args).outcome, BwrapOutcome::kRun);
  args.emplace_back("extra-argument-of-the-command");
  const BwrapParse parse = Parse(args);
  EXPECT_EQ(parse.outcome, BwrapOutcome::kFatal);
  EXPECT_EQ(parse.diagnostics,
            (std::vector<std::string>{"bwrap: Exceeded maximum number of arguments 9000"}));
}

std::vector<std::string> UsageOptionNames(const std::string& usage) {
  std::vector<std::string> names;
  std::istringstream in(usage);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("    --", 0) == 0) names.push_back(line.substr(4, line.find(' ', 4) - 4));
  }
  return names;
}

TEST(BwrapUsageTest, FirstLineUsesArgv0) {
  const std::string usage = BwrapUsage("/opt/x/bwrap");
  EXPECT_EQ(usage.rfind("usage: /opt/x/bwrap [OPTIONS...] [--] COMMAND [ARGS...]\n\n", 0), 0U);
  EXPECT_EQ(usage.back(), '\n');
  EXPECT_NE(usage.find("    --level-prefix               Prepend e.g. <3> to diagnostic"),
            std::string::npos);
  EXPECT_NE(usage.find("    --overlay RWSRC WORKDIR DEST Mount overlayfs on DEST, with RWSRC as "
                       "the host path for writes and\n                                 WORKDIR"),
            std::string::npos);
}

TEST(BwrapUsageTest, EveryListedOptionIsKnown) {
  const std::vector<std::string> names = UsageOptionNames(BwrapUsage("bwrap"));
  EXPECT_EQ(names.size(), 67U);
  for (const std::string& name : names) {
    for (const std::string& diagnostic : Parse({name}).diagnostics) {
      EXPECT_EQ(diagnostic.find("Unknown option"), std::string::npos) << name;
    }
  }
}

// Every line of the installed bwrap's help (0.8.0 here) appears in ours, in order.
TEST(BwrapUsageTest, ContainsTheInstalledBwrapHelp) {
  FILE* pipe = ::popen("/usr/bin/bwrap --help 2>/dev/null", "r");  // argv0 as invoked
  std::string help;
  char buffer[4096];
  size_t n = 0;
  while (pipe != nullptr && (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) {
    help.append(buffer, n);
  }
  if (pipe != nullptr) ::pclose(pipe);
  if (help.empty()) GTEST_SKIP() << "/usr/bin/bwrap is not available";
  const std::string ours = BwrapUsage("/usr/bin/bwrap");
  std::istringstream in(help);
  std::string line;
  size_t pos = 0;
  while (std::getline(in, line)) {
    const size_t found = ours.find(line + "\n", pos);
    ASSERT_NE(found, std::string::npos) << line;
    pos = found + line.size();
  }
}

}  // namespace
}  // namespace sbx::cli
