// The kernel surface the agent gets in `run`: the seccomp allowlists (socket families,
// netlink protocols, personality) and the Landlock layer, each rule shown holding by itself
// (the same operation works once that one rule is relaxed).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstddef>
#include <cstring>

#include "integration/run/run_support.h"

namespace sbx::integration::run {
namespace {

using std::chrono::milliseconds;

int LandlockAbi() {
  const long abi = syscall(SYS_landlock_create_ruleset, nullptr, 0, 1U);
  return abi > 0 ? static_cast<int>(abi) : 0;
}

class RunKernelSurfaceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string missing = MissingPrerequisite({"sh"});
    if (!missing.empty()) GTEST_SKIP() << missing;
    HandToSandboxUser(work_.path());
  }

  // Runs `probe ARGS` once per line of `cases` ({key, probe arguments}) and parses the
  // `key: result` lines.
  Report Probe(const Args& options, const std::vector<std::pair<std::string, std::string>>& cases,
               RunResult* res_out = nullptr) {
    std::string script;
    for (const auto& [key, args] : cases) {
      script += "echo \"" + key + ": $(" + ProbeHostPath() + " " + args + " | cut -d' ' -f2)\"\n";
    }
    Args all = {"--workspace", work_.path(), "--out", out_.path()};
    all.insert(all.end(), options.begin(), options.end());
    RunResult res = RunAteam(all, {"/bin/sh", "-c", script});
    EXPECT_EQ(res.exit_code, 0) << Describe(res);
    if (res_out != nullptr) *res_out = res;
    return ParseReport(res.out);
  }

  TempDir work_, out_;
};

TEST_F(RunKernelSurfaceTest, SocketFamiliesOutsideTheAllowlistFail) {
  RunResult res;
  Report r = Probe({},
                   {{"unix", "try-syscall socket-unix"},
                    {"inet", "try-syscall socket-inet"},
                    {"inet6", "try-syscall socket-inet6"},
                    {"route", "try-syscall socket-netlink-route"},
                    {"pair", "try-syscall socketpair-unix"},
                    {"packet", "try-syscall socket-packet"},
                    {"key", "try-syscall socket-key"},
                    {"alg", "try-syscall socket-alg"},
                    {"bluetooth", "try-syscall socket-bluetooth"},
                    {"vsock", "try-syscall socket-vsock"},
                    {"pair_packet", "try-syscall socketpair-packet"},
                    {"audit", "try-syscall socket-netlink-audit"},
                    {"uevent", "try-syscall socket-netlink-uevent"}},
                   &res);
  for (const char* key : {"unix", "inet", "inet6", "route", "pair"}) {
    EXPECT_EQ(Get(r, key), "OK") << key << "\n" << Describe(res);
  }
  for (const char* key : {"packet", "key", "alg", "bluetooth", "vsock", "pair_packet"}) {
    EXPECT_EQ(Get(r, key), "EAFNOSUPPORT") << key;
  }
  EXPECT_EQ(Get(r, "audit"), "EPROTONOSUPPORT");
  EXPECT_EQ(Get(r, "uevent"), "EPROTONOSUPPORT");
}

TEST_F(RunKernelSurfaceTest, IpAddrStillWorks) {
  std::string ip = access("/usr/sbin/ip", X_OK) == 0  ? "/usr/sbin/ip"
                   : access("/usr/bin/ip", X_OK) == 0 ? "/usr/bin/ip"
                                                      : "";
  if (ip.empty()) GTEST_SKIP() << "no ip(8) under /usr on this host";
  RunResult res = RunAteam({"--workspace", work_.path(), "--out", out_.path()},
                           {ip, "addr", "show", "dev", "lo"});
  ASSERT_EQ(res.exit_code, 0) << Describe(res);
  EXPECT_NE(res.out.find("inet 127.0.0.1/8"), std::string::npos) << Describe(res);
}

TEST_F(RunKernelSurfaceTest, PersonalityAndSyslogAreRefused) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"query", "try-syscall personality-query"},
      {"linux", "try-syscall personality-linux"},
      {"no_randomize", "try-syscall personality-no-randomize"},
      {"read_implies_exec", "try-syscall personality-read-implies-exec"},
      {"syslog", "try-syscall syslog-size"}};
  Report r = Probe({}, cases);
  EXPECT_EQ(Get(r, "query"), "OK");
  EXPECT_EQ(Get(r, "linux"), "OK");
  EXPECT_EQ(Get(r, "no_randomize"), "OK");
  EXPECT_EQ(Get(r, "read_implies_exec"), "EPERM");
  EXPECT_EQ(Get(r, "syslog"), "EPERM");
  // Relaxed, the kernel answers: personality works (syslog then depends on
  // kernel.dmesg_restrict, so it is not checked).
  Report relaxed = Probe({"--seccomp-allow", "personality", "--seccomp-allow", "syslog"}, cases);
  EXPECT_EQ(Get(relaxed, "read_implies_exec"), "OK");
}

TEST_F(RunKernelSurfaceTest, RelaxedSocketGroupsLetTheKernelAnswer) {
  Report r = Probe({"--seccomp-allow", "socket-families", "--seccomp-allow", "netlink"},
                   {{"packet", "try-syscall socket-packet"},
                    {"audit", "try-syscall socket-netlink-audit"},
                    {"vsock", "try-syscall socket-vsock"}});
  // AF_PACKET now reaches the kernel, which wants CAP_NET_RAW the agent does not have.
  EXPECT_EQ(Get(r, "packet"), "EPERM");
  EXPECT_EQ(Get(r, "audit"), "OK");
  EXPECT_EQ(Get(r, "vsock"), "EAFNOSUPPORT");  // its own group, still in force
}

// ---- Landlock -----------------------------------------------------------------------------

TEST_F(RunKernelSurfaceTest, LandlockRefusesWritesTheMountsAllow) {
  if (LandlockAbi() < 2) GTEST_SKIP() << "Landlock ABI " << LandlockAbi() << ", need 2";
  TempDir rw;
  // A --rw place is bound as it is (never lent): writable by any uid, the leased one too.
  ASSERT_EQ(chmod(rw.path().c_str(), 0777), 0);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"ws", "try-write " + work_.Sub("in-ws")},
      {"out", "try-write " + out_.Sub("in-out")},
      {"home", "try-write /home/ateam-sandbox/h"},
      {"tmp", "try-write /tmp/t"},
      {"shm", "try-write /dev/shm/s"},
      {"rw", "try-write " + rw.Sub("r")},
      {"null", "try-write /dev/null"},
      // Tmpfs the runtime mounts and the sandbox user owns: the mounts allow these.
      {"tunnel_dir", "try-write /run/ateam-tunnel/x"},
      {"root", "try-write /x"},
      {"dev", "try-write /dev/x"},
      {"proc", "try-write /proc/self/comm"}};
  Args options = {"--rw", rw.path()};
  Report r = Probe(options, cases);
  for (const char* key : {"ws", "out", "home", "tmp", "shm", "rw", "null"}) {
    EXPECT_EQ(Get(r, key), "OK") << key;
  }
  for (const char* key : {"tunnel_dir", "root", "dev", "proc"}) {
    EXPECT_EQ(Get(r, key), "EACCES") << key;
  }
  options.insert(options.end(), {"--landlock-allow", "fs"});
  Report relaxed = Probe(options, cases);
  for (const char* key : {"tunnel_dir", "root", "dev", "proc"}) {
    EXPECT_EQ(Get(relaxed, key), "OK") << key << ": the mounts alone do not refuse it";
  }
}

TEST_F(RunKernelSurfaceTest, LandlockAllowsTcpOnlyToTheRoutePorts) {
  if (LandlockAbi() < 4) GTEST_SKIP() << "Landlock ABI " << LandlockAbi() << ", need 4";
  EchoServer echo;
  const int route_port = 4443;
  const ClosedPort closed;
  const int other = closed.port();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"route", "connect 127.77.0.2 " + std::to_string(route_port)},
      // Landlock rules are per port: another address at the route's port passes Landlock
      // and finds nothing listening.
      {"route_port_elsewhere", "connect 127.0.0.1 " + std::to_string(route_port)},
      {"other_port", "connect 127.0.0.1 " + std::to_string(other)},
      {"bind", "try-bind 127.0.0.1 0"}};
  Args options = {"--allow", "echo.test:" + std::to_string(route_port) +
                                 "=127.0.0.1:" + std::to_string(echo.port())};
  Report r = Probe(options, cases);
  EXPECT_EQ(Get(r, "route"), "OK");
  EXPECT_EQ(Get(r, "route_port_elsewhere"), "ECONNREFUSED");
  EXPECT_EQ(Get(r, "other_port"), "EACCES");
  EXPECT_EQ(Get(r, "bind"), "EACCES");
  options.insert(options.end(), {"--landlock-allow", "net"});
  Report relaxed = Probe(options, cases);
  EXPECT_EQ(Get(relaxed, "other_port"), "ECONNREFUSED");
  EXPECT_EQ(Get(relaxed, "bind"), "OK");
}

TEST_F(RunKernelSurfaceTest, LandlockKeepsSignalsInsideTheAgent) {
  if (LandlockAbi() < 6) GTEST_SKIP() << "Landlock ABI " << LandlockAbi() << ", need 6";
  // Pid 1 is the supervisor, outside the agent's domain (and of the same uid).
  const std::vector<std::pair<std::string, std::string>> cases = {{"supervisor", "try-kill 1 0"},
                                                                  {"self", "try-kill $$ 0"}};
  Report r = Probe({}, cases);
  EXPECT_EQ(Get(r, "supervisor"), "EPERM");
  EXPECT_EQ(Get(r, "self"), "OK");
  Report relaxed = Probe({"--landlock-allow", "scope"}, cases);
  EXPECT_EQ(Get(relaxed, "supervisor"), "OK");
}

// Forks a process that joins the network namespace of `pid` (through its user namespace
// when that is needed) and listens on the abstract socket @name there, outside every
// Landlock domain. Returns its pid once it listens, or -1.
pid_t ListenInNetworkOf(pid_t pid, const std::string& name) {
  Pipe ready = MakePipe();
  const pid_t child = fork();
  if (child != 0) {
    ready.write_end.reset();
    char c = 0;
    return read(ready.read_end.get(), &c, 1) == 1 ? child : -1;
  }
  const std::string ns = "/proc/" + std::to_string(pid) + "/ns/";
  Fd user(open((ns + "user").c_str(), O_RDONLY | O_CLOEXEC));
  Fd net(open((ns + "net").c_str(), O_RDONLY | O_CLOEXEC));
  if (!user || !net) _exit(1);
  if (setns(net.get(), CLONE_NEWNET) != 0 &&
      (setns(user.get(), CLONE_NEWUSER) != 0 || setns(net.get(), CLONE_NEWNET) != 0)) {
    _exit(2);
  }
  Fd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path + 1, name.data(), name.size());
  const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  if (bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), len) != 0 || listen(fd.get(), 4) != 0) {
    _exit(3);
  }
  if (write(ready.write_end.get(), "r", 1) != 1) _exit(4);
  for (;;) pause();
}

// The sandbox's network namespace is private, so the only abstract sockets in it are made
// by processes inside; one made there by a process outside the agent's domain (here, one
// that joined from the host) is out of the agent's reach.
TEST_F(RunKernelSurfaceTest, LandlockKeepsAbstractSocketsInsideTheAgent) {
  if (LandlockAbi() < 6) GTEST_SKIP() << "Landlock ABI " << LandlockAbi() << ", need 6";
  for (const bool relaxed : {false, true}) {
    SCOPED_TRACE(relaxed ? "--landlock-allow scope" : "default");
    const std::string name =
        "sbx-abstract-" + std::to_string(getpid()) + (relaxed ? "-relaxed" : "-default");
    const std::string go = work_.Sub(name);
    Args options = {"--workspace", work_.path(), "--out", out_.path()};
    if (relaxed) options.insert(options.end(), {"--landlock-allow", "scope"});
    Process run = Process::Start(
        RunArgv(options, {"/bin/sh", "-c",
                          "echo ready; while [ ! -e " + go + " ]; do sleep 0.05; done; " +
                              ProbeHostPath() + " try-abstract " + name}));
    ASSERT_TRUE(run.WaitForOutput("ready", milliseconds(20000))) << run.out();
    // The agent's shell: the one process with the marker in another network namespace.
    const std::string own_net = HostNamespace("net");
    pid_t agent = -1;
    for (int pid : ProcessesMatching(go)) {
      char link[64] = {};
      const std::string path = "/proc/" + std::to_string(pid) + "/ns/net";
      if (readlink(path.c_str(), link, sizeof(link) - 1) > 0 && own_net != link) agent = pid;
    }
    ASSERT_GT(agent, 0) << "no sandbox process found";
    const pid_t listener = ListenInNetworkOf(agent, name);
    ASSERT_GT(listener, 0);
    WriteFile(go, "");
    RunResult res = run.Wait(milliseconds(20000));
    kill(listener, SIGKILL);
    waitpid(listener, nullptr, 0);
    ASSERT_EQ(res.exit_code, 0) << Describe(res);
    EXPECT_EQ(Get(ParseReport(res.out), "try-abstract"), relaxed ? "OK" : "EPERM") << res.out;
  }
}

TEST_F(RunKernelSurfaceTest, StatusDocumentNamesTheLandlockParts) {
  TempDir state;
  const int abi = LandlockAbi();
  for (const bool relaxed : {false, true}) {
    Args options = {"--workspace", work_.path(),    "--out",
                    out_.path(),   "--status-json", state.Sub("status.json")};
    if (relaxed) options.insert(options.end(), {"--landlock-allow", "net"});
    RunResult res = RunAteam(options, {"true"});
    ASSERT_EQ(res.exit_code, 0) << Describe(res);
    const std::string status = ReadFile(state.Sub("status.json")).value_or("");
    std::string expected = "\"landlock\": {\"abi\": " + std::to_string(abi) + ", \"enforced\": [";
    if (abi >= 2) expected += "\"fs\"";
    if (abi >= 4 && !relaxed) expected += ", \"net\"";
    if (abi >= 6) expected += ", \"scope\"";
    EXPECT_NE(status.find(expected + "]}"), std::string::npos) << status;
  }
}

TEST_F(RunKernelSurfaceTest, DryRunPrintsThePolicyAndTheLandlockRules) {
  RunResult res = RunAteam({"--workspace", work_.path(), "--out", out_.path(), "--dry-run",
                            "--seccomp-allow", "syslog", "--landlock-allow", "scope"},
                           {"true"});
  ASSERT_EQ(res.exit_code, 0) << Describe(res);
  EXPECT_NE(res.out.find("seccomp: socket-families: socket(unless AF_UNIX"), std::string::npos)
      << res.out;
  EXPECT_NE(res.out.find("seccomp: syslog: relaxed"), std::string::npos) << res.out;
  const int abi = LandlockAbi();
  if (abi == 0) {
    EXPECT_NE(res.out.find("landlock: not available"), std::string::npos) << res.out;
    return;
  }
  EXPECT_NE(res.out.find("landlock: ABI " + std::to_string(abi)), std::string::npos) << res.out;
  if (abi >= 2) {
    EXPECT_NE(res.out.find("landlock: fs: writes only to " + work_.path()), std::string::npos)
        << res.out;
  }
  EXPECT_EQ(res.out.find("landlock: scope:"), std::string::npos) << res.out;
}

}  // namespace
}  // namespace sbx::integration::run
