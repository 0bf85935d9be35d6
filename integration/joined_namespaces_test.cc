// --userns, --userns2 and --pidns with real namespaces (docs/bwrap-behaviour.md, "The sequence, as
// seen from outside"): a helper process tree holds a user namespace, a pid namespace owned by it
// and a nested user namespace, the way a container runtime would, and hands their /proc/PID/ns
// files to the sandbox as inherited fds. The probe then shows which namespaces it runs in. Run as
// root and as an unprivileged user (scripts/run_matrix.sh); where the kernel's rules give the two
// callers different outcomes, both are asserted.
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "integration/leftovers.h"
#include "integration/sandbox_test.h"

namespace sbx::integration {
namespace {

std::string Link(const std::string& path) {
  char buf[256] = {};
  ssize_t n = readlink(path.c_str(), buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
}

bool WriteText(const std::string& path, const std::string& text) {
  Fd fd(open(path.c_str(), O_WRONLY | O_CLOEXEC));
  return fd.get() >= 0 &&
         write(fd.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size());
}

[[noreturn]] void SleepForever() {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  for (;;) pause();
}

// The helper tree: H unshares a user namespace (this process writes its maps from outside:
// the caller's ids onto 0, and for root the first 65536 ids), then a pid namespace, and
// forks that namespace's pid 1 (I) and a process in a nested user namespace (N). All of
// them sleep until the destructor kills them.
class NamespaceHolder {
 public:
  NamespaceHolder() = default;
  NamespaceHolder(const NamespaceHolder&) = delete;
  NamespaceHolder& operator=(const NamespaceHolder&) = delete;
  ~NamespaceHolder() {
    for (pid_t pid : {init_pid_, nested_pid_, holder_pid_}) {
      if (pid > 0) kill(pid, SIGKILL);
    }
    if (holder_pid_ > 0) waitpid(holder_pid_, nullptr, 0);
  }

  // Empty on success, else why the tree could not be made.
  std::string Start() {
    Pipe up = MakePipe();
    Pipe down = MakePipe();
    holder_pid_ = fork();
    if (holder_pid_ < 0) return "fork failed";
    if (holder_pid_ == 0) RunHolder(up.write_end.get(), down.read_end.get());
    up.write_end = Fd();
    down.read_end = Fd();
    char byte = 0;
    if (read(up.read_end.get(), &byte, 1) != 1 || byte != 'u') return "helper: unshare user failed";
    const std::string proc = "/proc/" + std::to_string(holder_pid_);
    const std::string range = IsRoot() ? " 65536\n" : " 1\n";
    if (!WriteText(proc + "/setgroups", "deny") ||
        !WriteText(proc + "/uid_map", "0 " + std::to_string(getuid()) + range) ||
        !WriteText(proc + "/gid_map", "0 " + std::to_string(getgid()) + range)) {
      return "can't write the helper's id maps: " + std::string(strerror(errno));
    }
    if (write(down.write_end.get(), "m", 1) != 1) return "helper gone";
    pid_t pids[2] = {};
    if (read(up.read_end.get(), pids, sizeof(pids)) != sizeof(pids)) return "helper: setup failed";
    init_pid_ = pids[0];
    nested_pid_ = pids[1];
    user_ = Open("/proc/" + std::to_string(init_pid_) + "/ns/user");
    pid_ = Open("/proc/" + std::to_string(init_pid_) + "/ns/pid");
    nested_user_ = Open("/proc/" + std::to_string(nested_pid_) + "/ns/user");
    if (user_.get() < 0 || pid_.get() < 0 || nested_user_.get() < 0) return "can't open ns files";
    return "";
  }

  [[nodiscard]] pid_t pid() const { return holder_pid_; }
  [[nodiscard]] int user_fd() const { return user_.get(); }
  [[nodiscard]] int pid_fd() const { return pid_.get(); }
  [[nodiscard]] int nested_user_fd() const { return nested_user_.get(); }
  [[nodiscard]] std::string UserLink() const { return Link(Ns(init_pid_, "user")); }
  [[nodiscard]] std::string PidLink() const { return Link(Ns(init_pid_, "pid")); }
  [[nodiscard]] std::string NestedUserLink() const { return Link(Ns(nested_pid_, "user")); }

 private:
  static std::string Ns(pid_t pid, const char* type) {
    return "/proc/" + std::to_string(pid) + "/ns/" + type;
  }
  static Fd Open(const std::string& path) { return Fd(open(path.c_str(), O_RDONLY | O_CLOEXEC)); }

  // In H (a fork of the single-threaded test process): only plain system calls.
  [[noreturn]] static void RunHolder(int up, int down) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    char byte = unshare(CLONE_NEWUSER) == 0 ? 'u' : 'x';
    if (write(up, &byte, 1) != 1 || byte != 'u') _exit(1);
    if (read(down, &byte, 1) != 1) _exit(1);
    if (unshare(CLONE_NEWPID) != 0) _exit(1);
    pid_t pids[2] = {fork(), -1};
    if (pids[0] == 0) SleepForever();  // pid 1 of the new pid namespace
    // N: a user namespace nested in H's, mapping its own uid 0 (H's root) onto 0. Forked
    // into the new pid namespace too, which is harmless.
    int ready[2];
    if (pipe(ready) != 0) _exit(1);
    pids[1] = fork();
    if (pids[1] == 0) {
      if (unshare(CLONE_NEWUSER) != 0) _exit(1);
      (void)!write(ready[1], "n", 1);
      SleepForever();
    }
    char n = 0;
    if (pids[0] < 0 || pids[1] < 0 || read(ready[0], &n, 1) != 1) _exit(1);
    std::string nested = "/proc/" + std::to_string(pids[1]);
    if (!WriteText(nested + "/uid_map", "0 0 1\n") || !WriteText(nested + "/setgroups", "deny") ||
        !WriteText(nested + "/gid_map", "0 0 1\n")) {
      _exit(1);
    }
    if (write(up, pids, sizeof(pids)) != sizeof(pids)) _exit(1);
    SleepForever();
  }

  pid_t holder_pid_ = -1;
  pid_t init_pid_ = -1;
  pid_t nested_pid_ = -1;
  Fd user_;
  Fd pid_;
  Fd nested_user_;
};

class JoinedNamespacesTest : public SandboxTest {
 protected:
  void SetUp() override {
    SandboxTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    holder_ = std::make_unique<NamespaceHolder>();
    std::string why = holder_->Start();
    if (!why.empty()) GTEST_SKIP() << "cannot create the helper namespaces: " << why;
  }

  // fd 3: the helper's user namespace, 4: its pid namespace, 5: the nested user namespace.
  [[nodiscard]] RunOptions WithFds() const {
    RunOptions run;
    run.pass_fds = {
        {3, holder_->user_fd()}, {4, holder_->pid_fd()}, {5, holder_->nested_user_fd()}};
    return run;
  }

  RunResult Run(const Args& options, const Args& probe_args = {"report"}) const {
    return RunProbe(options, probe_args, WithFds(), ProfileWithoutDev());
  }

  // A --userns2 the monitor cannot join: bwrap's monitor exits before releasing its child,
  // which then waits forever holding stdout/stderr (the native backend kills it). Only the
  // exit is waited for. The orphaned child has come back to the test process (a subreaper,
  // leftovers.h) and is ended here, with whatever it started; the helper tree stays.
  RunResult RunFailingUserns2(const Args& options) const {
    RunOptions run = WithFds();
    run.timeout = std::chrono::milliseconds(2000);
    RunResult r = RunProbe(options, {"report"}, run, ProfileWithoutDev());
    EndLeftovers({holder_->pid()});
    return r;
  }

  static void ExpectFailure(const RunResult& r, const std::string& err) {
    EXPECT_EQ(r.exit_code, 1) << Describe(r);
    EXPECT_EQ(r.err, err) << Describe(r);
  }

  std::unique_ptr<NamespaceHolder> holder_;
};

TEST_F(JoinedNamespacesTest, UsernsRunsTheSandboxInThatNamespace) {
  RunResult r = Run({"--userns", "3"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Report report = ParseReport(r.out);
  EXPECT_EQ(Get(report, "ns.user"), holder_->UserLink());
  // The caller is 0 there; no map was written by the sandbox.
  EXPECT_EQ(Words(Get(report, "uid_map")),
            (std::vector<std::string>{"0", std::to_string(getuid()), IsRoot() ? "65536" : "1"}));
  EXPECT_EQ(Get(report, "uid"), "0");
  EXPECT_EQ(Get(report, "gid"), "0");
  EXPECT_NE(Get(report, "ns.mnt"), HostNamespace("mnt"));
}

TEST_F(JoinedNamespacesTest, UsernsWithGid) {
  RunResult r = Run({"--userns", "3", "--gid", "5"});
  if (!IsRoot()) {
    // Only the caller's own ids are mapped in the helper's namespace.
    ExpectFailure(r, "bwrap: unable to switch to gid 5: Invalid argument\n");
    return;
  }
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Report report = ParseReport(r.out);
  EXPECT_EQ(Get(report, "uid"), "0");
  EXPECT_EQ(Get(report, "gid"), "5");
}

TEST_F(JoinedNamespacesTest, UsernsWithUidSwitchesUidFirst) {
  // setuid comes first and, without KEEPCAPS, takes the capabilities setgid would need.
  RunResult r = Run({"--userns", "3", "--uid", "5", "--gid", "5"});
  ExpectFailure(r, IsRoot() ? "bwrap: unable to switch to gid 5: Operation not permitted\n"
                            : "bwrap: unable to switch to uid 5: Invalid argument\n");
}

TEST_F(JoinedNamespacesTest, PidnsRunsTheSandboxInThatPidNamespace) {
  RunResult r = Run({"--userns", "3", "--pidns", "4"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Report report = ParseReport(r.out);
  EXPECT_EQ(Get(report, "ns.pid"), holder_->PidLink());
  EXPECT_EQ(Get(report, "ns.user"), holder_->UserLink());
  // A fresh procfs of that namespace: its pid 1 (the helper's) is there, no reaper of ours.
  std::vector<std::string> pids = Words(Get(report, "pids"));
  EXPECT_TRUE(Contains(pids, "1")) << Get(report, "pids");
  EXPECT_NE(Get(report, "pid"), "1");
  EXPECT_EQ(Get(report, "ppid"), "0");  // the monitor is outside the namespace
}

TEST_F(JoinedNamespacesTest, PidnsWithUnsharePidNestsANewPidNamespace) {
  Pipe info = MakePipe();
  RunOptions run = WithFds();
  run.pass_fds.emplace_back(6, info.write_end.get());
  RunResult r = RunProbe({"--userns", "3", "--pidns", "4", "--unshare-pid", "--info-fd", "6"},
                         {"report"}, run, ProfileWithoutDev());
  info.write_end = Fd();
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Report report = ParseReport(r.out);
  std::string ns_pid = Get(report, "ns.pid");
  EXPECT_NE(ns_pid, holder_->PidLink());
  EXPECT_NE(ns_pid, HostNamespace("pid"));
  EXPECT_EQ(Get(report, "pid"), "2");  // pid 1 is the reaper in the new namespace
  EXPECT_EQ(Get(report, "pids"), "1 2");
  // The new pid namespace is reported although the clone did not create it.
  std::string inode = ns_pid.substr(ns_pid.find('[') + 1);
  inode.pop_back();
  std::string json = ReadAll(info.read_end.get());
  EXPECT_NE(json.find("\"pid-namespace\": " + inode), std::string::npos) << json;
}

TEST_F(JoinedNamespacesTest, PidnsWithoutItsUserNamespace) {
  // Root may enter any pid namespace; an unprivileged caller's sandbox is in a user
  // namespace of its own, which does not own the helper's pid namespace.
  RunResult r = Run({"--pidns", "4"});
  if (!IsRoot()) {
    ExpectFailure(r,
                  "bwrap: Setting pidns failed: Operation not permitted\n"
                  "bwrap: Unexpected short read from pid socket\n");
    return;
  }
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(Get(ParseReport(r.out), "ns.pid"), holder_->PidLink());
}

TEST_F(JoinedNamespacesTest, Userns2IsEnteredAfterSetup) {
  RunResult r = Run({"--userns", "3", "--userns2", "5"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Report report = ParseReport(r.out);
  EXPECT_EQ(Get(report, "ns.user"), holder_->NestedUserLink());
  EXPECT_EQ(Words(Get(report, "uid_map")), (std::vector<std::string>{"0", "0", "1"}));
}

TEST_F(JoinedNamespacesTest, Userns2WithoutUserns) {
  // The sandbox of an unprivileged caller runs in a user namespace of its own, from which
  // the helper's nested namespace cannot be entered; root's sandbox stays in the initial
  // user namespace, which may enter any.
  RunResult r = Run({"--userns2", "5"});
  if (!IsRoot()) {
    ExpectFailure(r, "bwrap: Setting userns2 failed: Operation not permitted\n");
    return;
  }
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(Get(ParseReport(r.out), "ns.user"), holder_->NestedUserLink());
}

TEST_F(JoinedNamespacesTest, BadFdsGiveBwrapsMessages) {
  ExpectFailure(Run({"--userns", "55"}),
                "bwrap: Joining specified user namespace failed: Bad file descriptor\n");
  ExpectFailure(RunFailingUserns2({"--userns2", "55"}),
                "bwrap: Setting userns2 failed: Bad file descriptor\n");
  ExpectFailure(Run({"--pidns", "55"}),
                "bwrap: Setting pidns failed: Bad file descriptor\n"
                "bwrap: Unexpected short read from pid socket\n");
}

TEST_F(JoinedNamespacesTest, WrongNamespaceTypesGiveBwrapsMessages) {
  const std::string not_descendant =
      "bwrap: Joining the specified user namespace failed, it might not be a descendant of the "
      "current user namespace.\n";
  ExpectFailure(Run({"--userns", "4"}), not_descendant);  // a pid namespace
  ExpectFailure(Run({"--userns", "1"}), not_descendant);  // not a namespace at all
  ExpectFailure(RunFailingUserns2({"--userns2", "4"}),
                "bwrap: Setting userns2 failed: Invalid argument\n");
  ExpectFailure(Run({"--userns", "3", "--pidns", "5"}),
                "bwrap: Setting pidns failed: Invalid argument\n"
                "bwrap: Unexpected short read from pid socket\n");
}

TEST_F(JoinedNamespacesTest, RefusedCombinations) {
  ExpectFailure(Run({"--unshare-user", "--userns", "3"}),
                "bwrap: --userns not compatible --unshare-user\n");
  ExpectFailure(Run({"--unshare-user-try", "--userns", "3"}),
                "bwrap: --userns not compatible --unshare-user-try\n");
}

// The pid bwrap reports on --info-fd/--json-status-fd is how a caller joins a running
// sandbox (flatpak's `enter`): it opens /proc/PID/ns/user and ns/pid and starts a second
// sandbox with --userns/--pidns. That pid must be accessible to its own caller, root or not.
class JoinByReportedPidTest : public SandboxTest {
 protected:
  // Starts a long-running sandbox in new user and pid namespaces that reports on fd 3 with
  // `report_option` (--info-fd or --json-status-fd); returns the child-pid it reported,
  // once the command runs (setup is over: what a caller finds then is what stays).
  static int StartFirst(const std::string& report_option, std::unique_ptr<Process>* first) {
    Pipe report = MakePipe();
    RunOptions run;
    run.pass_fds = {{3, report.write_end.get()}};
    Args options = ProfileWithoutDev();
    options.insert(options.end(),
                   {"--unshare-user", "--unshare-pid", "--die-with-parent", report_option, "3"});
    Args command = {"sh", "-c", std::string("echo started; exec ") + kProbe + " sleep 60"};
    *first = std::make_unique<Process>(Process::Start(BwrapArgv(options, command), run));
    report.write_end = Fd();
    // The first line is the child-pid document (--json-status-fd stays open until exit).
    std::string text;
    char c = 0;
    while (text.find('}') == std::string::npos && read(report.read_end.get(), &c, 1) == 1) {
      text += c;
    }
    size_t key = text.find("\"child-pid\": ");
    if (key == std::string::npos || !(*first)->WaitForOutput("started", std::chrono::seconds(20))) {
      return -1;
    }
    return std::atoi(text.c_str() + key + 13);
  }

  void JoinThroughReportedPid(const std::string& report_option) {
    std::unique_ptr<Process> first;
    int pid = StartFirst(report_option, &first);
    ASSERT_GT(pid, 0) << "no child-pid reported on " << report_option << ", or no start";
    const std::string ns = "/proc/" + std::to_string(pid) + "/ns/";
    Fd user(open((ns + "user").c_str(), O_RDONLY | O_CLOEXEC));
    ASSERT_GE(user.get(), 0) << "open " << ns << "user: " << strerror(errno);
    Fd pidns(open((ns + "pid").c_str(), O_RDONLY | O_CLOEXEC));
    ASSERT_GE(pidns.get(), 0) << "open " << ns << "pid: " << strerror(errno);

    RunOptions run;
    run.pass_fds = {{11, user.get()}, {12, pidns.get()}};
    RunResult r =
        RunProbe({"--userns", "11", "--pidns", "12"}, {"report"}, run, ProfileWithoutDev());
    ASSERT_EQ(r.exit_code, 0) << Describe(r);
    Report report = ParseReport(r.out);
    EXPECT_EQ(Get(report, "ns.user"), Link(ns + "user"));
    EXPECT_EQ(Get(report, "ns.pid"), Link(ns + "pid"));
    // The first sandbox's processes are there: its pid 1 and the sleeping probe.
    EXPECT_TRUE(Contains(Words(Get(report, "pids")), "1")) << Get(report, "pids");
  }
};

TEST_F(JoinByReportedPidTest, InfoFdPidGivesTheSandboxNamespaces) {
  JoinThroughReportedPid("--info-fd");
}

TEST_F(JoinByReportedPidTest, JsonStatusFdPidGivesTheSandboxNamespaces) {
  JoinThroughReportedPid("--json-status-fd");
}

}  // namespace
}  // namespace sbx::integration
