// Applies capability plans for real, each in a forked child that then execs
// `cat /proc/self/status`, and compares three things: what the kernel model predicts, what
// our child ends up with, and what the real bwrap (/usr/bin/bwrap) gives the same command.
// Root-caller cases need root; unprivileged cases drop to an unprivileged uid when run as
// root, or run as the current user otherwise.
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <linux/capability.h>

#include <cerrno>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "base/unique_fd.h"
#include "security/capabilities.h"

namespace sbx::security {
namespace {

constexpr char kBwrap[] = "/usr/bin/bwrap";
constexpr char kCat[] = "/bin/cat";

struct NamedChange {
  CapChange change;
  const char* bwrap_name;  // "ALL" or "CAP_..."
};

struct Scenario {
  const char* name;
  bool root;    // caller is root; otherwise an unprivileged caller (always a new userns)
  bool userns;  // root only: --unshare-user
  std::optional<uid_t> uid;  // --uid
  std::vector<NamedChange> changes;
};

NamedChange Add(int cap, const char* name) { return {{CapChange::Kind::kAdd, cap}, name}; }
NamedChange Drop(int cap, const char* name) { return {{CapChange::Kind::kDrop, cap}, name}; }
NamedChange AddAll() { return {{CapChange::Kind::kAdd, std::nullopt}, "ALL"}; }
NamedChange DropAll() { return {{CapChange::Kind::kDrop, std::nullopt}, "ALL"}; }

std::string ReadAll(int fd) {
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

int LastCap() {
  std::ifstream in("/proc/sys/kernel/cap_last_cap");
  int last = 40;
  in >> last;
  return last;
}

uid_t UnprivilegedUid() {
  const passwd* pw = getpwnam("sbxtest");
  return pw != nullptr ? pw->pw_uid : 65534;
}

// In a child: become an unprivileged caller (only when we are root).
// The uid change makes the process non-dumpable, which would leave /proc/self owned by
// root and its uid_map unwritable; an exec'd bwrap is dumpable again, so we match that.
bool DropToUnprivileged() {
  if (getuid() != 0) return true;
  const uid_t uid = UnprivilegedUid();
  return setgroups(0, nullptr) == 0 && setresgid(uid, uid, uid) == 0 &&
         setresuid(uid, uid, uid) == 0 && prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) == 0;
}

bool WriteFile(const char* path, const std::string& text) {
  const int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  return ok;
}

// What bwrap's child does before capabilities: a user namespace whose maps it writes itself.
bool EnterUserNamespace(uid_t sandbox_uid) {
  const uid_t outer_uid = getuid();
  const gid_t outer_gid = getgid();
  if (unshare(CLONE_NEWUSER) != 0) return false;
  return WriteFile("/proc/self/uid_map",
                   std::to_string(sandbox_uid) + " " + std::to_string(outer_uid) + " 1\n") &&
         WriteFile("/proc/self/setgroups", "deny\n") &&
         WriteFile("/proc/self/gid_map",
                   std::to_string(outer_gid) + " " + std::to_string(outer_gid) + " 1\n");
}

// Forks; the child runs `setup` (exit code 100+ on failure) and execs argv with stdout on a
// pipe, or with an empty argv copies its own /proc/self/status there (no exec, which would
// give uid 0 its capabilities back). Returns the child's stdout; `status` gets its wait
// status.
template <typename Setup>
std::string RunCapturing(Setup setup, const std::vector<std::string>& argv, int* status) {
  auto pipe = base::MakePipe();
  if (!pipe) return {};
  const pid_t pid = fork();
  if (pid == 0) {
    if (dup2(pipe->write_end.get(), STDOUT_FILENO) < 0) _exit(120);
    if (int rc = setup(); rc != 0) _exit(rc);
    if (argv.empty()) {
      const int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
      const std::string text = ReadAll(fd);
      _exit(write(STDOUT_FILENO, text.data(), text.size()) == static_cast<ssize_t>(text.size())
                ? 0
                : 121);
    }
    std::vector<char*> args;
    args.reserve(argv.size() + 1);
    for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  pipe->write_end.reset();
  std::string out = ReadAll(pipe->read_end.get());
  waitpid(pid, status, 0);
  return out;
}

void PrintTo(const Scenario& scenario, std::ostream* os) { *os << scenario.name; }

class CapApplyTest : public ::testing::TestWithParam<Scenario> {};

TEST_P(CapApplyTest, MatchesPredictionAndRealBwrap) {
  const Scenario& sc = GetParam();
  if (sc.root && getuid() != 0) GTEST_SKIP() << "root-caller case: run the test as root";
  const int last_cap = LastCap();
  const bool userns = sc.userns || !sc.root;
  const uid_t caller_uid = sc.root ? 0 : (getuid() == 0 ? UnprivilegedUid() : getuid());
  const uid_t sandbox_uid = sc.uid.value_or(caller_uid);

  // Parent side: the caller's state, the plan and the prediction.
  std::ifstream status_file("/proc/self/status");
  std::stringstream status_text;
  status_text << status_file.rdbuf();
  auto caller = ParseCapStatus(status_text.str());
  ASSERT_TRUE(caller) << caller.error().Render();
  std::vector<CapChange> changes;
  for (const NamedChange& c : sc.changes) changes.push_back(c.change);
  auto resolved = ResolveCapabilities(sc.root ? caller->effective : 0, changes, last_cap);
  ASSERT_TRUE(resolved) << resolved.error().Render();
  const CapPlan plan = DecideCapabilities({.caller_is_root = sc.root,
                                           .new_user_namespace = userns,
                                           .cap_options_used = !changes.empty(),
                                           .resolved = *resolved,
                                           .last_cap = last_cap});
  const CapState before = userns ? FreshUserNamespaceCaps(last_cap) : *caller;
  const auto predicted = PredictCapsAfterExec(plan, before, sandbox_uid);
  ASSERT_TRUE(predicted.has_value());

  // Our child, in bwrap's order.
  int status = 0;
  const std::string ours_text = RunCapturing(
      [&]() -> int {
        if (!sc.root && !DropToUnprivileged()) return 101;
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return 102;
        if (userns && !EnterUserNamespace(sandbox_uid)) return 103;
        if (ApplyCapPlanBounding(plan) != 0) return 104;
        if (ApplyCapPlanSets(plan) != 0) return 105;
        if (ApplyCapPlanAmbient(plan) != 0) return 106;
        return 0;
      },
      {kCat, "/proc/self/status"}, &status);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  auto ours = ParseCapStatus(ours_text);
  ASSERT_TRUE(ours) << ours.error().Render();
  EXPECT_EQ(*ours, *predicted) << std::hex << "ours: prm " << ours->permitted << " bnd "
                               << ours->bounding << " amb " << ours->ambient;

  if (access(kBwrap, X_OK) != 0) GTEST_SKIP() << kBwrap << " missing: no comparison with bwrap";
  std::vector<std::string> argv = {kBwrap, "--ro-bind", "/", "/"};
  if (sc.userns) argv.emplace_back("--unshare-user");
  if (sc.uid.has_value()) argv.insert(argv.end(), {"--uid", std::to_string(*sc.uid)});
  for (const NamedChange& c : sc.changes) {
    argv.emplace_back(c.change.kind == CapChange::Kind::kAdd ? "--cap-add" : "--cap-drop");
    argv.emplace_back(c.bwrap_name);
  }
  argv.insert(argv.end(), {kCat, "/proc/self/status"});
  const std::string bwrap_text = RunCapturing(
      [&]() -> int { return sc.root || DropToUnprivileged() ? 0 : 101; }, argv, &status);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "bwrap status " << status;
  auto theirs = ParseCapStatus(bwrap_text);
  ASSERT_TRUE(theirs) << theirs.error().Render();
  EXPECT_EQ(*ours, *theirs) << std::hex << "bwrap: prm " << theirs->permitted << " bnd "
                            << theirs->bounding << " amb " << theirs->ambient;
}

INSTANTIATE_TEST_SUITE_P(
    Table, CapApplyTest,
    ::testing::Values(
        Scenario{"RootNone", true, false, std::nullopt, {}},
        Scenario{"RootUserns", true, true, std::nullopt, {}},
        Scenario{"RootUsernsUid1000", true, true, 1000, {}},
        Scenario{"RootDropAll", true, false, std::nullopt, {DropAll()}},
        Scenario{
            "RootDropSysAdmin", true, false, std::nullopt, {Drop(CAP_SYS_ADMIN, "CAP_SYS_ADMIN")}},
        Scenario{
            "RootAddNetAdmin", true, false, std::nullopt, {Add(CAP_NET_ADMIN, "CAP_NET_ADMIN")}},
        Scenario{"RootDropAllAddNetAdmin",
                 true,
                 false,
                 std::nullopt,
                 {DropAll(), Add(CAP_NET_ADMIN, "CAP_NET_ADMIN")}},
        Scenario{"RootAddAll", true, false, std::nullopt, {AddAll()}},
        Scenario{"RootUsernsAddNetAdminUid1000",
                 true,
                 true,
                 1000,
                 {Add(CAP_NET_ADMIN, "CAP_NET_ADMIN")}},
        Scenario{"RootUsernsDropAllAddNetAdmin",
                 true,
                 true,
                 std::nullopt,
                 {DropAll(), Add(CAP_NET_ADMIN, "CAP_NET_ADMIN")}},
        Scenario{"RootUsernsDropSysAdminUid1000",
                 true,
                 true,
                 1000,
                 {Drop(CAP_SYS_ADMIN, "CAP_SYS_ADMIN")}},
        Scenario{"RootUsernsAddAllUid1000", true, true, 1000, {AddAll()}},
        Scenario{"UserNone", false, false, std::nullopt, {}},
        Scenario{"UserNoneUid0", false, false, 0, {}},
        Scenario{"UserDropAllUid0", false, false, 0, {DropAll()}},
        Scenario{
            "UserAddNetAdmin", false, false, std::nullopt, {Add(CAP_NET_ADMIN, "CAP_NET_ADMIN")}},
        Scenario{"UserAddNetAdminUid0", false, false, 0, {Add(CAP_NET_ADMIN, "CAP_NET_ADMIN")}},
        Scenario{
            "UserAddNetAdminUid1000", false, false, 1000, {Add(CAP_NET_ADMIN, "CAP_NET_ADMIN")}},
        Scenario{"UserAddAll", false, false, std::nullopt, {AddAll()}},
        Scenario{"UserAddAllUid0", false, false, 0, {AddAll()}},
        Scenario{"UserAddAllDropSysAdmin",
                 false,
                 false,
                 std::nullopt,
                 {AddAll(), Drop(CAP_SYS_ADMIN, "CAP_SYS_ADMIN")}}),
    [](const ::testing::TestParamInfo<Scenario>& param_info) {
      return std::string(param_info.param.name);
    });

// The pid-1 reaper's step: nothing left afterwards, ambient included.
TEST(ClearAllCapsTest, LeavesNothing) {
  int status = 0;
  const std::string text = RunCapturing(
      [&]() -> int {
        // Outside root, a user namespace gives the child something to clear.
        if (getuid() != 0 && unshare(CLONE_NEWUSER) != 0) return 101;
        return ClearAllCaps(/*tolerate_eperm=*/false) == 0 ? 0 : 102;
      },
      {}, &status);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  auto state = ParseCapStatus(text);
  ASSERT_TRUE(state);
  EXPECT_EQ(state->permitted, 0U);
  EXPECT_EQ(state->effective, 0U);
  EXPECT_EQ(state->inheritable, 0U);
  EXPECT_EQ(state->ambient, 0U);
}

// PR_SET_KEEPCAPS keeps the permitted set across setuid away from root (effective is
// cleared by the kernel all the same).
TEST(SetKeepCapsTest, PermittedSurvivesSetuid) {
  if (getuid() != 0) GTEST_SKIP() << "needs root to setuid";
  const uid_t uid = UnprivilegedUid();
  int status = 0;
  const pid_t pid = fork();
  if (pid == 0) {
    if (SetKeepCaps(true) != 0) _exit(101);
    if (setresuid(uid, uid, uid) != 0) _exit(102);
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2] = {};
    if (syscall(SYS_capget, &header, data) != 0) _exit(103);
    _exit(data[0].permitted != 0 && data[0].effective == 0 ? 0 : 104);
  }
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
}

}  // namespace
}  // namespace sbx::security
