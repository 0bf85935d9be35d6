// The configuration every host git starts with (dispatch/git/git_child_env.h): the clone's
// names only its safe directories; the later, offline steps' also turn off hooks, the
// fsmonitor and every transport but file. Values are quoted so that no path can end the
// value or start a section of its own.
#include "dispatch/git/git_child_env.h"

#include <gtest/gtest.h>

namespace sbx::dispatch {
namespace {

TEST(GitChildEnvTest, QuotesBackslashQuoteAndNewline) {
  EXPECT_EQ(GitConfigQuote("/src/repo"), "\"/src/repo\"");
  EXPECT_EQ(GitConfigQuote("/a\"b\\c"), "\"/a\\\"b\\\\c\"");
  EXPECT_EQ(GitConfigQuote("/a\n[core]\n"), "\"/a\\n[core]\\n\"");
}

TEST(GitChildEnvTest, TheClonesConfigNamesOnlyItsSafeDirectories) {
  EXPECT_EQ(GitConfigText({.safe_directories = {"/src/repo", "/src/repo/.git"}}),
            "[safe]\n\tdirectory = \"/src/repo\"\n\tdirectory = \"/src/repo/.git\"\n");
  EXPECT_EQ(GitConfigText({}), "[safe]\n");
}

TEST(GitChildEnvTest, TheOfflineStepsRunNoHookAndNoTransportButFile) {
  EXPECT_EQ(GitConfigText({.safe_directories = {"/w"}, .offline = true}),
            "[safe]\n\tdirectory = \"/w\"\n"
            "[core]\n\thooksPath = /dev/null\n\tfsmonitor = false\n"
            "[protocol]\n\tallow = never\n[protocol \"file\"]\n\tallow = always\n");
}

}  // namespace
}  // namespace sbx::dispatch
