// The real agents inside `run`: claude and opencode as npm installs them
// (scripts/install-agents.sh, found through $SBX_AGENTS_DIR), started by name with --agent,
// and claude's request to api.anthropic.com carried by the tunnel to a local fake.
//
// Each test skips, loudly, when the agents are not installed (the npm registry could not be
// reached) rather than passing without having run them.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <chrono>
#include <climits>
#include <cstdlib>
#include <regex>
#include <sstream>

#include "integration/run/agents/agent_support.h"
#include "integration/run/run_support.h"

namespace sbx::integration::run {
namespace {

constexpr char kApiHost[] = "api.anthropic.com";

std::string RealPath(const std::string& path) {
  char resolved[PATH_MAX];
  return realpath(path.c_str(), resolved) != nullptr ? std::string(resolved) : path;
}

class RunAgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string missing = MissingPrerequisite({"sh", "awk"});
    if (missing.empty()) missing = AgentsUnavailableReason();
    if (!missing.empty()) {
      GTEST_SKIP() << "\n*** AGENT TEST NOT RUN: " << missing << " ***\n";
    }
  }

  // The caller's PATH leads --agent to the installed agent; the sandbox's PATH then starts
  // with the directory it was found in, so the agent runs by its own name.
  RunOptions HostOptions(std::chrono::seconds timeout) {
    const char* path = std::getenv("PATH");
    RunOptions options;
    options.extra_env = {"PATH=" + AgentsBinDir() + ":" + (path != nullptr ? path : "/usr/bin")};
    options.timeout = timeout;
    return options;
  }
  Args AgentOptions(const std::string& agent, const Args& extra) {
    Args options = {"--workspace", work_.path(), "--out", out_.path(), "--agent", agent};
    options.insert(options.end(), extra.begin(), extra.end());
    return options;
  }

  // `AGENT --version` with --agent AGENT and no network route (--version needs none, and a
  // test machine cannot resolve the preset's real endpoint). Also reports how the agent's
  // installation is mounted, from /proc/self/mountinfo.
  void ExpectVersion(const std::string& agent) {
    std::string modules = RealPath(std::string(std::getenv("SBX_AGENTS_DIR")) + "/node_modules");
    std::string script = agent + " --version; rc=$?; awk -v m='" + modules +
                         "' '$5 == m { print \"agent_mount_options: \" $6 }' /proc/self/mountinfo;"
                         " exit $rc";
    RunResult res = RunAteam(AgentOptions(agent, {"--no-default-allow"}), {"sh", "-c", script},
                             HostOptions(std::chrono::seconds(90)));
    ASSERT_EQ(res.exit_code, 0) << Describe(res);
    std::string first_line = res.out.substr(0, res.out.find('\n'));
    EXPECT_TRUE(std::regex_search(first_line, std::regex(R"(^\d+\.\d+\.\d+)")))
        << "not a version: '" << first_line << "'\n"
        << Describe(res);
    // The installation is visible, and read-only, at its host path.
    std::string options = "," + Get(ParseReport(res.out), "agent_mount_options") + ",";
    EXPECT_NE(options.find(",ro,"), std::string::npos) << modules << "\n" << Describe(res);
  }

  TempDir work_, out_;
};

TEST_F(RunAgentTest, ClaudeVersion) { ExpectVersion("claude"); }

TEST_F(RunAgentTest, OpencodeVersion) { ExpectVersion("opencode"); }

// `claude -p hello` against a fake api.anthropic.com: the agent resolves the name to its
// tunnel address, the relay carries the connection to 127.0.0.1:PORT, and the fake's
// certificate is trusted through NODE_EXTRA_CA_CERTS (the CA file bound read-only). The
// preset keeps claude's background traffic (update checks, telemetry) in by itself: only
// the request under test reaches the fake.
TEST_F(RunAgentTest, ClaudePromptThroughTunnel) {
  FakeAnthropic api;
  ASSERT_TRUE(api.ok()) << api.failure();
  Args extra = {"--allow",   std::string(kApiHost) + "=127.0.0.1:" + std::to_string(api.port()),
                "--ro",      api.ca_path(),
                "--setenv",  "NODE_EXTRA_CA_CERTS=" + api.ca_path(),
                "--setenv",  "ANTHROPIC_API_KEY=sk-ant-sbx-test-not-a-real-key",
                "--timeout", "120"};
  ClosedPort closed;  // the sign-in host, not used with a key: pointed nowhere
  extra.insert(extra.end(),
               {"--allow", "platform.claude.com=127.0.0.1:" + std::to_string(closed.port())});
  RunResult res = RunAteam(AgentOptions("claude", extra), {"claude", "-p", "hello"},
                           HostOptions(std::chrono::seconds(150)));
  std::string log = api.Log();
  EXPECT_EQ(res.exit_code, 0) << Describe(res) << "\nfake server log:\n" << log;
  EXPECT_NE(res.out.find(kFakeReply), std::string::npos)
      << "claude did not print the fake's reply\n"
      << Describe(res) << "\nfake server log:\n"
      << log;
  std::string request = std::string("request sni=") + kApiHost + " method=POST path=/v1/messages";
  EXPECT_NE(log.find(request), std::string::npos) << "no '" << request << "' in:\n" << log;
  // Every connection that reached the fake came through the tunnel with the allowed name.
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);) {
    EXPECT_EQ(line.rfind(std::string("request sni=") + kApiHost + " ", 0), 0U) << line;
  }
}

// The README's example as written, `--agent claude --credentials ~/.claude/.credentials.json
// -- claude -p ...`, with a login's credentials file (an OAuth token, as `claude` writes it
// after a login) and the preset's two hosts pointed at the fake.
TEST_F(RunAgentTest, ClaudeReadmeExampleWithLoginCredentials) {
  FakeAnthropic api;
  ASSERT_TRUE(api.ok()) << api.failure();
  RootTempDir host;
  const std::string creds = host.Sub("credentials.json");
  // Valid for a day from now (milliseconds), so nothing needs a refresh.
  const long long expires =
      std::chrono::duration_cast<std::chrono::milliseconds>(
          (std::chrono::system_clock::now() + std::chrono::hours(24)).time_since_epoch())
          .count();
  WriteFile(creds,
            "{\"claudeAiOauth\": {\"accessToken\": \"sk-ant-oat01-sbx-test-token\", "
            "\"refreshToken\": \"sk-ant-ort01-sbx-test-refresh\", \"expiresAt\": " +
                std::to_string(expires) +
                ", \"scopes\": [\"user:inference\", \"user:profile\"], "
                "\"subscriptionType\": \"pro\"}}\n");
  ASSERT_EQ(chmod(creds.c_str(), 0600), 0);
  const std::string to = "=127.0.0.1:" + std::to_string(api.port());
  Args extra = {"--credentials", creds,
                "--allow",       std::string(kApiHost) + to,
                "--allow",       "platform.claude.com" + to,
                "--ro",          api.ca_path(),
                "--setenv",      "NODE_EXTRA_CA_CERTS=" + api.ca_path(),
                "--timeout",     "120"};
  RunResult res = RunAteam(AgentOptions("claude", extra), {"claude", "-p", "fix the failing test"},
                           HostOptions(std::chrono::seconds(150)));
  std::string log = api.Log();
  EXPECT_EQ(res.exit_code, 0) << Describe(res) << "\nfake server log:\n" << log;
  EXPECT_NE(res.out.find(kFakeReply), std::string::npos) << Describe(res) << "\n" << log;
  // The login's token is what the API saw.
  EXPECT_NE(log.find("method=POST path=/v1/messages"), std::string::npos) << log;
  EXPECT_NE(log.find("auth=Bearer+sk-ant-oat01-sbx-test-token"), std::string::npos) << log;
}

}  // namespace
}  // namespace sbx::integration::run
