// The Landlock ruleset builder (pure), and each rule enforced by the real kernel in a forked
// child: the child applies the ruleset, the test process stays outside its domain.
#include "security/landlock.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <string>

#include "base/unique_fd.h"

namespace sbx::security {
namespace {

constexpr uint64_t kAbi1Fs = (1ULL << 13) - 1;  // EXECUTE .. MAKE_SYM
constexpr uint64_t kWriteAbi2 =
    (kAbi1Fs & ~(kLandlockFsExecute | kLandlockFsReadFile | kLandlockFsReadDir)) | kLandlockFsRefer;

LandlockPolicy SamplePolicy() {
  LandlockPolicy p;
  p.writable = {"/ws", "/tmp"};
  p.devices = {"/dev/null"};
  p.connect_ports = {443, 8443, 443};
  p.stdio_fds = {1, 2};
  return p;
}

TEST(LandlockBuilderTest, MasksFollowTheAbi) {
  const LandlockPolicy policy = SamplePolicy();
  EXPECT_TRUE(BuildLandlockRuleset(policy, 0).Empty());
  // ABI 1 cannot allow a rename across directories: no fs part at all.
  EXPECT_TRUE(BuildLandlockRuleset(policy, 1).Empty());

  LandlockRuleset abi2 = BuildLandlockRuleset(policy, 2);
  EXPECT_EQ(abi2.handled_fs, kWriteAbi2);
  EXPECT_EQ(abi2.handled_net, 0U);
  EXPECT_EQ(abi2.scoped, 0U);
  EXPECT_EQ(BuildLandlockRuleset(policy, 3).handled_fs, kWriteAbi2 | kLandlockFsTruncate);

  LandlockRuleset abi4 = BuildLandlockRuleset(policy, 4);
  EXPECT_EQ(abi4.handled_net, kLandlockNetBindTcp | kLandlockNetConnectTcp);
  EXPECT_EQ(abi4.connect_ports, (std::vector<uint16_t>{443, 8443}));
  EXPECT_EQ(abi4.scoped, 0U);
  EXPECT_EQ(BuildLandlockRuleset(policy, 5).handled_fs,
            kWriteAbi2 | kLandlockFsTruncate | kLandlockFsIoctlDev);

  for (int abi : {6, 7, 9}) {
    LandlockRuleset r = BuildLandlockRuleset(policy, abi);
    EXPECT_EQ(r.scoped, kLandlockScopeAbstractUnixSocket | kLandlockScopeSignal) << abi;
    EXPECT_EQ(LandlockParts(r), (std::vector<std::string>{"fs", "net", "scope"}));
  }
  // Reads and execution are never handled: the mounts decide them.
  for (int abi = 1; abi <= 9; ++abi) {
    EXPECT_EQ(BuildLandlockRuleset(policy, abi).handled_fs &
                  (kLandlockFsExecute | kLandlockFsReadFile | kLandlockFsReadDir),
              0U);
  }
}

TEST(LandlockBuilderTest, RulesGrantWritesButNoDeviceNodes) {
  LandlockRuleset r = BuildLandlockRuleset(SamplePolicy(), 7);
  ASSERT_EQ(r.paths.size(), 3U);
  EXPECT_EQ(r.paths[0].path, "/ws");
  EXPECT_EQ(r.paths[0].access,
            r.handled_fs & ~(kLandlockFsMakeChar | kLandlockFsMakeBlock | kLandlockFsIoctlDev));
  EXPECT_NE(r.paths[0].access & kLandlockFsRefer, 0U);
  EXPECT_EQ(r.paths[2].path, "/dev/null");
  EXPECT_EQ(r.paths[2].access, kLandlockFsWriteFile | kLandlockFsTruncate | kLandlockFsIoctlDev);
  ASSERT_EQ(r.fds.size(), 2U);
  EXPECT_EQ(r.fds[0].access, r.paths[2].access);
}

TEST(LandlockBuilderTest, PartsCanBeLeftOut) {
  LandlockPolicy policy = SamplePolicy();
  policy.fs = false;
  LandlockRuleset r = BuildLandlockRuleset(policy, 7);
  EXPECT_EQ(r.handled_fs, 0U);
  EXPECT_TRUE(r.paths.empty());
  EXPECT_TRUE(r.fds.empty());
  EXPECT_EQ(LandlockParts(r), (std::vector<std::string>{"net", "scope"}));
  policy.net = policy.scope = false;
  EXPECT_TRUE(BuildLandlockRuleset(policy, 7).Empty());
}

TEST(LandlockBuilderTest, Describes) {
  EXPECT_EQ(DescribeLandlock(BuildLandlockRuleset(SamplePolicy(), 0)),
            (std::vector<std::string>{"landlock: not available on this kernel, not applied"}));
  EXPECT_EQ(DescribeLandlock(BuildLandlockRuleset(SamplePolicy(), 7)),
            (std::vector<std::string>{
                "landlock: ABI 7, enforced: fs, net, scope",
                "landlock: fs: writes only to /ws, /tmp, /dev/null, the agent's stdio files",
                "landlock: net: TCP connect only to ports 443, 8443, bind nowhere",
                "landlock: scope: abstract Unix sockets and signals only within the agent's "
                "processes"}));
  LandlockPolicy none = SamplePolicy();
  none.connect_ports.clear();
  EXPECT_EQ(DescribeLandlock(BuildLandlockRuleset(none, 4))[2],
            "landlock: net: TCP connect only to ports (none), bind nowhere");
}

// ---- The kernel ------------------------------------------------------------------------

class LandlockKernelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    abi_ = LandlockAbi();
    if (abi_ < 6) GTEST_SKIP() << "Landlock ABI " << abi_ << " here; these tests need 6";
    char tmpl[] = "/tmp/landlock-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    allowed_ = root_ + "/allowed";
    denied_ = root_ + "/denied";
    ASSERT_EQ(mkdir(allowed_.c_str(), 0700), 0);
    ASSERT_EQ(mkdir(denied_.c_str(), 0700), 0);
  }
  void TearDown() override {
    if (!root_.empty()) {
      std::string cmd = "rm -rf '" + root_ + "'";
      (void)std::system(cmd.c_str());  // NOLINT(concurrency-mt-unsafe)
    }
  }

  // Runs `body` in a child restricted by `policy`; returns its exit status (0: all held).
  template <typename Body>
  int InChild(const LandlockPolicy& policy, Body body) {
    auto fd = CreateLandlockRuleset(BuildLandlockRuleset(policy, abi_));
    EXPECT_TRUE(fd) << fd.error().Render();
    if (!fd) return -1;
    const pid_t pid = fork();
    if (pid == 0) {
      if (RestrictSelfWithLandlock(fd->get()) != 0) _exit(100);
      _exit(body());
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 200 + WTERMSIG(status);
  }

  static int TryCreate(const std::string& path) {
    base::UniqueFd fd(open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
    return fd ? 0 : errno;
  }

  int abi_ = 0;
  std::string root_, allowed_, denied_;
};

TEST_F(LandlockKernelTest, WritesOnlyWhereListed) {
  LandlockPolicy policy;
  policy.writable = {allowed_};
  policy.devices = {"/dev/null"};
  policy.net = policy.scope = false;
  const std::string denied_file = denied_ + "/f";
  const int status = InChild(policy, [&]() -> int {
    if (TryCreate(allowed_ + "/f") != 0) return 1;
    if (mkdir((allowed_ + "/d").c_str(), 0700) != 0) return 2;
    if (rename((allowed_ + "/f").c_str(), (allowed_ + "/d/f").c_str()) != 0) return 3;
    if (TryCreate(denied_file) != EACCES) return 4;  // DAC allows it: only Landlock refuses
    if (mkdir((denied_ + "/d").c_str(), 0700) == 0 || errno != EACCES) return 5;
    if (TryCreate("/dev/null") != 0) return 6;
    // Reading stays allowed everywhere.
    base::UniqueFd dir(open(denied_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir) return 7;
    // No device nodes, even in a writable directory (a fifo is fine).
    if (mknod((allowed_ + "/null").c_str(), S_IFCHR | 0600, makedev(1, 3)) == 0) return 8;
    if (mkfifo((allowed_ + "/fifo").c_str(), 0600) != 0) return 9;
    return 0;
  });
  EXPECT_EQ(status, 0);
  struct stat st {};
  EXPECT_NE(stat(denied_file.c_str(), &st), 0);
}

TEST_F(LandlockKernelTest, TcpConnectOnlyToListedPortsAndBindNowhere) {
  // Two listeners on 127.0.0.1, made outside the domain.
  auto listen_on_any_port = [](uint16_t* port) {
    base::UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    EXPECT_EQ(bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(listen(fd.get(), 4), 0);
    EXPECT_EQ(getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len), 0);
    *port = ntohs(addr.sin_port);
    return fd;
  };
  uint16_t allowed_port = 0;
  uint16_t other_port = 0;
  base::UniqueFd allowed = listen_on_any_port(&allowed_port);
  base::UniqueFd other = listen_on_any_port(&other_port);
  LandlockPolicy policy;
  policy.fs = policy.scope = false;
  policy.connect_ports = {allowed_port};
  auto connect_to = [](uint16_t port) -> int {
    base::UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port);
    return connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 ? 0 : errno;
  };
  const int status = InChild(policy, [&]() -> int {
    if (connect_to(allowed_port) != 0) return 1;
    if (connect_to(other_port) != EACCES) return 2;  // a listener is there: Landlock refuses
    base::UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 || errno != EACCES) {
      return 3;
    }
    // UDP is not Landlock's: still usable.
    base::UniqueFd udp(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    if (bind(udp.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) return 4;
    return 0;
  });
  EXPECT_EQ(status, 0);
}

TEST_F(LandlockKernelTest, AbstractSocketsAndSignalsStayInTheDomain) {
  // An abstract socket bound by this (unrestricted) process.
  base::UniqueFd server(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string name = "sbx-landlock-test-" + std::to_string(getpid());
  std::memcpy(addr.sun_path + 1, name.data(), name.size());
  const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  ASSERT_EQ(bind(server.get(), reinterpret_cast<sockaddr*>(&addr), len), 0);
  ASSERT_EQ(listen(server.get(), 4), 0);
  LandlockPolicy policy;
  policy.fs = policy.net = false;
  const pid_t parent = getpid();
  const int status = InChild(policy, [&]() -> int {
    base::UniqueFd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), len) == 0 || errno != EPERM) {
      return 1;
    }
    if (kill(parent, 0) == 0 || errno != EPERM) return 2;
    // Within the domain both work: a child of ours listens, we signal it.
    const pid_t child = fork();
    if (child == 0) {
      pause();
      _exit(0);
    }
    if (kill(child, SIGKILL) != 0) return 3;
    waitpid(child, nullptr, 0);
    return 0;
  });
  EXPECT_EQ(status, 0);
}

TEST_F(LandlockKernelTest, StdioFileOpenForWritingMayBeReopened) {
  const std::string log = denied_ + "/log";
  base::UniqueFd out(open(log.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
  base::UniqueFd in(open(log.c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(out);
  ASSERT_TRUE(in);
  LandlockPolicy policy;
  policy.net = policy.scope = false;
  policy.stdio_fds = {out.get(), in.get()};
  const std::string self_fd = "/proc/self/fd/" + std::to_string(out.get());
  const int status = InChild(policy, [&]() -> int {
    base::UniqueFd again(open(self_fd.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC));
    if (!again) return 1;
    if (TryCreate(denied_ + "/other") != EACCES) return 2;
    return 0;
  });
  EXPECT_EQ(status, 0);
  // A file only open for reading gets no write right.
  policy.stdio_fds = {in.get()};
  const std::string in_fd = "/proc/self/fd/" + std::to_string(in.get());
  EXPECT_EQ(InChild(policy,
                    [&]() -> int {
                      base::UniqueFd again(open(in_fd.c_str(), O_WRONLY | O_CLOEXEC));
                      return !again && errno == EACCES ? 0 : 1;
                    }),
            0);
}

}  // namespace
}  // namespace sbx::security
