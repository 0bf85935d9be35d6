// Process-level behaviour: exit status propagation, --new-session, --die-with-parent,
// --as-pid-1, --cap-add/--cap-drop, --info-fd and --json-status-fd.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <string>

#include "integration/sandbox_test.h"

namespace sbx::integration {
namespace {

using namespace std::chrono_literals;
using ProcessTest = SandboxTest;

constexpr uint64_t kCapKill = 1ULL << 5;
constexpr uint64_t kCapNetAdmin = 1ULL << 12;

TEST_F(ProcessTest, ExitStatusPropagates) {
  EXPECT_EQ(RunProbe({}, {"exit", "0"}).exit_code, 0);
  EXPECT_EQ(RunProbe({}, {"exit", "42"}).exit_code, 42);
  EXPECT_EQ(RunProbe({"--unshare-pid"}, {"exit", "42"}).exit_code, 42);
}

TEST_F(ProcessTest, DeathBySignalBecomes128PlusSignal) {
  EXPECT_EQ(RunProbe({}, {"kill-self", "15"}).exit_code, 128 + SIGTERM);
  EXPECT_EQ(RunProbe({"--unshare-pid"}, {"kill-self", "15"}).exit_code, 128 + SIGTERM);
  EXPECT_EQ(RunProbe({"--unshare-pid"}, {"kill-self", "9"}).exit_code, 128 + SIGKILL);
}

TEST_F(ProcessTest, SessionIsSharedByDefault) {
  Report r = ReportWith({});
  EXPECT_EQ(Get(r, "sid"), std::to_string(getsid(0)));
  // The session leader lives outside the new pid namespace.
  EXPECT_EQ(Get(ReportWith({"--unshare-pid"}), "sid"), "0");
}

TEST_F(ProcessTest, NewSessionMakesCommandSessionLeader) {
  Report r = ReportWith({"--new-session"});
  EXPECT_EQ(Get(r, "sid"), Get(r, "pid"));
  EXPECT_NE(Get(r, "sid"), std::to_string(getsid(0)));
  // setsid() runs before the pid-1 reaper is forked: reaper and command share the session.
  Report pid_ns = ReportWith({"--new-session", "--unshare-pid"});
  EXPECT_EQ(Get(pid_ns, "sid"), "1");
}

TEST_F(ProcessTest, NewSessionDetachesControllingTerminal) {
  if (access("/dev/ptmx", R_OK | W_OK) != 0) GTEST_SKIP() << "no /dev/ptmx to make a terminal";
  RunOptions run;
  run.controlling_pty = true;
  Report shared = ProbeWith({}, {"try-syscall", "ioctl-tiocsti"}, run);
  // Without --new-session /dev/tty opens (whatever TIOCSTI itself then answers).
  EXPECT_NE(Get(shared, "ioctl-tiocsti"), "ENXIO");
  EXPECT_EQ(shared.count("ioctl-tiocsti"), 1U);
  Report detached = ProbeWith({"--new-session"}, {"try-syscall", "ioctl-tiocsti"}, run);
  EXPECT_EQ(Get(detached, "ioctl-tiocsti"), "ENXIO");
}

// Starts `sh -c '"$@" & wait'` running the sandbox, so that the sandbox's parent (the
// "caller") can be killed on its own.
Process StartSleepingSandboxUnderShell(const Args& options) {
  Args all = TypicalProfile();
  all.insert(all.end(), options.begin(), options.end());
  Args caller = {"/bin/sh", "-c", "\"$@\" & wait", "sh"};
  Args bwrap = BwrapArgv(all, {kProbe, "sleep", "60"});
  caller.insert(caller.end(), bwrap.begin(), bwrap.end());
  return Process::Start(caller);
}

TEST_F(ProcessTest, DieWithParentKillsSandboxWhenCallerDies) {
  for (const Args& extra : {Args{}, Args{"--unshare-pid"}}) {
    Args options = {"--die-with-parent"};
    options.insert(options.end(), extra.begin(), extra.end());
    Process caller = StartSleepingSandboxUnderShell(options);
    ASSERT_TRUE(caller.WaitForOutput("sleeping", 10s)) << caller.out();
    kill(caller.pid(), SIGKILL);  // the caller only, not its process group
    // Every process of the sandbox holds our stdout/stderr pipes: EOF means all are gone.
    EXPECT_TRUE(caller.WaitForEof(10s))
        << "sandbox outlived its caller" << (extra.empty() ? "" : " with --unshare-pid");
  }
}

TEST_F(ProcessTest, WithoutDieWithParentSandboxOutlivesCaller) {
  Process caller = StartSleepingSandboxUnderShell({});
  ASSERT_TRUE(caller.WaitForOutput("\n", 10s)) << caller.out();
  kill(caller.pid(), SIGKILL);
  EXPECT_FALSE(caller.WaitForEof(500ms));
  // No pid namespace: the probe's pid is a host pid. Clean it up ourselves.
  std::string line = caller.out();
  pid_t probe_pid = std::stoi(line.substr(line.find("pid=") + 4));
  ASSERT_GT(probe_pid, 1);
  kill(probe_pid, SIGKILL);
  EXPECT_TRUE(caller.WaitForEof(10s));
}

TEST_F(ProcessTest, AsPid1RunsCommandAsInit) {
  Report r = ReportWith({"--unshare-pid", "--as-pid-1"});
  EXPECT_EQ(Get(r, "pid"), "1");
  EXPECT_EQ(Get(r, "pids"), "1");
  EXPECT_EQ(RunProbe({"--unshare-pid", "--as-pid-1"}, {"exit", "42"}).exit_code, 42);
}

TEST_F(ProcessTest, DefaultCapabilitiesDependOnCaller) {
  Report r = ReportWith({});
  EXPECT_EQ(Get(r, "NoNewPrivs"), "1");
  EXPECT_EQ(Get(r, "Seccomp"), "0");
  EXPECT_EQ(CapMask(Get(r, "CapAmb")), 0U);
  if (IsRoot()) {
    // Root (not setuid) keeps what it had.
    EXPECT_EQ(Get(r, "CapEff"), HostStatus("CapEff"));
    EXPECT_EQ(Get(r, "CapPrm"), HostStatus("CapPrm"));
  } else {
    for (const char* set : {"CapInh", "CapPrm", "CapEff", "CapBnd"}) {
      EXPECT_EQ(CapMask(Get(r, set)), 0U) << set;
    }
  }
}

TEST_F(ProcessTest, CapDropAllLeavesNoCapabilities) {
  Report r = ReportWith({"--cap-drop", "ALL"});
  EXPECT_EQ(CapMask(Get(r, "CapEff")), 0U);
  EXPECT_EQ(CapMask(Get(r, "CapPrm")), 0U);
  EXPECT_EQ(CapMask(Get(r, "CapAmb")), 0U);
}

TEST_F(ProcessTest, CapDropOneCapability) {
  Report r = ReportWith({"--cap-drop", "CAP_KILL"});
  uint64_t expected = IsRoot() ? CapMask(HostStatus("CapEff")) & ~kCapKill : 0;
  EXPECT_EQ(CapMask(Get(r, "CapEff")), expected);
}

TEST_F(ProcessTest, CapAddIsRaisedAsAmbient) {
  Report r = ReportWith({"--cap-drop", "ALL", "--cap-add", "cap_net_admin"});
  EXPECT_EQ(CapMask(Get(r, "CapEff")), kCapNetAdmin);
  EXPECT_EQ(CapMask(Get(r, "CapPrm")), kCapNetAdmin);
  EXPECT_EQ(CapMask(Get(r, "CapAmb")), kCapNetAdmin);
  if (!IsRoot()) {
    EXPECT_EQ(CapMask(Get(r, "CapBnd")), kCapNetAdmin);
  }
}

TEST_F(ProcessTest, CapAddAllThenDropOne) {
  if (IsRoot()) GTEST_SKIP() << "checked for non-root callers only (root keeps its own set)";
  Report r = ReportWith({"--cap-add", "all", "--cap-drop", "CAP_KILL"});
  uint64_t eff = CapMask(Get(r, "CapEff"));
  EXPECT_EQ(eff & kCapKill, 0U);
  EXPECT_NE(eff & kCapNetAdmin, 0U);
}

TEST_F(ProcessTest, CapabilitiesAreUsableInOwnNamespaces) {
  // sethostname needs CAP_SYS_ADMIN over the new UTS namespace. Without --dev: an
  // unprivileged --dev nests the sandbox in a second user namespace that does not own it.
  Args uts = {"--unshare-uts"};
  Args with_cap =
      IsRoot() ? Args{"--unshare-uts"} : Args{"--unshare-uts", "--cap-add", "CAP_SYS_ADMIN"};
  Args without_cap = IsRoot() ? Args{"--unshare-uts", "--cap-drop", "CAP_SYS_ADMIN"} : uts;
  Args probe = {"try-syscall", "sethostname"};
  EXPECT_EQ(Get(ProbeWith(with_cap, probe, {}, ProfileWithoutDev()), "sethostname"), "OK");
  EXPECT_EQ(Get(ProbeWith(without_cap, probe, {}, ProfileWithoutDev()), "sethostname"), "EPERM");
}

// "mnt:[4026531841]" -> "4026531841"
std::string Inode(const std::string& ns_link) {
  size_t open = ns_link.find('[');
  return open == std::string::npos ? ns_link : ns_link.substr(open + 1, ns_link.size() - open - 2);
}

// Runs `probe report` with a pipe as fd 5 named by `fd_option`; returns {report, fd data}.
std::pair<RunResult, std::string> RunWithStatusPipe(const std::string& fd_option,
                                                    const Args& options, const Args& command) {
  Pipe pipe = MakePipe();
  RunOptions run;
  run.pass_fds = {{5, pipe.write_end.get()}};
  Args all = TypicalProfile();
  all.insert(all.end(), {fd_option, "5"});
  all.insert(all.end(), options.begin(), options.end());
  RunResult r = RunCommand(BwrapArgv(all, command), run);
  pipe.write_end.reset();
  return {r, ReadAll(pipe.read_end.get())};
}

TEST_F(ProcessTest, InfoFdReportsChildPidAndMountNamespace) {
  auto [r, info] = RunWithStatusPipe("--info-fd", {}, {kProbe, "report"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Report report = ParseReport(r.out);
  // No pid namespace and no reaper: the child bwrap cloned is the command itself.
  EXPECT_EQ(info, "{\n    \"child-pid\": " + Get(report, "pid") +
                      ",\n    \"mnt-namespace\": " + Inode(Get(report, "ns.mnt")) + "\n}\n");
}

TEST_F(ProcessTest, InfoFdListsCreatedNamespacesInOrder) {
  auto [r, info] = RunWithStatusPipe("--info-fd", {"--unshare-all"}, {kProbe, "report"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Report report = ParseReport(r.out);
  std::string expected = "{\n    \"child-pid\": PID";
  for (const char* ns : {"cgroup", "ipc", "mnt", "net", "pid", "uts"}) {
    std::string inode = Inode(Get(report, std::string("ns.") + ns));
    if (std::string(ns) == "cgroup" && inode == "unavailable") continue;
    expected += ",\n    \"" + std::string(ns) + "-namespace\": " + inode;
  }
  expected += "\n}\n";
  // The child pid is a host pid (of the reaper), unknown inside: check it is a number.
  size_t start = info.find("\"child-pid\": ") + 13;
  size_t end = info.find(',', start);
  ASSERT_NE(end, std::string::npos) << info;
  std::string pid = info.substr(start, end - start);
  EXPECT_GT(std::stol(pid), 1) << info;
  EXPECT_EQ(info.substr(0, start) + "PID" + info.substr(end), expected);
}

TEST_F(ProcessTest, JsonStatusFdReportsStartAndExitCode) {
  auto [r, status] = RunWithStatusPipe("--json-status-fd", {}, {kProbe, "exit", "42"});
  EXPECT_EQ(r.exit_code, 42) << Describe(r);
  auto [r2, status2] = RunWithStatusPipe("--json-status-fd", {}, {kProbe, "report"});
  Report report = ParseReport(r2.out);
  EXPECT_EQ(status2, "{ \"child-pid\": " + Get(report, "pid") + ", \"mnt-namespace\": " +
                         Inode(Get(report, "ns.mnt")) + " }\n{ \"exit-code\": 0 }\n");
  size_t newline = status.find('\n');
  ASSERT_NE(newline, std::string::npos) << status;
  EXPECT_EQ(status.substr(0, 15), "{ \"child-pid\": ");
  EXPECT_EQ(status.substr(newline + 1), "{ \"exit-code\": 42 }\n");
}

TEST_F(ProcessTest, JsonStatusFdExitCodeForSignalInPidNamespace) {
  auto [r, status] =
      RunWithStatusPipe("--json-status-fd", {"--unshare-pid"}, {kProbe, "kill-self", "15"});
  EXPECT_EQ(r.exit_code, 143) << Describe(r);
  EXPECT_NE(status.find("\"pid-namespace\": "), std::string::npos) << status;
  EXPECT_EQ(status.substr(status.find('\n') + 1), "{ \"exit-code\": 143 }\n");
}

TEST_F(ProcessTest, JsonStatusFdHasNoExitCodeWhenExecFails) {
  auto [r, status] = RunWithStatusPipe("--json-status-fd", {}, {"/nonexistent-sbx-command"});
  EXPECT_EQ(r.exit_code, 1) << Describe(r);
  EXPECT_EQ(status.find("exit-code"), std::string::npos) << status;
  EXPECT_EQ(status.substr(0, 15), "{ \"child-pid\": ");
  EXPECT_EQ(std::count(status.begin(), status.end(), '\n'), 1) << status;
}

}  // namespace
}  // namespace sbx::integration
