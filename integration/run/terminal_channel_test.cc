// The terminal channel of a root caller's `run --tty` under attack from the host: a process
// of another uid (65534, or one nobody runs as) cannot even connect to the dispatch's
// tty.sock, and a process of the sandbox's own leased uid that connects first, as soon as
// the socket exists, and hands over a pty master of its own is refused: the caller's
// terminal stays connected to the sandbox's pty, and nothing the caller types reaches the
// attacker's pty. No timing assertion: every wait is for an effect, under a watchdog.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <thread>
#include <vector>

#include "base/child_process.h"
#include "base/socket_message.h"
#include "integration/run/pty_terminal.h"
#include "integration/run/run_support.h"

namespace sbx::integration::run {
namespace {

using std::chrono::seconds;
using std::chrono::steady_clock;

constexpr seconds kWatchdog{60};
constexpr uid_t kStranger = 12345;  // a uid no process here runs as

// The tty.sock files in root's state directories, with their owners.
std::vector<std::pair<std::string, uid_t>> TtySockets() {
  std::vector<std::pair<std::string, uid_t>> found;
  std::error_code ec;
  for (const auto& dir : std::filesystem::directory_iterator("/run/ateam-sandbox-0", ec)) {
    const std::string path = dir.path().string() + "/tty.sock";
    struct stat st {};
    if (lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) found.emplace_back(path, st.st_uid);
  }
  return found;
}

int ConnectTo(const std::string& path) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// A child that becomes `uid` and tries the socket at `path`: 0 when it could not connect,
// 1 when it could, 255 when it could not become `uid`.
int TryConnectAs(uid_t uid, const std::string& path) {
  const pid_t child = fork();
  if (child == 0) {
    if (base::SwitchToIds(uid, uid) != 0) _exit(255);
    _exit(ConnectTo(path) >= 0 ? 1 : 0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 254;
}

// The attacker of the sandbox's own uid: connects to `path` and sends the master of a pty
// it opened; then reports over `report` (a pipe) "1" when the connection and the send
// worked, "0" otherwise, and waits until told (EOF on `go`) to read the pty's slave side
// without blocking; it writes what it read to `report` and exits.
// `parent_ends`: the parent's ends of the two pipes, closed in the child, or the child's own
// copy of the write end of `go` keeps it waiting forever (and it the parent's last read).
pid_t StartHandoverAttacker(uid_t uid, gid_t gid, const std::string& path, int report, int go,
                            std::initializer_list<int> parent_ends) {
  const pid_t child = fork();
  if (child != 0) return child;
  for (int fd : parent_ends) close(fd);
  if (base::SwitchToIds(uid, gid) != 0) _exit(255);
  const int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0) _exit(254);
  const int slave = open(ptsname(master), O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
  const int fd = ConnectTo(path);
  bool sent = false;
  if (fd >= 0 && slave >= 0) {
    char byte = 0;
    base::SocketMessage<int> message(&byte, 1);
    message.Attach(SOL_SOCKET, SCM_RIGHTS, master);
    sent = message.Send(fd, MSG_NOSIGNAL) == 1;
  }
  (void)!write(report, sent ? "1" : "0", 1);
  char byte = 0;
  while (read(go, &byte, 1) < 0 && errno == EINTR) {
  }
  char buf[512];
  const ssize_t n = slave >= 0 ? read(slave, buf, sizeof buf) : -1;
  if (n > 0) (void)!write(report, buf, static_cast<size_t>(n));
  _exit(0);
}

class RunTerminalChannelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!IsRoot()) GTEST_SKIP() << "tty.sock belongs to a leased host uid only for root callers";
    std::string missing = MissingPrerequisite({"sh"});
    if (!missing.empty()) GTEST_SKIP() << missing;
    HandToSandboxUser(work_.path());
  }
  TempDir work_, out_;
};

TEST_F(RunTerminalChannelTest, OnlyTheSandboxsPtyBecomesTheCallersTerminal) {
  const std::vector<std::pair<std::string, uid_t>> before = TtySockets();
  PtyTerminal terminal(RunArgv({"--workspace", work_.path(), "--out", out_.path(), "--tty"},
                               {"sh", "-c", "echo sbx-agent-up; read line; echo \"got=$line\""}),
                       24, 80, {"TERM=xterm"});
  // The dispatch's tty.sock, as soon as it exists.
  std::string socket;
  uid_t owner = 0;
  for (const auto deadline = steady_clock::now() + kWatchdog;
       socket.empty() && steady_clock::now() < deadline;) {
    for (const auto& entry : TtySockets()) {
      if (std::find(before.begin(), before.end(), entry) == before.end()) {
        socket = entry.first;
        owner = entry.second;
      }
    }
    if (socket.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  int report[2];
  int go[2];
  ASSERT_EQ(pipe2(report, O_CLOEXEC), 0);
  ASSERT_EQ(pipe2(go, O_CLOEXEC), 0);
  pid_t attacker = -1;
  if (!socket.empty()) {
    EXPECT_NE(owner, 0U) << "root's dispatch channel belongs to root";
    EXPECT_NE(owner, 65534U) << "root's dispatch channel belongs to the shared overflow uid";
    attacker = StartHandoverAttacker(owner, owner, socket, report[1], go[0], {report[0], go[1]});
  }
  close(report[1]);
  close(go[0]);
  if (attacker > 0) {
    char sent = 0;
    ASSERT_EQ(read(report[0], &sent, 1), 1);
    for (uid_t other : {uid_t{65534}, kStranger}) {
      EXPECT_EQ(TryConnectAs(other, socket), 0) << "uid " << other << " connected to " << socket;
    }
  }
  // The caller's terminal is the sandbox's: the agent's words come, and what is typed
  // reaches the agent.
  ASSERT_TRUE(terminal.WaitFor("sbx-agent-up", kWatchdog)) << terminal.Printable();
  terminal.Type("typed-secret\n");
  ASSERT_TRUE(terminal.WaitFor("got=typed-secret", kWatchdog)) << terminal.Printable();
  EXPECT_EQ(terminal.Wait(kWatchdog), 0) << terminal.Printable();
  close(go[1]);
  std::string leaked;
  char buf[512];
  for (ssize_t n; (n = read(report[0], buf, sizeof buf)) > 0;)
    leaked.append(buf, static_cast<size_t>(n));
  close(report[0]);
  if (attacker > 0) waitpid(attacker, nullptr, 0);
  EXPECT_EQ(leaked.find("typed-secret"), std::string::npos)
      << "the caller's keys reached the attacker's pty: " << leaked;
  if (socket.empty()) {
    GTEST_SKIP() << "the dispatch's tty.sock was gone before it was seen: the supervisor "
                    "connected first (the terminal was still checked)";
  }
}

}  // namespace
}  // namespace sbx::integration::run
