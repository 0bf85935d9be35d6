// The tunnel: allowed routes reach their pinned upstream, everything else fails fast.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <unistd.h>

#include <chrono>

#include "integration/run/run_support.h"

namespace sbx::integration::run {
namespace {

constexpr char kHost[] = "api.example.test";

class RunTunnelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string missing = MissingPrerequisite({"sh"});
    if (!missing.empty()) GTEST_SKIP() << missing;
  }
  // The route on port 443: a tls route, unless `kind` names another.
  std::string Allow(int port, const std::string& kind = "") {
    return std::string(kHost) + "=127.0.0.1:" + std::to_string(port) +
           (kind.empty() ? "" : "," + kind);
  }
  TempDir work_, out_, state_;
};

TEST_F(RunTunnelTest, CurlOverTlsReachesTheAllowedHostAndIsLedgered) {
  std::string missing = MissingPrerequisite({"openssl", "curl"});
  if (!missing.empty()) GTEST_SKIP() << missing;
  TempDir tls;
  ASSERT_TRUE(MakeTestCertificates(tls.path()));
  int port = FreePort();
  Process server =
      Process::Start({"openssl", "s_server", "-accept", "127.0.0.1:" + std::to_string(port),
                      "-cert", tls.Sub("srv.pem"), "-key", tls.Sub("srv.key"), "-www"});
  ASSERT_TRUE(server.WaitForOutput("ACCEPT", std::chrono::seconds(10)));
  std::string ledger = state_.Sub("ledger.jsonl");
  RunResult res = RunAteam({"--workspace", work_.path(), "--out", out_.path(), "--allow",
                            Allow(port), "--ro", tls.path(), "--ledger", ledger},
                           {"curl", "-sS", "--max-time", "10", "--cacert", tls.Sub("ca.pem"),
                            "https://api.example.test/"});
  EXPECT_EQ(res.exit_code, 0) << Describe(res);
  EXPECT_NE(res.out.find("s_server"), std::string::npos) << Describe(res);
  std::string lines = ReadFile(ledger).value_or("");
  EXPECT_EQ(std::count(lines.begin(), lines.end(), '\n'), 1) << lines;
  EXPECT_NE(lines.find("\"host\":\"api.example.test\""), std::string::npos) << lines;
}

TEST_F(RunTunnelTest, UpstreamSeesSniOfTheAllowedHost) {
  std::string missing = MissingPrerequisite({"curl"});
  if (!missing.empty()) GTEST_SKIP() << missing;
  TcpListener listener;  // never answers: curl gives up after its ClientHello
  RunResult res = RunAteam(
      {"--workspace", work_.path(), "--out", out_.path(), "--allow", Allow(listener.port())},
      {"curl", "-sS", "--max-time", "2", "https://api.example.test/"});
  EXPECT_NE(res.exit_code, 0) << Describe(res);
  std::string hello = listener.AcceptAndRead().value_or("");
  EXPECT_NE(hello.find(kHost), std::string::npos)
      << "ClientHello of " << hello.size() << " bytes lacks the SNI";
}

std::string NonLoopbackAddress() {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return "";
  std::string found;
  for (ifaddrs* i = list; i != nullptr && found.empty(); i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    auto* in = reinterpret_cast<sockaddr_in*>(i->ifa_addr);
    char buf[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &in->sin_addr, buf, sizeof buf);
    if (std::string(buf).rfind("127.", 0) != 0) found = buf;
  }
  freeifaddrs(list);
  return found;
}

TEST_F(RunTunnelTest, EverythingButTheRouteFailsFast) {
  TcpListener host_listener;
  UdpReceiver udp;
  std::string hp = std::to_string(host_listener.port());
  std::string own = NonLoopbackAddress();
  std::string nc = NetClientPath();
  std::vector<std::pair<std::string, std::string>> cases = {
      {"host_loopback", nc + " connect 127.0.0.1 " + hp},
      {"other_tunnel_addr", nc + " connect 127.77.0.3 443"},
      {"other_port", nc + " connect api.example.test 444"},
      {"ipv6", nc + " connect ::1 " + hp},
      {"dns", nc + " connect evil.example.com 443"},
      {"resolve", nc + " resolve evil.example.com"},
  };
  if (!own.empty()) cases.push_back({"own_address", nc + " connect " + own + " " + hp});
  std::string script;
  for (const auto& [name, cmd] : cases) {
    script += "echo \"" + name + ": $(" + cmd + " | tr '\\n' ' ')\"\n";
  }
  script += ProbeHostPath() + " udp 127.0.0.1 " + std::to_string(udp.port()) + "\n";
  RunResult res = RunAteam(
      {"--workspace", work_.path(), "--out", out_.path(), "--allow", Allow(host_listener.port())},
      {"/bin/sh", "-c", script});
  ASSERT_EQ(res.exit_code, 0) << Describe(res);
  Report r = ParseReport(res.out);
  for (const auto& [name, cmd] : cases) {
    std::string line = Get(r, name);
    EXPECT_EQ(line.find("OK"), std::string::npos) << name << ": " << line;
    // Fails fast: refused or unresolvable at once, never a connect that hangs until the
    // client's own 5 s cap (ETIMEDOUT).
    EXPECT_EQ(line.find("ETIMEDOUT"), std::string::npos) << name << ": " << line;
    EXPECT_TRUE(line.find(": E") != std::string::npos || line.find("gai:") != std::string::npos ||
                line.find("resolve: ") != std::string::npos)
        << name << ": " << line;
  }
  // The sandbox is gone: anything it got out is queued before the marker sent now.
  std::vector<std::string> leaked = udp.ReceiveUntilMarker("sbx-marker");
  EXPECT_TRUE(leaked.empty()) << "a UDP datagram left the sandbox: " << leaked.front();
  EXPECT_FALSE(host_listener.AcceptAndRead().has_value()) << "a connection reached the host";
}

TEST_F(RunTunnelTest, UpstreamDownFailsCleanlyAndKeepsTheExitCode) {
  std::string ledger = state_.Sub("ledger.jsonl");
  ClosedPort closed;
  RunResult res =
      RunAteam({"--workspace", work_.path(), "--out", out_.path(), "--allow",
                Allow(closed.port(), "tcp"), "--ledger", ledger},
               {"/bin/sh", "-c", NetClientPath() + " request api.example.test 443; exit 7"});
  EXPECT_EQ(res.exit_code, 7) << Describe(res);
  Report r = ParseReport(res.out);
  EXPECT_EQ(Get(r, "received"), "0") << Describe(res);
  // Reset or closed at once: never the client's 5 s receive timeout (EAGAIN).
  EXPECT_TRUE(Get(r, "request") == "EOF" || Get(r, "request") == "ECONNRESET") << Describe(res);
  std::string lines = ReadFile(ledger).value_or("");
  EXPECT_NE(lines.find("\"host\":\"api.example.test\""), std::string::npos) << lines;
  EXPECT_NE(lines.find("\"error\""), std::string::npos) << lines;
}

TEST_F(RunTunnelTest, TwoHundredConcurrentConnections) {
  EchoServer echo;
  RunResult res = RunAteam(
      {"--workspace", work_.path(), "--out", out_.path(), "--allow", Allow(echo.port(), "tcp")},
      {NetClientPath(), "concurrent", kHost, "443", "200"}, WithTimeout(std::chrono::seconds(120)));
  ASSERT_EQ(res.exit_code, 0) << Describe(res);
  Report r = ParseReport(res.out);
  EXPECT_EQ(Get(r, "opened"), "200") << Describe(res);
  EXPECT_EQ(Get(r, "echoed"), "200") << Describe(res);
  EXPECT_EQ(echo.accepted(), 200);
}

TEST_F(RunTunnelTest, LargeTransferKeepsEveryByte) {
  EchoServer echo;
  RunResult res = RunAteam(
      {"--workspace", work_.path(), "--out", out_.path(), "--allow", Allow(echo.port(), "tcp")},
      {NetClientPath(), "bulk", kHost, "443", "1024"}, WithTimeout(std::chrono::seconds(180)));
  ASSERT_EQ(res.exit_code, 0) << Describe(res);
  Report r = ParseReport(res.out);
  EXPECT_EQ(Get(r, "bulk"), "OK") << Describe(res);
  EXPECT_EQ(Get(r, "sent"), std::to_string(1024LL << 20));
  EXPECT_EQ(Get(r, "received"), std::to_string(1024LL << 20));
  EXPECT_EQ(Get(r, "sent_fnv"), Get(r, "received_fnv"));
  EXPECT_EQ(echo.LargestHash(), Get(r, "sent_fnv"));
}

}  // namespace
}  // namespace sbx::integration::run
