// End-to-end tests of the supervisor: each run is pid 1 of fresh user + mount + pid
// namespaces (sandbox_harness.h), relaying to an echo server in the test's own namespaces.
#include <arpa/inet.h>
#include <linux/capability.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "base/unique_fd.h"
#include "security/landlock.h"
#include "supervise/supervise_command.h"
#include "tests/supervise/sandbox_harness.h"

namespace sbx::supervise {
namespace {

using testing::EchoServer;
using ::testing::HasSubstr;
using testing::RunSupervisorInSandbox;
using testing::SandboxRun;

constexpr char kRouteAddress[] = "127.77.0.2:443";

// The tunnel client binary: the build's, or $SBX_TUNNEL_CLIENT where the tests run from a
// staged copy (scripts/unit-as-user.sh, for an unprivileged caller).
std::string TunnelClient() {
  const char* staged = std::getenv("SBX_TUNNEL_CLIENT");
  return staged != nullptr && *staged != '\0' ? staged : SBX_TUNNEL_CLIENT;
}

class SupervisorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir_template[] = "/tmp/sbx-supervise-XXXXXX";
    ASSERT_NE(::mkdtemp(dir_template), nullptr);
    dir_ = dir_template;
    socket_path_ = dir_ + "/route-0.sock";
  }
  void TearDown() override {
    echo_.reset();
    ::unlink(socket_path_.c_str());
    ::rmdir(dir_.c_str());
  }

  void StartEcho() {
    echo_ = std::make_unique<EchoServer>(socket_path_);
    ASSERT_EQ(echo_->error(), "");
  }

  std::vector<std::string> RouteArgs() const {
    return {"--route", std::string(kRouteAddress) + "=" + socket_path_, "--probe-timeout-ms",
            "2000", "--"};
  }

  static std::vector<std::string> Concat(std::vector<std::string> a,
                                         const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  }

  std::string dir_;
  std::string socket_path_;
  std::unique_ptr<EchoServer> echo_;
};

// A listener on the host's 127.0.0.1, which the agent must not reach.
base::UniqueFd HostListener(uint16_t* port) {
  base::UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (!fd || ::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
      ::listen(fd.get(), 8) != 0 ||
      ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return {};
  }
  *port = ntohs(addr.sin_port);
  return fd;
}

TEST_F(SupervisorTest, RelaysTheRouteAndExitsWithTheAgentsCode) {
  StartEcho();
  uint16_t host_port = 0;
  base::UniqueFd host = HostListener(&host_port);
  ASSERT_TRUE(host);
  SandboxRun run = RunSupervisorInSandbox(
      Concat(RouteArgs(),
             {TunnelClient(), kRouteAddress, std::to_string(host_port), "127.77.0.3:443", "42"}));
  if (run.kind == SandboxRun::Kind::kSkipped) GTEST_SKIP() << run.message;
  ASSERT_EQ(run.kind, SandboxRun::Kind::kRan) << run.message;
  EXPECT_EQ(run.exit_code, 42) << run.stderr_text;
  EXPECT_EQ(run.stderr_text, "");
}

TEST_F(SupervisorTest, AgentKilledBySignalGives128PlusSignal) {
  StartEcho();
  SandboxRun run = RunSupervisorInSandbox(Concat(RouteArgs(), {"/bin/sh", "-c", "kill -9 $$"}));
  if (run.kind == SandboxRun::Kind::kSkipped) GTEST_SKIP() << run.message;
  ASSERT_EQ(run.kind, SandboxRun::Kind::kRan) << run.message;
  EXPECT_EQ(run.exit_code, 128 + 9) << run.stderr_text;
}

TEST_F(SupervisorTest, FailedProbeIsFatalAndNamesTheRoute) {
  // No echo server: nothing listens on the route's socket.
  SandboxRun run =
      RunSupervisorInSandbox(Concat(RouteArgs(), {"/bin/sh", "-c", "echo agent-ran >&2; exit 0"}));
  if (run.kind == SandboxRun::Kind::kSkipped) GTEST_SKIP() << run.message;
  ASSERT_EQ(run.kind, SandboxRun::Kind::kRan) << run.message;
  EXPECT_EQ(run.exit_code, kSuperviseSetupFailedExit);
  EXPECT_THAT(run.stderr_text, HasSubstr("ateam-sandbox supervise: route " +
                                         std::string(kRouteAddress) + "=" + socket_path_));
  EXPECT_THAT(run.stderr_text, HasSubstr("No such file or directory"));
  EXPECT_THAT(run.stderr_text, ::testing::Not(HasSubstr("agent-ran")));
  EXPECT_EQ(run.stderr_text.find('\n'), run.stderr_text.size() - 1) << "one line";
}

TEST_F(SupervisorTest, LandlockRestrictsTheAgentButNotTheSupervisor) {
  if (security::LandlockAbi() < 6) GTEST_SKIP() << "Landlock ABI 6 needed";
  StartEcho();
  const std::string allowed = dir_ + "/allowed";
  ASSERT_EQ(::mkdir(allowed.c_str(), 0700), 0);
  // Writes beneath --landlock-write only; pid 1 (the supervisor) is out of signal reach;
  // the supervisor still reaps the agent and passes its code on.
  const std::string script = "echo x > " + allowed + "/f || exit 11; " + "(echo x > " + dir_ +
                             "/denied) 2>/dev/null && exit 12; " +
                             "kill -0 1 2>/dev/null && exit 13; exit 7";
  SandboxRun run =
      RunSupervisorInSandbox(Concat({"--landlock", "fs,net,scope", "--landlock-write", allowed},
                                    Concat(RouteArgs(), {"/bin/sh", "-c", script})));
  ::unlink((allowed + "/f").c_str());
  ::unlink((dir_ + "/denied").c_str());
  ::rmdir(allowed.c_str());
  if (run.kind == SandboxRun::Kind::kSkipped) GTEST_SKIP() << run.message;
  ASSERT_EQ(run.kind, SandboxRun::Kind::kRan) << run.message;
  EXPECT_EQ(run.exit_code, 7) << run.stderr_text;
}

TEST_F(SupervisorTest, CommandThatCannotRunExits127) {
  SandboxRun run = RunSupervisorInSandbox({"--", "/nonexistent/agent", "x"});
  if (run.kind == SandboxRun::Kind::kSkipped) GTEST_SKIP() << run.message;
  ASSERT_EQ(run.kind, SandboxRun::Kind::kRan) << run.message;
  EXPECT_EQ(run.exit_code, 127);
  EXPECT_EQ(run.stderr_text,
            "ateam-sandbox supervise: cannot run /nonexistent/agent: No such file or directory\n");
}

TEST_F(SupervisorTest, AgentRunsWithoutCapabilitiesInAFreshNetns) {
  // CapEff/CapPrm/CapBnd/CapAmb all zero, NoNewPrivs 1, and only lo (and its addresses).
  const char* script =
      "grep -q '^CapPrm:[[:space:]]*0*$' /proc/self/status || exit 11; "
      "grep -q '^CapEff:[[:space:]]*0*$' /proc/self/status || exit 12; "
      "grep -q '^CapBnd:[[:space:]]*0*$' /proc/self/status || exit 13; "
      "grep -q '^CapAmb:[[:space:]]*0*$' /proc/self/status || exit 14; "
      "grep -q '^NoNewPrivs:[[:space:]]*1$' /proc/self/status || exit 15; "
      "[ \"$(grep -c : /proc/net/dev)\" = 1 ] || exit 16; "
      "grep -q '^ *lo:' /proc/net/dev || exit 17; "
      "exit 0";
  SandboxRun run = RunSupervisorInSandbox({"--", "/bin/sh", "-c", script});
  if (run.kind == SandboxRun::Kind::kSkipped) GTEST_SKIP() << run.message;
  ASSERT_EQ(run.kind, SandboxRun::Kind::kRan) << run.message;
  EXPECT_EQ(run.exit_code, 0) << run.stderr_text;
}

TEST_F(SupervisorTest, ReapsOrphans) {
  // The inner shell prints the pid of its background `true` and exits, so `true` is
  // re-parented to pid 1. A zombie keeps its /proc entry, so the entry going away means pid 1
  // reaped it; the loop's bound is only a watchdog against a hang (exit 1).
  const char* script =
      "orphan=$(sh -c '/bin/true </dev/null >/dev/null 2>&1 & echo $!'); "
      "[ -n \"$orphan\" ] && [ -e /proc/$$ ] || exit 2; "
      "i=0; while [ -e /proc/$orphan ]; do "
      "i=$((i + 1)); [ $i -lt 6000 ] || exit 1; sleep 0.01; done; exit 5";
  SandboxRun run = RunSupervisorInSandbox({"--", "/bin/sh", "-c", script});
  if (run.kind == SandboxRun::Kind::kSkipped) GTEST_SKIP() << run.message;
  ASSERT_EQ(run.kind, SandboxRun::Kind::kRan) << run.message;
  EXPECT_EQ(run.exit_code, 5) << run.stderr_text;
}

TEST_F(SupervisorTest, ForwardsSigtermToTheAgent) {
  const char* script = "trap 'exit 7' TERM; kill -TERM 1; while :; do sleep 0.05; done";
  SandboxRun run = RunSupervisorInSandbox({"--", "/bin/sh", "-c", script});
  if (run.kind == SandboxRun::Kind::kSkipped) GTEST_SKIP() << run.message;
  ASSERT_EQ(run.kind, SandboxRun::Kind::kRan) << run.message;
  EXPECT_EQ(run.exit_code, 7) << run.stderr_text;
}

TEST_F(SupervisorTest, SecondSignalEndsTheSupervisorAtOnce) {
  // The agent notes the forwarded SIGINT (so the supervisor has counted the first signal),
  // then sends the second and ignores it itself: only the supervisor's own exit can end the
  // run with 128 + SIGTERM; without it the agent would finish and exit 0. The first loop's
  // bound is only a watchdog (exit 1).
  const char* script =
      "got=; trap 'got=1' INT; trap '' TERM; kill -INT 1; "
      "i=0; while [ -z \"$got\" ]; do i=$((i + 1)); [ $i -lt 6000 ] || exit 1; sleep 0.01; done; "
      "kill -TERM 1; sleep 20; exit 0";
  SandboxRun run = RunSupervisorInSandbox({"--", "/bin/sh", "-c", script});
  if (run.kind == SandboxRun::Kind::kSkipped) GTEST_SKIP() << run.message;
  ASSERT_EQ(run.kind, SandboxRun::Kind::kRan) << run.message;
  EXPECT_EQ(run.exit_code, 128 + 15) << run.stderr_text;
}

// The capabilities the runtime starts the supervisor with: CAP_SYS_ADMIN and CAP_NET_ADMIN.
constexpr uint64_t kRuntimeCaps = (uint64_t{1} << CAP_SYS_ADMIN) | (uint64_t{1} << CAP_NET_ADMIN);

TEST_F(SupervisorTest, RuntimeCapsAreEnoughForAnUnprivilegedPort) {
  StartEcho();
  uint16_t host_port = 0;
  base::UniqueFd host = HostListener(&host_port);
  ASSERT_TRUE(host);
  testing::SandboxOptions options;
  options.keep_caps = kRuntimeCaps;
  SandboxRun run =
      RunSupervisorInSandbox({"--route", "127.77.0.2:8443=" + socket_path_, "--", TunnelClient(),
                              "127.77.0.2:8443", std::to_string(host_port), "127.77.0.3:8443", "0"},
                             options);
  if (run.kind == SandboxRun::Kind::kSkipped) GTEST_SKIP() << run.message;
  ASSERT_EQ(run.kind, SandboxRun::Kind::kRan) << run.message;
  EXPECT_EQ(run.exit_code, 0) << run.stderr_text;
}

TEST_F(SupervisorTest, PortBelow1024NeedsNetBindService) {
  StartEcho();
  testing::SandboxOptions options;
  options.keep_caps = kRuntimeCaps;
  SandboxRun run = RunSupervisorInSandbox(Concat(RouteArgs(), {"/bin/true"}), options);
  if (run.kind == SandboxRun::Kind::kSkipped) GTEST_SKIP() << run.message;
  ASSERT_EQ(run.kind, SandboxRun::Kind::kRan) << run.message;
  EXPECT_EQ(run.exit_code, kSuperviseSetupFailedExit);
  EXPECT_THAT(run.stderr_text, HasSubstr("Can't bind 127.77.0.2:443: Permission denied"));

  options.keep_caps = kRuntimeCaps | (uint64_t{1} << CAP_NET_BIND_SERVICE);
  run = RunSupervisorInSandbox(Concat(RouteArgs(), {"/bin/true"}), options);
  ASSERT_EQ(run.kind, SandboxRun::Kind::kRan) << run.message;
  EXPECT_EQ(run.exit_code, 0) << run.stderr_text;
}

TEST(SuperviseCommandTest, BadInputIsOneLineAndExit125) {
  const std::vector<std::vector<std::string>> cases = {
      {},
      {"--route", "10.0.0.1:443=/x.sock", "--", "true"},
      {"--route", "127.77.0.2:443", "--", "true"},
  };
  for (const auto& args : cases) {
    ::testing::internal::CaptureStderr();
    const int code = RunSuperviseCommand(args);
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(code, kSuperviseSetupFailedExit);
    EXPECT_THAT(err, ::testing::StartsWith("ateam-sandbox supervise: "));
    EXPECT_EQ(err.find('\n'), err.size() - 1) << err;
  }
}

}  // namespace
}  // namespace sbx::supervise
