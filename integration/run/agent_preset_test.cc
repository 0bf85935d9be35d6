// What an --agent preset gives the agent, checked from inside with a stand-in for the agent
// binary (the real agents' own tests are agents_test.cc and tty_test.cc): the state that
// keeps an interactive agent from its first-run questions, several --credentials files at
// their places (DEST relative to the home or absolute inside it), and the preset's routes.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "integration/run/run_support.h"

namespace sbx::integration::run {
namespace {

constexpr char kKey[] = "sk-ant-sbx-test-key-0123456789abcdefghij";

class RunAgentPresetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string missing = MissingPrerequisite({"sh", "cat", "stat"});
    if (!missing.empty()) GTEST_SKIP() << missing;
    HandToSandboxUser(work_.path());
    // --agent looks the agent up in the caller's PATH; this one is never run.
    ASSERT_EQ(::chmod(bin_.path().c_str(), 0755), 0);
    for (const char* agent : {"claude", "opencode"}) {
      WriteFile(bin_.Sub(agent), "#!/bin/sh\nexit 0\n");
      ASSERT_EQ(::chmod(bin_.Sub(agent).c_str(), 0755), 0);
    }
  }

  RunResult Run(const Args& options, const Args& command) {
    Args all = {"--workspace", work_.path()};
    all.insert(all.end(), options.begin(), options.end());
    const char* path = std::getenv("PATH");
    return RunAteam(all, command,
                    WithEnv({"PATH=" + bin_.path() + ":" + (path != nullptr ? path : "/usr/bin")}));
  }

  TempDir work_;
  RootTempDir bin_;
};

TEST_F(RunAgentPresetTest, ClaudeFindsItsFirstRunDone) {
  RunResult res = Run({"--agent", "claude", "--no-default-allow", "--setenv",
                       std::string("ANTHROPIC_API_KEY=") + kKey},
                      {"sh", "-c",
                       "cat ~/.claude.json; echo \"owner: $(stat -c '%u %a' ~/.claude.json)\";"
                       " echo \"uid: $(id -u)\"; echo '{}' > ~/.claude.json && echo rewritten: yes;"
                       " echo \"quiet: $CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC\""});
  ASSERT_EQ(res.exit_code, 0) << Describe(res);
  EXPECT_NE(res.out.find("\"hasCompletedOnboarding\": true"), std::string::npos) << res.out;
  // The workspace trusted, the key approved by its last 20 characters.
  EXPECT_NE(res.out.find("\"" + work_.path() + "\": {\"hasTrustDialogAccepted\": true"),
            std::string::npos)
      << res.out;
  const std::string key = kKey;
  EXPECT_NE(res.out.find("\"approved\": [\"" + key.substr(key.size() - 20) + "\"]"),
            std::string::npos)
      << res.out;
  Report r = ParseReport(res.out);
  EXPECT_EQ(Get(r, "owner"), Get(r, "uid") + " 600") << Describe(res);
  EXPECT_EQ(Get(r, "rewritten"), "yes") << Describe(res);
  EXPECT_EQ(Get(r, "quiet"), "1") << Describe(res);

  // --agent-telemetry: the agent is not told to keep its telemetry in.
  RunResult telemetry =
      Run({"--agent", "claude", "--no-default-allow", "--agent-telemetry"},
          {"sh", "-c", "echo \"quiet: ${CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC:-unset}\""});
  ASSERT_EQ(telemetry.exit_code, 0) << Describe(telemetry);
  EXPECT_EQ(Get(ParseReport(telemetry.out), "quiet"), "unset") << Describe(telemetry);
}

TEST_F(RunAgentPresetTest, OpencodeFindsItsConfig) {
  RunResult res = Run({"--agent", "opencode", "--no-default-allow"},
                      {"sh", "-c", "cat ~/.config/opencode/opencode.json"});
  ASSERT_EQ(res.exit_code, 0) << Describe(res);
  EXPECT_NE(res.out.find("\"autoupdate\": false"), std::string::npos) << res.out;
}

// Two files, one at the preset's place given as the absolute path the sandbox shows, one
// relative to the home; a DEST outside the home is refused with one line before anything
// is made.
TEST_F(RunAgentPresetTest, SeveralCredentialsEachAtItsPlace) {
  RootTempDir host;
  WriteFile(host.Sub("oauth.json"), "oauth-content");
  WriteFile(host.Sub("state.json"), "state-content");
  for (const char* name : {"oauth.json", "state.json"}) {
    ASSERT_EQ(::chmod(host.Sub(name).c_str(), 0600), 0);
  }
  RunResult res = Run({"--agent", "claude", "--no-default-allow", "--credentials",
                       host.Sub("oauth.json") + ":/home/ateam-sandbox/.claude/.credentials.json",
                       "--credentials", host.Sub("state.json") + ":.config/other/state.json"},
                      {"sh", "-c",
                       "echo \"a: $(cat ~/.claude/.credentials.json)\"; echo \"b: $(cat "
                       "~/.config/other/state.json)\""});
  ASSERT_EQ(res.exit_code, 0) << Describe(res);
  Report r = ParseReport(res.out);
  EXPECT_EQ(Get(r, "a"), "oauth-content") << Describe(res);
  EXPECT_EQ(Get(r, "b"), "state-content") << Describe(res);

  // The preset's default DEST, and a second file there: refused.
  RunResult twice = Run(
      {"--agent", "claude", "--no-default-allow", "--credentials", host.Sub("oauth.json"),
       "--credentials", host.Sub("state.json") + ":/home/ateam-sandbox/.claude/.credentials.json"},
      {"true"});
  EXPECT_EQ(twice.exit_code, 125) << Describe(twice);
  EXPECT_EQ(twice.err, "ateam-sandbox run: --credentials " + host.Sub("state.json") +
                           ": a second file for ~/.claude/.credentials.json; give each its own "
                           "DEST\n")
      << Describe(twice);

  RunResult outside =
      Run({"--no-default-allow", "--credentials", host.Sub("oauth.json") + ":/etc/x"}, {"true"});
  EXPECT_EQ(outside.exit_code, 125) << Describe(outside);
  EXPECT_EQ(outside.err, "ateam-sandbox run: --credentials " + host.Sub("oauth.json") +
                             ": DEST '/etc/x' must be a file inside the home, relative to it or "
                             "below /home/ateam-sandbox\n")
      << Describe(outside);
}

// The claude preset allows its sign-in host with its API; --allow of either host points it
// elsewhere (here at a closed local port; a dry run connects nowhere). Its telemetry host
// only with --agent-telemetry.
TEST_F(RunAgentPresetTest, ClaudeRoutesAreItsApiAndSignInHosts) {
  ClosedPort closed;
  const std::string to = "=127.0.0.1:" + std::to_string(closed.port());
  RunResult res = Run({"--agent", "claude", "--dry-run", "--allow", "api.anthropic.com" + to,
                       "--allow", "platform.claude.com" + to},
                      {"true"});
  ASSERT_EQ(res.exit_code, 0) << Describe(res);
  EXPECT_NE(res.out.find("api.anthropic.com"), std::string::npos) << res.out;
  EXPECT_NE(res.out.find("platform.claude.com"), std::string::npos) << res.out;
  EXPECT_EQ(res.out.find("datadoghq"), std::string::npos) << res.out;
  RunResult telemetry = Run(
      {"--agent", "claude", "--dry-run", "--agent-telemetry", "--allow", "api.anthropic.com" + to,
       "--allow", "platform.claude.com" + to, "--allow", "http-intake.logs.us5.datadoghq.com" + to},
      {"true"});
  ASSERT_EQ(telemetry.exit_code, 0) << Describe(telemetry);
  EXPECT_NE(telemetry.out.find("http-intake.logs.us5.datadoghq.com"), std::string::npos)
      << telemetry.out;
}

}  // namespace
}  // namespace sbx::integration::run
