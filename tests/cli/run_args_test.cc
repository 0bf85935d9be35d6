// Command lines before CLI11: where `run`'s command starts, unknown options (long and short)
// with the nearest known one, values, and the other subcommands' positionals.
#include "cli/run_args.h"

#include <gtest/gtest.h>

namespace sbx::cli {
namespace {

const std::vector<OptionName> kKnown = {{"--repo", true},
                                        {"--workspace", true},
                                        {"--workspace-root", true},
                                        {"--out", true},
                                        {"--timeout", true},
                                        {"--dry-run", false},
                                        {"--no-default-allow", false},
                                        {"--allow", true},
                                        {"--help", false},
                                        {"-h", false},
                                        {"-q", false},
                                        {"-o", true}};

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

TEST(RunArgsTest, ShortOptionsAreCheckedToo) {
  EXPECT_EQ(Split({"-q", "--repo", "r", "true"}).options, (Strings{"-q", "--repo", "r"}));
  EXPECT_EQ(SplitError({"-x", "true"}), "unknown option -x (see ateam-sandbox run --help)");
}

// The other subcommands: positionals may come between the options, and the check goes on.
std::string CheckError(std::vector<std::string> args) {
  auto checked = CheckOptionNames(args, kKnown, "ateam-sandbox harvest --help",
                                  /*command_follows=*/false);
  EXPECT_FALSE(checked);
  return checked ? "" : checked.error().Render();
}

TEST(CheckOptionNamesTest, PositionalsDoNotEndTheOptions) {
  std::vector<std::string> args = {"ws", "-o", "p.patch", "--dry-run", "ws2"};
  auto checked = CheckOptionNames(args, kKnown, "help", /*command_follows=*/false);
  ASSERT_TRUE(checked) << checked.error().Render();
  EXPECT_EQ(*checked, args.size());
  EXPECT_EQ(CheckError({"ws", "--ouput", "p"}), "unknown option --ouput: did you mean --out?");
  EXPECT_EQ(CheckError({"ws", "--jsn"}), "unknown option --jsn (see ateam-sandbox harvest --help)");
  EXPECT_EQ(CheckError({"ws", "-o"}), "-o needs a value");
}

TEST(CheckOptionNamesTest, AValueIsNeverTakenForAnOption) {
  std::vector<std::string> args = {"-o", "--nope", "-o-x", "--out=--nope"};
  EXPECT_TRUE(CheckOptionNames(args, kKnown, "help", /*command_follows=*/false));
  std::vector<std::string> after_dashes = {"--", "--nope"};
  EXPECT_EQ(*CheckOptionNames(after_dashes, kKnown, "help", /*command_follows=*/false), 0U);
}

}  // namespace
}  // namespace sbx::cli
