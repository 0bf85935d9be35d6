// `run`'s command line before CLI11: where the command starts, unknown options with the
// nearest known one, values, and --timeout.
#include "cli/run_args.h"

#include <gtest/gtest.h>

namespace sbx::cli {
namespace {

const std::vector<RunOptionName> kKnown = {
    {"--repo", true},    {"--workspace", true}, {"--workspace-root", true},    {"--out", true},
    {"--timeout", true}, {"--dry-run", false},  {"--no-default-allow", false}, {"--allow", true},
    {"--help", false}};

RunArgs Split(std::vector<std::string> args) {
  auto split = SplitRunArgs(args, kKnown);
  EXPECT_TRUE(split) << split.error().Render();
  return split ? *split : RunArgs{};
}

std::string SplitError(std::vector<std::string> args) {
  auto split = SplitRunArgs(args, kKnown);
  EXPECT_FALSE(split);
  return split ? "" : split.error().Render();
}

using Strings = std::vector<std::string>;

TEST(RunArgsTest, CommandAfterDoubleDash) {
  RunArgs split = Split({"--repo", "r", "--dry-run", "--", "-x", "--repo"});
  EXPECT_EQ(split.options, (Strings{"--repo", "r", "--dry-run"}));
  EXPECT_EQ(split.command, (Strings{"-x", "--repo"}));
}

TEST(RunArgsTest, CommandAtTheFirstNonOptionLikeBwrap) {
  RunArgs split = Split({"--workspace", "w", "echo", "hi", "--out", "x"});
  EXPECT_EQ(split.options, (Strings{"--workspace", "w"}));
  EXPECT_EQ(split.command, (Strings{"echo", "hi", "--out", "x"}));
}

TEST(RunArgsTest, ValuesAreNeverTakenForTheCommandOrAnOption) {
  RunArgs split = Split({"--allow", "-odd", "--out=o", "--timeout", "5", "true"});
  EXPECT_EQ(split.options, (Strings{"--allow", "-odd", "--out=o", "--timeout", "5"}));
  EXPECT_EQ(split.command, (Strings{"true"}));
}

TEST(RunArgsTest, NoCommandLeavesItEmpty) {
  EXPECT_TRUE(Split({"--repo", "r"}).command.empty());
  EXPECT_TRUE(Split({"--repo", "r", "--"}).command.empty());
}

TEST(RunArgsTest, UnknownOptionNamesTheNearestKnownOne) {
  EXPECT_EQ(SplitError({"--rep", "repo", "--", "true"}),
            "unknown option --rep: did you mean --repo?");
  EXPECT_EQ(SplitError({"--workspce", "w", "true"}),
            "unknown option --workspce: did you mean --workspace?");
  EXPECT_EQ(SplitError({"--dryrun", "true"}), "unknown option --dryrun: did you mean --dry-run?");
  EXPECT_EQ(SplitError({"--frobnicate", "true"}),
            "unknown option --frobnicate (see ateam-sandbox run --help)");
  EXPECT_EQ(SplitError({"--x=1", "true"}), "unknown option --x (see ateam-sandbox run --help)");
}

TEST(RunArgsTest, MissingValueIsOneLine) {
  EXPECT_EQ(SplitError({"--repo"}), "--repo needs a value");
}

TEST(RunArgsTest, TimeoutIsAPositiveNumberOfSecondsWithAHumanMessage) {
  EXPECT_EQ(*ParseTimeoutSeconds("1800"), 1800);
  EXPECT_EQ(*ParseTimeoutSeconds("0.5"), 0.5);
  for (const char* bad : {"abc", "", "0", "-1", "5s", "1e400", "nan", "inf", "99999999999"}) {
    auto seconds = ParseTimeoutSeconds(bad);
    ASSERT_FALSE(seconds) << bad;
    EXPECT_EQ(seconds.error().Render(),
              std::string("--timeout: expected a positive number of seconds (e.g. 1800), got '") +
                  bad + "'");
  }
}

}  // namespace
}  // namespace sbx::cli
