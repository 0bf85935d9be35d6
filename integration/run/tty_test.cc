// `run` on a terminal: the agent on a pty of the sandbox's own devpts instance, relayed to
// the caller's terminal (here the test's own pty, pty_terminal.h): its name and size,
// resizes, keys that become signals inside, job control, exit codes, hang-up, and the
// caller's terminal settings put back on every way out.
//
// No timing assertions: each step waits for the output it expects, under a watchdog.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <csignal>

#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>

#include "base/child_process.h"
#include "integration/run/agents/agent_support.h"
#include "integration/run/pty_terminal.h"
#include "integration/run/run_support.h"
#include "relay/peer_check.h"

namespace sbx::integration::run {
namespace {

using std::chrono::seconds;

constexpr seconds kWatchdog{60};
// An interactive shell's prompt, unlike anything else in its output.
constexpr char kPrompt[] = "sbx-prompt$ ";

class RunTtyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string missing = MissingPrerequisite({"sh", "stty", "tty", "sleep"});
    if (!missing.empty()) GTEST_SKIP() << missing;
    HandToSandboxUser(work_.path());
  }

  Args Options(const Args& extra = {}) {
    Args options = {"--workspace", work_.path(), "--out",
                    out_.path(),   "--setenv",   std::string("PS1=") + kPrompt};
    options.insert(options.end(), extra.begin(), extra.end());
    return options;
  }

  // `run` on a terminal of rows x cols; no --tty: stdin and stdout are terminals.
  std::unique_ptr<PtyTerminal> Start(const Args& command, const Args& extra = {},
                                     unsigned short rows = 24, unsigned short cols = 80) {
    auto terminal = std::make_unique<PtyTerminal>(RunArgv(Options(extra), command), rows, cols,
                                                  std::vector<std::string>{"TERM=xterm"});
    before_ = terminal->Modes();
    return terminal;
  }

  // After `run` ended: the caller's terminal is as it was before.
  void ExpectModesRestored(const PtyTerminal& terminal) {
    termios after = terminal.Modes();
    EXPECT_TRUE(SameModes(before_, after))
        << "before: " << DescribeModes(before_) << "\nafter:  " << DescribeModes(after);
  }

  TempDir work_, out_;
  termios before_{};
};

#define WAIT_FOR(terminal, needle)                                                         \
  ASSERT_TRUE((terminal)->WaitFor((needle), kWatchdog)) << "no '" << (needle) << "' in:\n" \
                                                        << (terminal)->Printable()

TEST_F(RunTtyTest, AgentTerminalHasTheCallersSize) {
  auto terminal = Start({"sh", "-c", "echo name=$(tty); echo size=$(stty size)"}, {}, 37, 111);
  EXPECT_EQ(terminal->Wait(kWatchdog), 0) << terminal->Printable();
  EXPECT_NE(terminal->output().find("name=/dev/pts/"), std::string::npos) << terminal->Printable();
  EXPECT_NE(terminal->output().find("size=37 111"), std::string::npos) << terminal->Printable();
  ExpectModesRestored(*terminal);
}

TEST_F(RunTtyTest, ExplicitTtyFlagAndNoTty) {
  auto terminal = Start({"sh", "-c", "echo name=$(tty)"}, {"--tty"});
  EXPECT_EQ(terminal->Wait(kWatchdog), 0) << terminal->Printable();
  EXPECT_NE(terminal->output().find("name=/dev/pts/"), std::string::npos) << terminal->Printable();
  ExpectModesRestored(*terminal);

  // --no-tty: the pipe mode of non-terminal callers, on a terminal all the same.
  auto piped = Start({"sh", "-c", "echo name=$(tty); echo done"}, {"--no-tty"});
  EXPECT_EQ(piped->Wait(kWatchdog), 0) << piped->Printable();
  EXPECT_NE(piped->output().find("done"), std::string::npos) << piped->Printable();
  EXPECT_EQ(piped->output().find("name=/dev/pts/"), std::string::npos) << piped->Printable();
}

// Callers that are not terminals (ateam, scripts) get the pipe mode, as before --tty existed.
TEST_F(RunTtyTest, NonTerminalCallerKeepsPipes) {
  RunResult res = RunAteam(Options(), {"sh", "-c", "tty; echo done"});
  EXPECT_EQ(res.exit_code, 0) << Describe(res);
  EXPECT_NE(res.out.find("not a tty\ndone\n"), std::string::npos) << Describe(res);

  RunResult both = RunAteam(Options({"--tty", "--no-tty"}), {"true"});
  EXPECT_EQ(both.exit_code, 125) << Describe(both);
}

// --tty without a terminal: the agent still gets one; input that ends (here /dev/null) is
// passed on as Ctrl-D, the end of input for a program reading lines.
TEST_F(RunTtyTest, ForcedTtyWithoutCallerTerminal) {
  RunResult res =
      RunAteam(Options({"--tty"}), {"sh", "-c", "echo name=$(tty); cat; echo cat-ended; exit 6"});
  EXPECT_EQ(res.exit_code, 6) << Describe(res);
  EXPECT_NE(res.out.find("name=/dev/pts/"), std::string::npos) << Describe(res);
  EXPECT_NE(res.out.find("cat-ended\r\n"), std::string::npos) << Describe(res);
}

TEST_F(RunTtyTest, WindowChangeReachesAgent) {
  // `wait` returns for a trapped signal; a plain `sleep` would hold the trap back.
  auto terminal = Start({"sh", "-c",
                         "trap 'echo winch=$(stty size); exit 0' WINCH; echo ready;"
                         " while :; do sleep 1 & wait $!; done"},
                        {}, 30, 90);
  WAIT_FOR(terminal, "ready");
  terminal->Resize(50, 132);
  kill(terminal->pid(), SIGWINCH);  // as the terminal does for its foreground job
  WAIT_FOR(terminal, "winch=50 132");
  EXPECT_EQ(terminal->Wait(kWatchdog), 0) << terminal->Printable();
  ExpectModesRestored(*terminal);
}

TEST_F(RunTtyTest, InteractiveShellSession) {
  auto terminal = Start({"sh", "-i"});
  WAIT_FOR(terminal, kPrompt);
  terminal->Type("echo typed-$((6 * 7))\r");
  WAIT_FOR(terminal, "typed-42\r\n");
  terminal->Type("cd /tmp && pwd\r");
  WAIT_FOR(terminal, "/tmp\r\n");  // the typed line shows "/tmp &&", not this
  terminal->Type("exit 7\r");
  EXPECT_EQ(terminal->Wait(kWatchdog), 7) << terminal->Printable();
  ExpectModesRestored(*terminal);
}

// Ctrl-C, Ctrl-\ and Ctrl-Z are bytes to `run` (its terminal is raw); the sandbox's terminal
// turns them into SIGINT, SIGQUIT and SIGTSTP for the shell's foreground job, and `run` goes
// on.
TEST_F(RunTtyTest, ControlKeysReachTheForegroundJob) {
  auto terminal = Start({"sh", "-i"});
  WAIT_FOR(terminal, kPrompt);
  // The job says it started only once it is the sleep (exec), so the key cannot reach the
  // shell instead.
  terminal->Type("sh -c 'echo sleeping-$((3 * 3)); exec sleep 100'\r");
  WAIT_FOR(terminal, "sleeping-9\r\n");
  terminal->Type("\x03");
  terminal->Type("echo status=$?\r");
  WAIT_FOR(terminal, "status=130\r\n");  // 128 + SIGINT

  terminal->Type("sh -c 'echo quitting-$((2 * 8)); exec sleep 100'\r");
  WAIT_FOR(terminal, "quitting-16\r\n");
  terminal->Type("\x1c");  // Ctrl-backslash
  terminal->Type("echo status=$?\r");
  WAIT_FOR(terminal, "status=131\r\n");  // 128 + SIGQUIT

  terminal->Type("sh -c 'echo started-$((5 * 5)); exec sleep 100'\r");
  WAIT_FOR(terminal, "started-25\r\n");
  // The shell's job control: the stopped job is reported and the prompt comes back.
  terminal->Type("\x1a");
  WAIT_FOR(terminal, "Stopped");
  terminal->Type("kill -9 %1; echo killed-$((4 + 4))\r");
  WAIT_FOR(terminal, "killed-8\r\n");
  // dash may still count the job as stopped and refuse the first exit, never the second.
  terminal->Type("exit 0\rexit 0\r");
  EXPECT_EQ(terminal->Wait(kWatchdog), 0) << terminal->Printable();
  ExpectModesRestored(*terminal);
}

// The agent leads its session: nothing above it could continue it once stopped, so the
// supervisor does.
TEST_F(RunTtyTest, StoppedAgentIsContinued) {
  auto terminal = Start({"sh", "-c", "kill -STOP $$; echo continued-$((3 + 4))"});
  EXPECT_EQ(terminal->Wait(kWatchdog), 0) << terminal->Printable();
  EXPECT_NE(terminal->output().find("continued-7"), std::string::npos) << terminal->Printable();
  ExpectModesRestored(*terminal);
}

// `key=value` from the terminal's output (the line's rest), or "<missing key>".
std::string Value(const std::string& out, const std::string& key) {
  auto at = out.find(key + "=");
  if (at == std::string::npos) return "<missing " + key + ">";
  at += key.size() + 1;
  return out.substr(at, out.find_first_of("\r\n", at) - at);
}

// The agent's fds 0-2 are the sandbox's pty: another devpts instance than the caller's
// terminal, which is neither inherited nor bound as /dev/console, and pid 1 (which was
// started with stand-ins for the caller's fds) shows the agent none of its own.
TEST_F(RunTtyTest, AgentCannotReachCallersTerminal) {
  std::string script =
      "for fd in 0 1 2; do echo fd$fd=$(stat -L -c %d:%t /proc/$$/fd/$fd); done;"
      " test -e /dev/console && echo console=present || echo console=absent;"
      " echo ptmx=$(stat -L -c %d /dev/ptmx);"
      " ls /proc/1/fd >/dev/null 2>&1 && echo pid1fds=readable || echo pid1fds=hidden;"
      // What the agent holds, listed by the process it becomes (plus ls's own directory).
      " echo fd-list:; exec ls -l /proc/self/fd";
  auto terminal = Start({"sh", "-c", script});
  EXPECT_EQ(terminal->Wait(kWatchdog), 0) << terminal->Printable();
  const std::string& out = terminal->output();
  ASSERT_NE(out.find("fd-list:"), std::string::npos) << terminal->Printable();
  std::string dev0 = Value(out, "fd0");
  EXPECT_EQ(dev0, Value(out, "fd1"));
  EXPECT_EQ(dev0, Value(out, "fd2"));
  // 0x88: the pty slave major; the filesystem: the sandbox's devpts, not the caller's.
  EXPECT_EQ(dev0, Value(out, "ptmx") + ":88") << terminal->Printable();
  EXPECT_NE(Value(out, "ptmx"), std::to_string(terminal->SlaveDevice())) << terminal->Printable();
  std::istringstream listing(out.substr(out.find("fd-list:")));
  std::vector<std::string> terminals;
  for (std::string line; std::getline(listing, line);) {
    auto arrow = line.find(" -> ");
    if (arrow == std::string::npos) continue;
    std::string target = line.substr(arrow + 4, line.find('\r') - arrow - 4);
    if (target.starts_with("/proc/") && target.ends_with("/fd")) continue;  // ls's directory
    terminals.push_back(target);
  }
  ASSERT_EQ(terminals.size(), 3U) << terminal->Printable();
  EXPECT_TRUE(terminals[0].starts_with("/dev/pts/")) << terminal->Printable();
  EXPECT_EQ(terminals[1], terminals[0]);
  EXPECT_EQ(terminals[2], terminals[0]);
  EXPECT_EQ(Value(out, "console"), "absent");
  EXPECT_EQ(Value(out, "pid1fds"), "hidden");
  ExpectModesRestored(*terminal);
}

TEST_F(RunTtyTest, TiocstiOnlyReachesTheAgentsOwnTerminal) {
  std::string missing = MissingPrerequisite({"python3"});
  if (!missing.empty()) GTEST_SKIP() << missing;
  std::string script =
      "import fcntl, sys, termios\n"
      "try:\n"
      "    for c in b'injected\\n':\n"
      "        fcntl.ioctl(0, termios.TIOCSTI, bytes([c]))\n"
      "    print('tiocsti=accepted line=' + sys.stdin.readline().strip())\n"
      "except OSError as e:\n"
      "    print('tiocsti=refused errno=%d' % e.errno)\n";
  auto terminal = Start({"python3", "-c", script});
  EXPECT_EQ(terminal->Wait(kWatchdog), 0) << terminal->Printable();
  const std::string& out = terminal->output();
  // Refused (seccomp, or the kernel's legacy_tiocsti switch), or pushed into the agent's own
  // input, where the agent reads it back: never into the caller's terminal.
  bool refused = out.find("tiocsti=refused") != std::string::npos;
  bool own = out.find("tiocsti=accepted line=injected") != std::string::npos;
  EXPECT_TRUE(refused || own) << terminal->Printable();
  ExpectModesRestored(*terminal);
}

TEST_F(RunTtyTest, ClosingTheTerminalHangsUpTheAgent) {
  std::string marker = out_.Sub("hangup");
  auto terminal = Start({"sh", "-c",
                         "trap 'echo hup > " + marker +
                             "; exit 3' HUP; echo ready; while :; do sleep 1 & wait $!; done"});
  WAIT_FOR(terminal, "ready");
  terminal->Close();
  // The agent handled the hang-up and exited by itself: its own exit code.
  EXPECT_EQ(terminal->Wait(kWatchdog), 3);
  EXPECT_EQ(ReadFile(marker).value_or("<none>"), "hup\n");
}

// The same when `run` gets no SIGHUP (the terminal is not its controlling one): reading the
// end of its input is enough.
TEST_F(RunTtyTest, TerminalEndWithoutSighupHangsUpTheAgent) {
  std::string marker = out_.Sub("hangup");
  PtyTerminal terminal(
      RunArgv(Options(), {"sh", "-c",
                          "trap 'echo hup > " + marker +
                              "; exit 3' HUP; echo ready; while :; do sleep 1 & wait $!; done"}),
      24, 80, {"TERM=xterm"}, /*controlling=*/false);
  ASSERT_TRUE(terminal.WaitFor("ready", kWatchdog)) << terminal.Printable();
  terminal.Close();
  EXPECT_EQ(terminal.Wait(kWatchdog), 3);
  EXPECT_EQ(ReadFile(marker).value_or("<none>"), "hup\n");
}

TEST_F(RunTtyTest, TerminalRestoredWhenRunIsInterrupted) {
  auto terminal = Start({"sh", "-c", "echo ready; sleep 100"});
  WAIT_FOR(terminal, "ready");
  kill(terminal->pid(), SIGTERM);
  EXPECT_EQ(terminal->Wait(kWatchdog), 128 + SIGTERM) << terminal->Printable();
  ExpectModesRestored(*terminal);
}

TEST_F(RunTtyTest, TerminalRestoredWhenAgentIsKilled) {
  auto terminal = Start({"sh", "-c", "echo ready; kill -KILL $$"});
  EXPECT_EQ(terminal->Wait(kWatchdog), 128 + SIGKILL) << terminal->Printable();
  ExpectModesRestored(*terminal);
}

TEST_F(RunTtyTest, TerminalRestoredAfterTimeout) {
  auto terminal = Start({"sh", "-c", "echo ready; sleep 100"}, {"--timeout", "10"});
  WAIT_FOR(terminal, "ready");
  EXPECT_EQ(terminal->Wait(kWatchdog), 124) << terminal->Printable();
  ExpectModesRestored(*terminal);
}

// The agent's last output is relayed before `run` ends, however much there is.
TEST_F(RunTtyTest, LastOutputIsNotLost) {
  auto terminal = Start({"sh", "-c",
                         "i=0; while [ $i -lt 2000 ]; do echo line-$i; i=$((i+1)); done;"
                         " echo last-line; exit 4"});
  EXPECT_EQ(terminal->Wait(kWatchdog), 4) << terminal->Printable();
  EXPECT_NE(terminal->output().find("line-1999\r\nlast-line\r\n"), std::string::npos)
      << terminal->Printable().substr(0, 2000);
}

// An agent that writes and exits at once may end the sandbox before `run` took its terminal:
// its bytes still reach the caller, exactly (nothing lost, nothing added), on a terminal and
// with --tty when the caller's output is a pipe.
TEST_F(RunTtyTest, AgentThatExitsAtOnceDeliversExactlyItsBytes) {
  auto terminal = Start({"sh", "-c", "printf a"});
  EXPECT_EQ(terminal->Wait(kWatchdog), 0) << terminal->Printable();
  // `run`'s own lines (the dispatch, notices) come first, each ending with CR LF.
  const std::string& out = terminal->output();
  const size_t own_lines_end = out.rfind("\r\n");
  ASSERT_NE(own_lines_end, std::string::npos) << terminal->Printable();
  EXPECT_EQ(out.substr(own_lines_end + 2), "a") << terminal->Printable();

  RunResult piped = RunAteam(Options({"--tty"}), {"sh", "-c", "printf a"});
  EXPECT_EQ(piped.exit_code, 0) << Describe(piped);
  EXPECT_EQ(piped.out, "a") << Describe(piped);
}

// Whether this kernel still tells a socket's peer by its process once that process was
// reaped (relay/peer_check.h): a child connects and exits, is reaped, then its connection
// is accepted and compared with the child's pidfd.
bool KernelNamesReapedPeers() {
  Fd listener(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string name = "sbx-tty-test-peer-" + std::to_string(getpid());
  name.copy(addr.sun_path + 1, name.size());
  const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  if (bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
      listen(listener.get(), 1) != 0) {
    return false;
  }
  auto child = base::CloneWithPidfd(0, "a peer that exits at once");
  if (!child) return false;
  if (child->pid == 0) {
    const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    _exit(connect(fd, reinterpret_cast<sockaddr*>(&addr), len) == 0 ? 0 : 1);
  }
  siginfo_t info{};
  (void)waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(child->pidfd.get()), &info,
               WEXITED);
  Fd connection(accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
  return connection && relay::ComparePeerProcess(connection.get(), child->pidfd.get()) ==
                           relay::PeerProcess::kSame;
}

// Agents that print and exit at once, dispatch after dispatch: every one's output reaches
// the caller and no terminal (or start report) channel is refused. Under bwrap the
// supervisor is often reaped (by bwrap) before `run` takes its handover; the peer check
// still knows it by the pidfd taken while bwrap held it.
TEST_F(RunTtyTest, AgentsThatExitAtOnceAreNeverRefused) {
  if (Backend() == "bwrap" && !KernelNamesReapedPeers()) {
    GTEST_SKIP() << "this kernel gives no pidfs pidfd of a reaped socket peer (Linux 6.16): "
                    "under bwrap a handover taken after bwrap reaped the supervisor is refused";
  }
  for (int i = 0; i < 20; ++i) {
    const std::string word = "fast-agent-" + std::to_string(i);
    RunResult run = RunAteam(Options({"--tty"}), {"sh", "-c", "printf " + word});
    EXPECT_EQ(run.exit_code, 0) << Describe(run);
    EXPECT_EQ(run.out, word) << Describe(run);
    EXPECT_EQ(run.err.find("refused"), std::string::npos) << Describe(run);
  }
}

}  // namespace
}  // namespace sbx::integration::run

namespace sbx::integration::run {
namespace {

// The real claude's full-screen UI, as a user meets it with the README's example
// (`--agent claude --credentials ~/.claude/.credentials.json -- claude` at a terminal): the
// first screen at the terminal's size with no first-run questions (the preset's state:
// onboarding done, the workspace trusted), a prompt typed and answered (by the fake
// api.anthropic.com, through the tunnel), and Ctrl-C twice to leave. Nothing of claude's
// is prepared by the test but a login's credentials file.
TEST(RunTtyAgentTest, ClaudeInteractiveSession) {
  std::string missing = MissingPrerequisite({"sh"});
  if (missing.empty()) missing = AgentsUnavailableReason();
  if (!missing.empty()) GTEST_SKIP() << "\n*** AGENT TEST NOT RUN: " << missing << " ***\n";
  FakeAnthropic api;
  ASSERT_TRUE(api.ok()) << api.failure();
  TempDir work, out;
  RootTempDir host;
  // A login's credentials as `claude` writes them, valid for a day (milliseconds).
  const std::string creds = host.Sub("credentials.json");
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
  // In the workspace, root's: `run` lends it to the dispatch's leased uid for the run.
  HandToSandboxUser(work.path());
  const std::string to = "=127.0.0.1:" + std::to_string(api.port());
  Args options = {"--workspace",   work.path(),
                  "--out",         out.path(),
                  "--agent",       "claude",
                  "--credentials", creds,
                  "--allow",       "api.anthropic.com" + to,
                  "--allow",       "platform.claude.com" + to,
                  "--ro",          api.ca_path(),
                  "--setenv",      "NODE_EXTRA_CA_CERTS=" + api.ca_path(),
                  "--timeout",     "150"};
  const char* path = std::getenv("PATH");
  PtyTerminal terminal(RunArgv(options, {"claude"}), 40, 160,
                       {"PATH=" + AgentsBinDir() + ":" + (path != nullptr ? path : "/usr/bin"),
                        "TERM=xterm-256color"});
  termios before = terminal.Modes();
  auto screen = [&] { return terminal.Text() + "\nfake server log:\n" + api.Log(); };
  // The first screen: the input line with its hint under it.
  ASSERT_TRUE(terminal.WaitForText("? for shortcuts", seconds(90))) << screen();
  // Typed keys show in the input line before Enter sends them (keys and Enter in one
  // write would look like a paste).
  terminal.Type("hello");
  ASSERT_TRUE(terminal.WaitForText("hello", kWatchdog)) << screen();
  terminal.Type("\r");
  ASSERT_TRUE(terminal.WaitForText(kFakeReply, seconds(90))) << screen();
  // Ctrl-C on an empty input asks for a second one, which leaves. Claude Code forgets the
  // first one after a moment, and on a loaded machine that moment can pass before the
  // second key reaches it; it then shows its hint again, and the pair is typed again.
  auto exit_prompts = [&] {
    const std::string text = terminal.Text();
    size_t count = 0;
    for (size_t at = text.find("again to exit"); at != std::string::npos;
         at = text.find("again to exit", at + 1)) {
      ++count;
    }
    return count;
  };
  // A turn still running when the reply shows (its spinner, "esc to interrupt") takes a
  // Ctrl-C as an interrupt and asks nothing: then the next attempt types it again.
  bool ended = false;
  for (int attempt = 0; attempt < 5 && !ended; ++attempt) {
    const size_t prompts = exit_prompts();
    terminal.Type("\x03");
    const auto patience = std::chrono::steady_clock::now() + seconds(15);
    bool asked = false;
    while (!(asked = exit_prompts() > prompts) && std::chrono::steady_clock::now() < patience &&
           !terminal.Ended(std::chrono::milliseconds(100))) {
    }
    if (!asked && !terminal.Ended(std::chrono::milliseconds(0))) continue;
    terminal.Type("\x03");
    ended = terminal.Ended(seconds(20));
  }
  ASSERT_TRUE(ended) << screen();
  EXPECT_EQ(terminal.Wait(seconds(90)), 0) << screen();
  termios after = terminal.Modes();
  EXPECT_TRUE(SameModes(before, after))
      << "before: " << DescribeModes(before) << "\nafter:  " << DescribeModes(after);
}

}  // namespace
}  // namespace sbx::integration::run
