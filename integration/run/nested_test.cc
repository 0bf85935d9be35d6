// `ateam-sandbox run` inside outer namespaces that look like containers, and refused by
// outer layers the way containers refuse it.
//
// Nested: `unshare -Urpf --mount-proc` (uid 0 of a user namespace that maps only the
// caller, as a rootless container or a `hostUsers: false` pod with one id) and the same
// with a subordinate id range mapped by newuidmap (as rootless Podman maps). The outer
// namespace also gets its own /tmp, as a container has, so everything the test uses lives
// below /var/tmp.
// Blocked: an outer seccomp filter that answers unshare/clone with CLONE_NEWUSER with
// EPERM and clone3 with ENOSYS (Docker's default profile does both), and
// user.max_user_namespaces=0 written in an outer user namespace: `run` exits 125 with one
// line pointing to `doctor`, and `doctor` names the blocker.
#include <gtest/gtest.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "integration/run/run_support.h"

namespace sbx::integration::run {
namespace {

constexpr const char* kDenyUsernsEnv = "SBX_NESTED_DENY_USERNS_EXEC";

#if defined(__x86_64__)
constexpr uint32_t kAuditArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr uint32_t kAuditArch = AUDIT_ARCH_AARCH64;
#else
#error "nested_test: add this architecture's AUDIT_ARCH"
#endif

// When run_test is started with kDenyUsernsEnv set, it is not a test run: it installs a
// filter like a container runtime's and executes its arguments under it. Done before main,
// so no test framework state exists yet.
// The value "clone3" refuses only clone3 (ENOSYS); any other also refuses user namespaces.
[[gnu::constructor]] void DenyUserNamespacesAndExec() {
  const char* mode = std::getenv(kDenyUsernsEnv);
  if (mode == nullptr) return;
  const bool clone3_only = std::string(mode) == "clone3";
  std::ifstream in("/proc/self/cmdline");
  std::vector<std::string> words;
  for (std::string word; std::getline(in, word, '\0');) words.push_back(word);
  if (words.size() < 2) ::_exit(127);
  ::unsetenv(kDenyUsernsEnv);
  // The low 32 bits of the first argument hold the namespace flags of clone and unshare.
  const auto flags_low = static_cast<uint32_t>(offsetof(seccomp_data, args[0]));
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kAuditArch, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone3, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_unshare, 1, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone, 0, 3),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, flags_low),
      BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_NEWUSER, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  // clone3_only: the program stops after the clone3 test, allowing everything else.
  const size_t length = clone3_only ? 7 : sizeof(filter) / sizeof(filter[0]);
  if (clone3_only) filter[6] = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  sock_fprog prog{static_cast<unsigned short>(length), filter};
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
      ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
    ::_exit(126);
  }
  std::vector<char*> argv;
  for (size_t i = 1; i < words.size(); ++i) argv.push_back(words[i].data());
  argv.push_back(nullptr);
  ::execvp(argv[0], argv.data());
  ::_exit(127);
}

std::string SelfExe() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

// Lines of `text` that are not empty.
size_t LineCount(const std::string& text) {
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) +
         (text.empty() || text.back() == '\n' ? 0 : 1);
}

class NestedRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string missing = MissingPrerequisite({"sh", "unshare", "cp", "rm", "mount", "git"});
    if (!missing.empty()) GTEST_SKIP() << missing;
    char dir[] = "/var/tmp/sbx-nested.XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr) << "mkdtemp below /var/tmp: " << errno;
    dir_ = dir;
    ASSERT_EQ(::chmod(dir_.c_str(), 0755), 0);
    // The copy the outer namespace runs: the original may sit below the /tmp it replaces.
    ASSERT_EQ(RunCommand({"cp", AteamPath(), dir_ + "/ateam-sandbox"}).exit_code, 0);
    for (const char* sub : {"/ws", "/root"}) ASSERT_EQ(::mkdir((dir_ + sub).c_str(), 0755), 0);
  }
  void TearDown() override {
    if (!dir_.empty()) RunCommand({"rm", "-rf", dir_});
  }

  // `script` run by sh in the outer namespace made by `unshare unshare_args -mpf
  // --mount-proc`, after a fresh /tmp and /run are mounted there, as a container has its
  // own (a root caller keeps its state directory under /run). $A is our binary, $D the
  // test dir.
  RunResult InOuterNamespace(const Args& unshare_args, const std::string& script) {
    Args argv = {"unshare"};
    argv.insert(argv.end(), unshare_args.begin(), unshare_args.end());
    argv.insert(argv.end(),
                {"-mpf", "--mount-proc", "sh", "-c",
                 "mount -t tmpfs tmpfs /tmp && mount -t tmpfs tmpfs /run && " + script, "sh"});
    return RunCommand(argv, WithEnv({"A=" + dir_ + "/ateam-sandbox", "D=" + dir_}));
  }

  // A git repository with one commit, for --repo.
  std::string MakeRepo() {
    const std::string repo = dir_ + "/repo";
    const std::string git = "git -c user.name=t -c user.email=t@t -c init.defaultBranch=main";
    EXPECT_EQ(RunCommand({"sh", "-c",
                          git + " init -q " + repo + " && echo present > " + repo + "/README && " +
                              git + " -C " + repo + " add README && " + git + " -C " + repo +
                              " commit -qm one"})
                  .exit_code,
              0);
    return repo;
  }

  std::string dir_;
};

// uid 0 of a user namespace that maps only the caller: `run` must not take itself for host
// root (the overflow uid it would hand the workspace to does not exist there).
TEST_F(NestedRunTest, RootOfASingleIdNamespaceRunsWithAWorkspace) {
  auto r = InOuterNamespace(
      {"-r"}, "$A run --backend " + Backend() + " --workspace $D/ws -- sh -c 'echo made > made'");
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(ReadFile(dir_ + "/ws/made").value_or(""), "made\n");
  struct stat info {};
  ASSERT_EQ(::stat((dir_ + "/ws/made").c_str(), &info), 0);
  EXPECT_EQ(info.st_uid, ::getuid()) << "the file belongs to the caller, nobody else";
}

TEST_F(NestedRunTest, RootOfASingleIdNamespaceRunsWithARepo) {
  MakeRepo();
  auto r = InOuterNamespace({"-r"}, "$A run --backend " + Backend() +
                                        " --repo $D/repo --workspace-root $D/root -- cat README");
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, "present\n");
}

// The tunnel from inside the outer namespace: the relay runs there, the upstream is on the
// host's loopback (the outer namespace shares the network, as a pod shares its node's
// route to the upstream).
TEST_F(NestedRunTest, RootOfASingleIdNamespaceReachesARoute) {
  ASSERT_EQ(RunCommand({"cp", NetClientPath(), dir_ + "/run_netclient"}).exit_code, 0);
  EchoServer echo;
  auto r = InOuterNamespace(
      {"-r"}, "$A run --backend " + Backend() +
                  " --workspace $D/ws --ro $D/run_netclient --allow api.example.test=127.0.0.1:" +
                  std::to_string(echo.port()) +
                  ",tcp -- $D/run_netclient concurrent api.example.test 443 3");
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Report report = ParseReport(r.out);
  EXPECT_EQ(Get(report, "echoed"), "3") << Describe(r);
  EXPECT_EQ(echo.accepted(), 3);
}

// A subordinate range mapped by newuidmap (0 = the caller, 1.. = /etc/subuid's range): the
// overflow id is mapped, so root mode hands the workspace to it, as in a rootless Podman
// container or a pod with hostUsers: false.
TEST_F(NestedRunTest, RootOfARangeMappedNamespaceHandsTheSandboxToAMappedId) {
  const std::string uids = SubordinateRange("/etc/subuid");
  const std::string gids = SubordinateRange("/etc/subgid");
  if (uids.empty() || gids.empty()) {
    GTEST_SKIP() << "/etc/subuid or /etc/subgid grants this user no range for newuidmap";
  }
  if (RunCommand({"sh", "-c", "command -v newuidmap"}).exit_code != 0) {
    GTEST_SKIP() << "newuidmap is not installed (package uidmap)";
  }
  const Args map = {
      "-r",
      "--map-users=" + uids.substr(0, uids.find(',')) + ",1," + uids.substr(uids.find(',') + 1),
      "--map-groups=" + gids.substr(0, gids.find(',')) + ",1," + gids.substr(gids.find(',') + 1)};
  // The files end up owned by subordinate ids, so only the namespace's root removes them.
  // The host's /etc/subuid and /etc/subgid are hidden inside: a range they give root's
  // dispatches (the package's ateam-sandbox entry) names host ids, which this namespace
  // does not map, and `run` rightly refuses a configured range it cannot use.
  auto r = InOuterNamespace(
      map,
      ": > /run/no-ranges && mount --bind /run/no-ranges /etc/subuid && "
      "mount --bind /run/no-ranges /etc/subgid && $A run --backend " +
          Backend() +
          " --workspace $D/ws --workspace-root $D/root -- sh -c 'id -u > who'; rc=$?; "
          "cat $D/ws/who; rm -rf $D/ws $D/root; exit $rc");
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, "65534\n") << "the sandbox runs as the namespace's overflow id";
}

class BlockedRunTest : public NestedRunTest {};

TEST_F(BlockedRunTest, SeccompRefusingUserNamespacesIsNamedByDoctorAndRun) {
  const std::string self = SelfExe();
  ASSERT_FALSE(self.empty());
  auto run = RunCommand({self, dir_ + "/ateam-sandbox", "run", "--backend", Backend(),
                         "--workspace", dir_ + "/ws", "--", "true"},
                        WithEnv({std::string(kDenyUsernsEnv) + "=1"}));
  EXPECT_EQ(run.exit_code, 125) << Describe(run);
  EXPECT_EQ(LineCount(run.err), 1U) << Describe(run);
  EXPECT_NE(run.err.find("(Operation not permitted): run `ateam-sandbox doctor`"),
            std::string::npos)
      << Describe(run);
  auto doctor = RunCommand({self, dir_ + "/ateam-sandbox", "doctor"},
                           WithEnv({std::string(kDenyUsernsEnv) + "=1"}));
  EXPECT_EQ(doctor.exit_code, 1) << Describe(doctor);
  EXPECT_NE(doctor.out.find("\nFAIL seccomp-filter: "), std::string::npos) << doctor.out;
  EXPECT_NE(doctor.out.find("seccomp blocks the sandbox"), std::string::npos) << doctor.out;
  EXPECT_NE(doctor.out.find("--security-opt seccomp=unconfined"), std::string::npos) << doctor.out;
  // clone3 answered with ENOSYS is what run falls back from, so doctor must not fail it.
  EXPECT_NE(doctor.out.find("\ninfo clone3-pidfd: clone3: ENOSYS"), std::string::npos)
      << doctor.out;
}

// ENOSYS for clone3 alone (Docker's default answer, to send libc back to clone) must not
// stop run: it falls back to clone, and doctor agrees.
TEST_F(BlockedRunTest, Clone3EnosysAloneStillRuns) {
  const std::string self = SelfExe();
  ASSERT_FALSE(self.empty());
  const std::string env = std::string(kDenyUsernsEnv) + "=clone3";
  auto run = RunCommand({self, dir_ + "/ateam-sandbox", "run", "--backend", Backend(),
                         "--workspace", dir_ + "/ws", "--", "sh", "-c", "echo ran"},
                        WithEnv({env}));
  EXPECT_EQ(run.exit_code, 0) << Describe(run);
  EXPECT_EQ(run.out, "ran\n");
  auto doctor = RunCommand({self, dir_ + "/ateam-sandbox", "doctor"}, WithEnv({env}));
  EXPECT_NE(doctor.out.find("\ninfo clone3-pidfd: clone3: ENOSYS"), std::string::npos)
      << doctor.out;
  EXPECT_EQ(doctor.out.find("FAIL clone3"), std::string::npos) << doctor.out;
  EXPECT_EQ(doctor.out.find("FAIL seccomp-filter"), std::string::npos) << doctor.out;
}

TEST_F(BlockedRunTest, MaxUserNamespacesZeroIsNamedByDoctorAndRun) {
  const std::string zero = "echo 0 > /proc/sys/user/max_user_namespaces && ";
  auto run = InOuterNamespace(
      {"-r"}, zero + "$A run --backend " + Backend() + " --workspace $D/ws -- true");
  EXPECT_EQ(run.exit_code, 125) << Describe(run);
  EXPECT_EQ(LineCount(run.err), 1U) << Describe(run);
  EXPECT_NE(run.err.find("(No space left on device): run `ateam-sandbox doctor`"),
            std::string::npos)
      << Describe(run);
  auto doctor = InOuterNamespace({"-r"}, zero + "$A doctor");
  EXPECT_EQ(doctor.exit_code, 1) << Describe(doctor);
  EXPECT_NE(doctor.out.find("FAIL max_user_namespaces: 0"), std::string::npos) << doctor.out;
  EXPECT_NE(doctor.out.find("user.max_user_namespaces is 0 in this user namespace"),
            std::string::npos)
      << doctor.out;
}

// The masks a container runtime puts over /proc (files covered with /dev/null, /proc/sys
// read-only): the kernel refuses the sandbox a fresh /proc, and run refuses to go on without
// one (docs/fleet.md says why).
TEST_F(BlockedRunTest, MaskedProcIsNamedByDoctorAndRun) {
  const std::string mask =
      "for f in /proc/timer_list /proc/keys /proc/kcore; do [ -e $f ] && mount --bind /dev/null "
      "$f; done; mount --bind /proc/sys /proc/sys && mount -o remount,bind,ro /proc/sys && ";
  auto run = InOuterNamespace(
      {"-r"}, mask + "$A run --backend " + Backend() + " --workspace $D/ws -- true");
  EXPECT_EQ(run.exit_code, 125) << Describe(run);
  EXPECT_EQ(LineCount(run.err), 1U) << Describe(run);
  EXPECT_NE(run.err.find("can't mount a fresh /proc for the sandbox"), std::string::npos)
      << Describe(run);
  EXPECT_NE(run.err.find("run `ateam-sandbox doctor`"), std::string::npos) << Describe(run);
  auto doctor = InOuterNamespace({"-r"}, mask + "$A doctor");
  EXPECT_EQ(doctor.exit_code, 1) << Describe(doctor);
  EXPECT_NE(doctor.out.find("FAIL proc: masked /proc ("), std::string::npos) << doctor.out;
  EXPECT_NE(doctor.out.find("/proc/sys read-only"), std::string::npos) << doctor.out;
  EXPECT_NE(doctor.out.find("procMount: Unmasked"), std::string::npos) << doctor.out;
}

}  // namespace
}  // namespace sbx::integration::run
