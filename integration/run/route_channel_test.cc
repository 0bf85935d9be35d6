// The route channel (route-N.sock) and the start report's channel (report.sock) of a root
// caller's dispatch, attacked from the host before its supervisor connects: `run` is held
// (traced, stopped at the fork that starts its sandbox, with that child) once the route
// socket exists, and meanwhile
//   - a process of uid 65534 tries to connect: the sockets' owner and mode keep it out;
//   - a process of another running dispatch's uid that gets past the mode
//     (CAP_DAC_OVERRIDE kept across setuid) connects and hands over a TCP listener of its
//     own: refused, the peer is not the sandbox's uid;
//   - a process of the dispatch's own leased uid does the same: refused, the peer is not
//     the sandbox's supervisor.
// Then `run` goes on, the supervisor connects behind them, and the agent's route works:
// the relay adopted the supervisor's listener, not one of theirs. Each refusal is a ledger
// line (route) or one stderr line (report). No timing assertion: every wait is for an
// effect, under a watchdog.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "base/child_process.h"
#include "base/socket_message.h"
#include "integration/run/run_support.h"

namespace sbx::integration::run {
namespace {

using std::chrono::seconds;
using std::chrono::steady_clock;

constexpr seconds kWatchdog{60};
constexpr const char* kStateRoot = "/run/ateam-sandbox-0";

// `run`'s own state directory, found through the descriptor it holds of it (other root
// dispatches may be making theirs at the same time), once its route-0.sock exists; and
// that socket's owner.
std::pair<std::string, uid_t> NewRouteSocket(pid_t run) {
  const std::string fds = "/proc/" + std::to_string(run) + "/fd";
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(fds, ec)) {
    std::error_code link_ec;
    const std::string target = std::filesystem::read_symlink(entry.path(), link_ec);
    if (link_ec || !target.starts_with(std::string(kStateRoot) + "/dispatch-")) continue;
    struct stat st {};
    if (lstat((target + "/route-0.sock").c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) {
      return {target, st.st_uid};
    }
  }
  return {"", 0};
}

// The process whose command line holds `needle` and whose parent is this test.
pid_t OurChildMatching(const std::string& needle) {
  for (int pid : ProcessesMatching(needle)) {
    const std::string status = ReadFile("/proc/" + std::to_string(pid) + "/status").value_or("");
    const auto at = status.find("\nPPid:");
    if (at != std::string::npos && std::stoi(status.substr(at + 6)) == getpid()) return pid;
  }
  return -1;
}

// Traces `run` (PTRACE_SEIZE with its fork events) until it forks once `ready()` holds: that
// child, which the kernel starts stopped, and `run`, stopped at the fork, are both held
// until ReleaseHeld. Every earlier child (the state directory's janitor, the clone's
// helpers) is let go at its first stop. Returns the held child, or -1 when `run` could not
// be traced, ended first, or was ready already when traced (too late to hold anything).
pid_t HoldAtFirstForkOnceReady(pid_t run, const std::function<bool()>& ready) {
  if (ptrace(PTRACE_SEIZE, run, nullptr,
             PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_TRACECLONE) != 0) {
    return -1;
  }
  if (ready()) {
    ptrace(PTRACE_INTERRUPT, run, nullptr, nullptr);
    waitpid(run, nullptr, __WALL);
    ptrace(PTRACE_DETACH, run, nullptr, nullptr);
    return -1;
  }
  while (true) {
    int status = 0;
    if (waitpid(run, &status, __WALL) != run || !WIFSTOPPED(status)) return -1;
    const int event = status >> 16;
    if (event == PTRACE_EVENT_FORK || event == PTRACE_EVENT_VFORK || event == PTRACE_EVENT_CLONE) {
      unsigned long child = 0;
      ptrace(PTRACE_GETEVENTMSG, run, nullptr, &child);
      const auto pid = static_cast<pid_t>(child);
      waitpid(pid, nullptr, __WALL);  // its first stop, before it ran anything
      if (ready()) return pid;
      ptrace(PTRACE_DETACH, pid, nullptr, nullptr);
      ptrace(PTRACE_CONT, run, nullptr, nullptr);
      continue;
    }
    // A signal for `run` (a helper's SIGCHLD) goes on as it came; any other stop resumes.
    const int signal = event == 0 ? WSTOPSIG(status) : 0;
    ptrace(PTRACE_CONT, run, nullptr, signal);
  }
}

void ReleaseHeld(pid_t run, pid_t child) {
  ptrace(PTRACE_DETACH, child, nullptr, nullptr);
  ptrace(PTRACE_DETACH, run, nullptr, nullptr);
}

// What the holder saw: the new route socket's directory and owner, and whether `run` is held.
struct Held {
  std::string dir;
  uid_t leased = 0;
  bool held = false;
};

// HoldAtFirstForkOnceReady in a process of its own (the tracer must not be a thread of the
// process whose other thread waits for `run`: that wait would take the trace stops), ready
// once `run`'s state directory has its route socket. Returns what it saw and an fd
// whose closing releases `run`; the holder is reaped by WaitForHolder.
std::pair<Held, int> StartHolder(pid_t run, pid_t* holder) {
  int report[2];
  int go[2];
  if (pipe2(report, O_CLOEXEC) != 0 || pipe2(go, O_CLOEXEC) != 0) return {{}, -1};
  *holder = fork();
  if (*holder == 0) {
    close(report[0]);
    close(go[1]);
    std::pair<std::string, uid_t> found{"", 0};
    const pid_t child = HoldAtFirstForkOnceReady(run, [&] {
      found = NewRouteSocket(run);
      return !found.first.empty();
    });
    const std::string text = found.first + "\n" + std::to_string(found.second) + "\n" +
                             (child > 0 ? "held" : "not held") + "\n";
    (void)!write(report[1], text.data(), text.size());
    close(report[1]);
    char byte = 0;
    while (read(go[0], &byte, 1) < 0 && errno == EINTR) {
    }
    if (child > 0) ReleaseHeld(run, child);
    _exit(0);
  }
  close(report[1]);
  close(go[0]);
  std::string text;
  char buf[512];
  for (ssize_t n; (n = read(report[0], buf, sizeof buf)) > 0;)
    text.append(buf, static_cast<size_t>(n));
  close(report[0]);
  Held held;
  const size_t first = text.find('\n');
  const size_t second = text.find('\n', first + 1);
  if (first != std::string::npos && second != std::string::npos) {
    held.dir = text.substr(0, first);
    held.leased = static_cast<uid_t>(std::stoul(text.substr(first + 1, second - first - 1)));
    held.held = text.substr(second + 1) == "held\n";
  }
  return {held, go[1]};
}

// Keeps CAP_DAC_OVERRIDE effective after the switch to a non-root uid (prctl KEEPCAPS
// keeps the permitted set; capset raises the one capability again).
bool KeepDacOverride() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  data[0].effective = data[0].permitted = 1U << CAP_DAC_OVERRIDE;
  return syscall(SYS_capset, &header, data) == 0;
}

enum Outcome { kKeptOut = 0, kHandedOver = 1, kSendFailed = 2, kSetupFailed = 3 };

// In a child that becomes `uid` (keeping CAP_DAC_OVERRIDE when `dac_override`): connects to
// each of `sockets` and sends over it a TCP listener of its own (127.0.0.1, any port), as
// the supervisor sends its route's. The child's exit code: the worst Outcome of all, or
// kKeptOut when no connect got through.
int Attack(uid_t uid, bool dac_override, const std::vector<std::string>& sockets) {
  const pid_t child = fork();
  if (child == 0) {
    if ((dac_override && prctl(PR_SET_KEEPCAPS, 1) != 0) || base::SwitchToIds(uid, uid) != 0 ||
        (dac_override && !KeepDacOverride())) {
      _exit(kSetupFailed);
    }
    const int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in local{};
    local.sin_family = AF_INET;
    local.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (listener < 0 || bind(listener, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0 ||
        listen(listener, 4) != 0) {
      _exit(kSetupFailed);
    }
    int outcome = kKeptOut;
    for (const std::string& path : sockets) {
      const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_un addr{};
      addr.sun_family = AF_UNIX;
      std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
      if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        if (errno != EACCES) _exit(kSetupFailed);  // kept out, and by the mode alone
        continue;
      }
      char byte = 'H';
      base::SocketMessage<int> message(&byte, 1);
      message.Attach(SOL_SOCKET, SCM_RIGHTS, listener);
      outcome =
          std::max<int>(outcome, message.Send(fd, MSG_NOSIGNAL) == 1 ? kHandedOver : kSendFailed);
      // Left open: closed by the kernel at _exit, after `run` has it in its accept queue.
    }
    _exit(outcome);
  }
  int status = 0;
  waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : kSetupFailed;
}

// The ledger's refused connections: the sum of their counts.
int RefusedInLedger(const std::string& ledger) {
  int refused = 0;
  size_t start = 0;
  while (start < ledger.size()) {
    const size_t end = std::min(ledger.find('\n', start), ledger.size());
    const std::string line = ledger.substr(start, end - start);
    if (line.find(R"("end":"refused")") != std::string::npos) {
      const auto at = line.find(R"("count":)");
      refused += at == std::string::npos ? 1 : std::stoi(line.substr(at + 8));
    }
    start = end + 1;
  }
  return refused;
}

class RunRouteChannelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!IsRoot()) GTEST_SKIP() << "route channels belong to a leased host uid only for root";
    std::string missing = MissingPrerequisite({"sh", "git"});
    if (!missing.empty()) GTEST_SKIP() << missing;
    ASSERT_EQ(chmod(shared_.path().c_str(), 0777), 0);
    ASSERT_EQ(MakeOneCommitRepository(scratch_.Sub("repo")), 0);
  }
  TempDir shared_, ws_other_, ledger_dir_;
  RootTempDir scratch_;  // the repository and --workspace-root: root's, 0755
};

TEST_F(RunRouteChannelTest, OnlyTheSupervisorsListenerIsAdopted) {
  const std::string tag = "sbx-route-channel-" + std::to_string(getpid());
  // Another dispatch, running until told: its leased uid is the second attacker's.
  RunResult other;
  std::thread other_thread([&] {
    other = RunAteam({"--workspace", ws_other_.path(), "--rw", shared_.path(), "--no-default-allow",
                      "--timeout", "120"},
                     {"sh", "-c",
                      "touch " + shared_.Sub("up") + "; while [ ! -e " + shared_.Sub("done") +
                          " ]; do sleep 0.05; done",
                      tag + "-other"},
                     WithTimeout(seconds(150)));
  });
  uid_t other_uid = 0;
  for (const auto deadline = steady_clock::now() + kWatchdog;
       other_uid == 0 && steady_clock::now() < deadline;) {
    if (access(shared_.Sub("up").c_str(), F_OK) == 0) {
      for (int pid : ProcessesMatching(tag + "-other")) {
        if (UidOfProcess(pid) != 0) other_uid = UidOfProcess(pid);
      }
    }
    if (other_uid == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }

  EchoServer echo;
  const std::string ledger = ledger_dir_.Sub("ledger.jsonl");
  RunResult r;
  std::thread run_thread([&] {
    // --repo: the clone, the only step before the sandbox that runs as the leased uid, is
    // over before the route socket exists.
    r = RunAteam({"--repo", scratch_.Sub("repo"), "--workspace-root", scratch_.Sub("root"),
                  "--ledger", ledger, "--setenv", "SBX_TAG=" + tag, "--no-default-allow", "--allow",
                  "api.example.test=127.0.0.1:" + std::to_string(echo.port()) + ",tcp"},
                 {NetClientPath(), "concurrent", "api.example.test", "443", "2"},
                 WithTimeout(seconds(150)));
  });
  // `run` itself, traced before its route socket exists and held at the fork that starts
  // its sandbox: the supervisor cannot connect before the attackers have.
  pid_t run = -1;
  for (const auto deadline = steady_clock::now() + kWatchdog;
       run <= 0 && steady_clock::now() < deadline;) {
    run = OurChildMatching("SBX_TAG=" + tag);
    if (run <= 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  pid_t holder = -1;
  const auto [held, release] = run > 0 ? StartHolder(run, &holder) : std::pair{Held{}, -1};
  const std::string& dir = held.dir;
  const uid_t leased = held.leased;
  const bool held_early = held.held;
  int stranger = -1;
  int other_dispatch = -1;
  int own_uid = -1;
  if (held_early && other_uid != 0) {
    const std::string route = dir + "/route-0.sock";
    const std::string report = dir + "/report.sock";
    // report.sock's backlog holds this one and the supervisor's connection, no more.
    own_uid = Attack(leased, /*dac_override=*/false, {report, route});
    other_dispatch = Attack(other_uid, /*dac_override=*/true, {route});
    stranger = Attack(65534, /*dac_override=*/false, {route, report});
  }
  if (release >= 0) close(release);
  if (holder > 0) waitpid(holder, nullptr, 0);
  run_thread.join();
  WriteFile(shared_.Sub("done"), "");
  other_thread.join();

  ASSERT_NE(other_uid, 0U) << "the other dispatch's uid was not seen\n" << Describe(other);
  ASSERT_GT(run, 0) << "`run` itself was not found\n" << Describe(r);
  ASSERT_TRUE(held_early) << "`run` was not held before its sandbox started (route socket '" << dir
                          << "')\n"
                          << Describe(r);
  EXPECT_NE(leased, other_uid) << "two running dispatches share a host uid";
  EXPECT_EQ(stranger, kKeptOut) << "uid 65534 got through the sockets' mode";
  EXPECT_EQ(other_dispatch, kHandedOver);
  EXPECT_EQ(own_uid, kHandedOver);
  // The dispatch went on, and its route is the supervisor's.
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(Get(ParseReport(r.out), "echoed"), "2") << Describe(r);
  EXPECT_EQ(echo.accepted(), 2);
  EXPECT_EQ(other.exit_code, 0) << Describe(other);
  // Two refusals on the route channel (ledger), one line for the report channel's.
  EXPECT_EQ(RefusedInLedger(ReadFile(ledger).value_or("")), 2) << ReadFile(ledger).value_or("");
  EXPECT_NE(r.err.find("refused a start report channel"), std::string::npos) << Describe(r);
}

}  // namespace
}  // namespace sbx::integration::run
