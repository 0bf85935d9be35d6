// Route kinds through the whole tunnel: tcp routes dial when the agent connects, so servers
// that speak first work; tls routes dial only for a ClientHello naming the route's host.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "integration/run/run_support.h"
#include "tests/relay/tls_samples.h"

namespace sbx::integration::run {
namespace {

constexpr char kTlsHost[] = "api.example.test";

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1) {
    lines.push_back(text.substr(start, end - start));
  }
  return lines;
}

bool Contains(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

class RunRouteKindsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string missing = MissingPrerequisite({"sh"});
    if (!missing.empty()) GTEST_SKIP() << missing;
    ledger_ = state_.Sub("ledger.jsonl");
  }
  Args Options(const std::vector<std::string>& allows) {
    Args options = {"--workspace", work_.path(), "--out", out_.path(), "--ledger", ledger_};
    for (const std::string& allow : allows) {
      options.push_back("--allow");
      options.push_back(allow);
    }
    return options;
  }
  std::vector<std::string> LedgerLines() { return Lines(ReadFile(ledger_).value_or("")); }

  TempDir work_, out_, state_;
  std::string ledger_;
};

TEST_F(RunRouteKindsTest, SshStyleBannerReachesAnAgentThatSendsNothingFirst) {
  GreetingServer ssh("SSH-2.0-OpenSSH_9.2 sbx-test");
  // Port 22: a tcp route by default.
  RunResult res = RunAteam(Options({"banner.test:22=127.0.0.1:" + std::to_string(ssh.port())}),
                           {NetClientPath(), "converse", "banner.test", "22", "QUIT"});
  ASSERT_EQ(res.exit_code, 0) << Describe(res);
  Report r = ParseReport(res.out);
  EXPECT_EQ(Get(r, "greeting"), "SSH-2.0-OpenSSH_9.2 sbx-test") << Describe(res);
  EXPECT_EQ(Get(r, "reply_1"), "221 bye") << Describe(res);
  EXPECT_EQ(Get(r, "end"), "EOF") << Describe(res);
  EXPECT_EQ(ssh.accepted(), 1);
  std::vector<std::string> lines = LedgerLines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(Contains(lines[0], "\"host\":\"banner.test\"")) << lines[0];
  EXPECT_TRUE(Contains(lines[0], "\"end\":\"closed\"")) << lines[0];
}

TEST_F(RunRouteKindsTest, SmtpStyleGreetingThenCommandsAndReplies) {
  GreetingServer smtp("220 mail.test ESMTP sbx-test");
  RunResult res = RunAteam(Options({"mail.test:25=127.0.0.1:" + std::to_string(smtp.port())}),
                           {NetClientPath(), "converse", "mail.test", "25", "EHLO agent.test",
                            "MAIL FROM:<agent@agent.test>", "QUIT"});
  ASSERT_EQ(res.exit_code, 0) << Describe(res);
  Report r = ParseReport(res.out);
  EXPECT_EQ(Get(r, "greeting"), "220 mail.test ESMTP sbx-test") << Describe(res);
  EXPECT_EQ(Get(r, "reply_1"), "250 EHLO agent.test") << Describe(res);
  EXPECT_EQ(Get(r, "reply_2"), "250 MAIL FROM:<agent@agent.test>") << Describe(res);
  EXPECT_EQ(Get(r, "reply_3"), "221 bye") << Describe(res);
  EXPECT_EQ(Get(r, "end"), "EOF") << Describe(res);
  EXPECT_EQ(smtp.lines(),
            (std::vector<std::string>{"EHLO agent.test", "MAIL FROM:<agent@agent.test>", "QUIT"}));
}

TEST_F(RunRouteKindsTest, RealSshClientGetsThroughATcpRouteToSshd) {
  if (access("/usr/sbin/sshd", X_OK) != 0)
    GTEST_SKIP() << "no /usr/sbin/sshd (openssh-server, which scripts/install-deps.sh installs)";
  std::string missing = MissingPrerequisite({"ssh", "ssh-keygen", "ssh-keyscan"});
  if (!missing.empty()) GTEST_SKIP() << missing;
  TempDir keys;
  ASSERT_EQ(
      RunCommand({"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", keys.Sub("host")}).exit_code,
      0);
  // A root sshd wants its privilege separation directory, which its service unit makes.
  if (IsRoot()) mkdir("/run/sshd", 0755);
  int port = FreePort();
  Process sshd = Process::Start(
      {"sh", "-c",
       "exec /usr/sbin/sshd -D -e -f /dev/null -o ListenAddress=127.0.0.1:" + std::to_string(port) +
           " -o HostKey=" + keys.Sub("host") + " -o PidFile=none -o UsePAM=no 2>&1"});
  ASSERT_TRUE(sshd.WaitForOutput("Server listening", std::chrono::seconds(10))) << sshd.out();
  // ssh-keyscan completes the key exchange; ssh gets as far as the server refusing it.
  std::string script =
      "ssh-keyscan -T 5 -p 22 git.example.test 2>/dev/null | sed 's/^/keyscan: /'\n"
      "ssh -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null "
      "-o ConnectTimeout=5 -p 22 git@git.example.test true 2>&1 | grep -c 'Permission denied' "
      "| sed 's/^/denied: /'\n";
  RunResult res = RunAteam(Options({"git.example.test:22=127.0.0.1:" + std::to_string(port)}),
                           {"/bin/sh", "-c", script});
  ASSERT_EQ(res.exit_code, 0) << Describe(res);
  Report r = ParseReport(res.out);
  std::string public_key = ReadFile(keys.Sub("host.pub")).value_or("");
  std::string key = public_key.substr(0, public_key.rfind(' '));  // "ssh-ed25519 AAAA..."
  EXPECT_EQ(Get(r, "keyscan"), "git.example.test " + key) << Describe(res);
  EXPECT_EQ(Get(r, "denied"), "1") << Describe(res);
}

TEST_F(RunRouteKindsTest, DownUpstreamOnAnEagerRouteResetsTheAgentAtOnce) {
  ClosedPort closed;
  RunResult res = RunAteam(Options({"down.test:22=127.0.0.1:" + std::to_string(closed.port())}),
                           {NetClientPath(), "converse", "down.test", "22"});
  ASSERT_EQ(res.exit_code, 0) << Describe(res);
  Report r = ParseReport(res.out);
  // Reset by the relay as soon as its dial failed, not left to the client's 5 s timeout:
  // the reset can even beat the client's own check of its connect.
  if (Get(r, "connect") != "ECONNRESET") {
    EXPECT_EQ(Get(r, "greeting"), "<none>") << Describe(res);
    std::string end = Get(r, "end");
    EXPECT_TRUE(end == "ECONNRESET" || end == "EOF") << Describe(res);
  }
  std::vector<std::string> lines = LedgerLines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(Contains(lines[0], "\"end\":\"upstream-refused\",\"error\":")) << lines[0];
}

TEST_F(RunRouteKindsTest, TlsRouteRefusesOtherNamesAndOtherProtocolsWithoutADial) {
  std::string missing = MissingPrerequisite({"openssl"});
  if (!missing.empty()) GTEST_SKIP() << missing;
  EchoServer upstream;
  std::string s_client = "echo | openssl s_client -connect api.example.test:443 ";
  std::string script = s_client + "-servername other.test >/dev/null 2>&1; echo other: $?\n" +
                       s_client + "-noservername >/dev/null 2>&1; echo none: $?\n" +
                       NetClientPath() + " request api.example.test 443 | sed s/^/plain_/\n" +
                       NetClientPath() + " connect api.example.test 443 | sed s/^/probe_/\n";
  RunResult res =
      RunAteam(Options({std::string(kTlsHost) + "=127.0.0.1:" + std::to_string(upstream.port())}),
               {"/bin/sh", "-c", script});
  ASSERT_EQ(res.exit_code, 0) << Describe(res);
  Report r = ParseReport(res.out);
  EXPECT_NE(Get(r, "other"), "0") << Describe(res);
  EXPECT_NE(Get(r, "none"), "0") << Describe(res);
  EXPECT_EQ(Get(r, "plain_received"), "0") << Describe(res);
  EXPECT_EQ(Get(r, "probe_connect"), "OK") << Describe(res);
  EXPECT_EQ(upstream.accepted(), 0) << "a refused connection was dialled";
  // One line per refusal, in order; the connect-and-close is neither dialled nor recorded.
  std::vector<std::string> lines = LedgerLines();
  ASSERT_EQ(lines.size(), 3u) << ReadFile(ledger_).value_or("");
  EXPECT_TRUE(Contains(lines[0], "\"end\":\"sni-mismatch\",\"sni\":\"other.test\"")) << lines[0];
  EXPECT_TRUE(Contains(lines[1], "\"end\":\"no-sni\"")) << lines[1];
  EXPECT_TRUE(Contains(lines[2], "\"end\":\"not-tls\"")) << lines[2];
  for (const std::string& line : lines) {
    EXPECT_TRUE(Contains(line, "\"bytes_up\":0,\"bytes_down\":0")) << line;
  }
}

TEST_F(RunRouteKindsTest, TlsRouteForwardsAHelloSentOneByteAtATimeUnchanged) {
  EchoServer upstream;
  // Names api.example.test; the echo server sends back exactly what the relay forwarded.
  std::string hello_hex = relay::testing::tls::kOpensslHelloHex;
  RunResult res =
      RunAteam(Options({std::string(kTlsHost) + "=127.0.0.1:" + std::to_string(upstream.port())}),
               {NetClientPath(), "trickle", kTlsHost, "443", hello_hex});
  ASSERT_EQ(res.exit_code, 0) << Describe(res);
  Report r = ParseReport(res.out);
  EXPECT_EQ(Get(r, "sent"), std::to_string(hello_hex.size() / 2)) << Describe(res);
  EXPECT_EQ(Get(r, "same"), "yes") << Describe(res);
  EXPECT_EQ(Get(r, "end"), "EOF") << Describe(res);
  EXPECT_EQ(upstream.accepted(), 1);
}

TEST_F(RunRouteKindsTest, TlsRouteWithTheRightNameReachesARealTlsServer) {
  std::string missing = MissingPrerequisite({"openssl"});
  if (!missing.empty()) GTEST_SKIP() << missing;
  TempDir tls;
  ASSERT_TRUE(MakeTestCertificates(tls.path()));
  int port = FreePort();
  Process server =
      Process::Start({"openssl", "s_server", "-accept", "127.0.0.1:" + std::to_string(port),
                      "-cert", tls.Sub("srv.pem"), "-key", tls.Sub("srv.key"), "-www"});
  ASSERT_TRUE(server.WaitForOutput("ACCEPT", std::chrono::seconds(10)));
  std::string script =
      "printf 'GET / HTTP/1.0\\r\\n\\r\\n' | openssl s_client -quiet -verify_return_error "
      "-connect api.example.test:443 -servername api.example.test -CAfile " +
      tls.Sub("ca.pem") + " 2>/dev/null | grep -c s_server";
  Args options = Options({std::string(kTlsHost) + "=127.0.0.1:" + std::to_string(port)});
  options.insert(options.end(), {"--ro", tls.path()});
  RunResult res = RunAteam(options, {"/bin/sh", "-c", script});
  EXPECT_EQ(res.exit_code, 0) << Describe(res);
  std::vector<std::string> lines = LedgerLines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(Contains(lines[0], "\"end\":\"closed\"")) << lines[0];
}

TEST_F(RunRouteKindsTest, DryRunAndStatusShowEachRoutesKind) {
  std::vector<std::string> allows = {
      "api.example.test=127.0.0.1:9", "git.example.test:22=127.0.0.1:9",
      "alt.example.test:8443=127.0.0.1:9,tls", "raw.example.test=127.0.0.1:9,tcp"};
  Args dry = Options(allows);
  dry.push_back("--dry-run");
  RunResult plan = RunAteam(dry, {"true"});
  ASSERT_EQ(plan.exit_code, 0) << Describe(plan);
  for (const char* line : {"route: api.example.test:443 tls at 127.77.0.2",
                           "route: git.example.test:22 tcp at 127.77.0.3",
                           "route: alt.example.test:8443 tls at 127.77.0.4",
                           "route: raw.example.test:443 tcp at 127.77.0.5"}) {
    EXPECT_TRUE(Contains(plan.out, line)) << line << "\n" << plan.out;
  }
  std::string status = state_.Sub("status.json");
  Args run = Options(allows);
  run.insert(run.end(), {"--status-json", status});
  RunResult res = RunAteam(run, {"true"});
  ASSERT_EQ(res.exit_code, 0) << Describe(res);
  std::string json = ReadFile(status).value_or("");
  for (const char* route : {R"("host": "api.example.test", "port": 443, "kind": "tls")",
                            R"("host": "git.example.test", "port": 22, "kind": "tcp")",
                            R"("host": "alt.example.test", "port": 8443, "kind": "tls")",
                            R"("host": "raw.example.test", "port": 443, "kind": "tcp")"}) {
    EXPECT_TRUE(Contains(json, route)) << route << "\n" << json;
  }
}

}  // namespace
}  // namespace sbx::integration::run
