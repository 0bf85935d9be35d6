// Parity rows: general options, bad input of the command line, namespaces and identity
// (docs/bwrap-behaviour.md).
#include <chrono>
#include <string>

#include "integration/parity/scenario.h"

namespace sbx::integration::parity {
namespace {

using std::string_literals::operator""s;

constexpr char k080NoArgv0[] = "0.8.0 has no --argv0 (added in 0.9.0)";

// See Userns2BadFd.
constexpr std::chrono::milliseconds kOrphanWait{2000};

Args ManyArgs(size_t count) { return Args(count, "--unshare-ipc"); }

}  // namespace

void AddGeneralScenarios(std::vector<Scenario>* table) {
  const Profile none = Profile::kNone;
  table->insert(
      table->end(),
      {
          {.name = "Help",
           .options = {"--help"},
           .command = {},
           .profile = none,
           .exit = 0,
           .out_has = "usage: "},
          {.name = "Version",
           .options = {"--version"},
           .command = {},
           .profile = none,
           .compare = kExitCode | kStderr,
           .known_difference = "the bwrap backend reports the version of the bwrap it runs "
                               "(bubblewrap 0.8.0); we implement 0.11.1",
           .bwrap_stdout = "bubblewrap 0.8.0\n",
           .exit = 0,
           .out_has = "bubblewrap 0.11.1\n"},
          {.name = "NoArguments",
           .options = {},
           .command = {},
           .profile = none,
           .exit = 1,
           .err_has = "usage: "},
          {.name = "OptionsWithoutCommand",
           .options = {"--unshare-ipc", "--chdir", "/"},
           .command = {},
           .profile = none,
           .exit = 1,
           .err_has = "usage: "},
          {.name = "UnknownOption",
           .options = {"--frobnicate"},
           .exit = 1,
           .err_has = "bwrap: Unknown option --frobnicate\n"},
          {.name = "DoubleDashBeforeCommand",
           .options = {"--unshare-uts", "--"},
           .exit = 0,
           .out_has = "argv0: /probe\n"},
          {.name = "TooManyArguments",
           .options = ManyArgs(9001),
           .exit = 1,
           .err_has = "bwrap: Exceeded maximum number of arguments 9000\n"},
          {.name = "ArgsFd",
           .options = {"--args", "5"},
           .fds = {{5, FdSpec::Kind::kData, "--unshare-ipc\0--setenv\0FROM_ARGS\0yes"s}},
           .exit = 0,
           .out_has = "env.FROM_ARGS: yes\n"},
          {.name = "ArgsFdStopsAtWord",
           .options = {"--args", "5"},
           .fds = {{5, FdSpec::Kind::kData, "--unshare-uts\0word\0--unshare-ipc\0"s}},
           .exit = 0},
          {.name = "ArgsNested",
           .options = {"--args", "5"},
           .fds = {{5, FdSpec::Kind::kData,
                    "--args\0"
                    "6\0"s}},
           .exit = 1,
           .err_has = "bwrap: --args not supported in arguments file\n"},
          {.name = "ArgsBadFd",
           .options = {"--args", "77"},
           .exit = 1,
           .err_has = "bwrap: Can't read --args data: Bad file descriptor\n"},
          {.name = "Argv0",
           .options = {"--argv0", "renamed"},
           .compare = 0,
           .known_difference = k080NoArgv0,
           .bwrap_stderr = "bwrap: Unknown option --argv0\n",
           .exit = 0,
           .out_has = "argv0: renamed\n"},
          {.name = "Argv0Twice",
           .options = {"--argv0", "a", "--argv0", "b"},
           .exit = 1,
           .err_has = "bwrap: --argv0 used multiple times\n"},
          {.name = "LevelPrefixUnknownOption",
           .options = {"--level-prefix", "--frobnicate"},
           .exit = 1,
           .err_has = "<3>bwrap: Unknown option --frobnicate\n"},
          // Our parser prints the warning and does not pass --level-prefix on to bwrap, so
          // 0.8.0's lack of the option does not show.
          {.name = "LevelPrefixWarning",
           .options = {"--level-prefix", "--chdir", "/", "--chdir", "/"},
           .exit = 0,
           .err_has = "<4>bwrap: Only the last --chdir option will take effect\n"},
          {.name = "MissingArgument",
           .options = {"--bind", "/"},
           .command = {},
           .exit = 1,
           .err_has = "bwrap: --bind takes two arguments\n"},
      });
}

void AddNamespaceScenarios(std::vector<Scenario>* table) {
  table->insert(
      table->end(),
      {
          {.name = "NoOptions", .options = {}, .exit = 0},
          {.name = "NoDevNoProc", .options = {}, .profile = Profile::kBase, .exit = 0},
          {.name = "UnshareUser", .options = {"--unshare-user"}, .exit = 0},
          {.name = "UnshareUserNoDev",
           .options = {"--unshare-user"},
           .profile = Profile::kNoDev,
           .exit = 0},
          {.name = "UnshareUserTry", .options = {"--unshare-user-try"}, .exit = 0},
          {.name = "UnshareIpc", .options = {"--unshare-ipc"}, .exit = 0},
          {.name = "UnsharePid", .options = {"--unshare-pid"}, .exit = 0},
          {.name = "UnshareNet", .options = {"--unshare-net"}, .exit = 0, .out_has = "links: lo\n"},
          {.name = "UnshareUts", .options = {"--unshare-uts"}, .exit = 0},
          {.name = "Hostname",
           .options = {"--unshare-uts", "--hostname", "sbx-parity"},
           .exit = 0,
           .out_has = "hostname: sbx-parity\n"},
          {.name = "HostnameTwice",
           .options = {"--unshare-uts", "--hostname", "first", "--hostname", "second"},
           .exit = 0,
           .out_has = "hostname: second\n",
           .err_has = "bwrap: Only the last --hostname option will take effect\n"},
          {.name = "HostnameWithoutUts",
           .options = {"--hostname", "x"},
           .exit = 1,
           .err_has = "bwrap: Specifying --hostname requires --unshare-uts\n"},
          {.name = "UnshareCgroup", .options = {"--unshare-cgroup"}, .exit = 0},
          {.name = "UnshareCgroupTry", .options = {"--unshare-cgroup-try"}, .exit = 0},
          {.name = "UnshareAll", .options = {"--unshare-all"}, .exit = 0, .out_has = "links: lo\n"},
          {.name = "UnshareAllShareNet", .options = {"--unshare-all", "--share-net"}, .exit = 0},
          {.name = "ShareNetUnshareAll",
           .options = {"--share-net", "--unshare-all"},
           .exit = 0,
           .out_has = "links: lo\n"},
          {.name = "UidGid",
           .options = {"--unshare-user", "--uid", "1234", "--gid", "4321"},
           .exit = 0,
           .out_has = "uid: 1234\neuid: 1234\ngid: 4321\negid: 4321\n"},
          {.name = "UidGidNoDev",
           .options = {"--unshare-user", "--uid", "0", "--gid", "0"},
           .profile = Profile::kNoDev,
           .exit = 0},
          {.name = "UidWithoutUserns",
           .options = {"--uid", "5"},
           .exit = 1,
           .user_exit = 0,
           .err_has = "bwrap: Specifying --uid requires --unshare-user or --userns\n"},
          {.name = "GidWithoutUserns",
           .options = {"--gid", "5"},
           .exit = 1,
           .user_exit = 0,
           .err_has = "bwrap: Specifying --gid requires --unshare-user or --userns\n"},
          {.name = "UidInvalid",
           .options = {"--uid", "abc"},
           .exit = 1,
           .err_has = "bwrap: Invalid uid: abc\n"},
          {.name = "UsernsWithUnshareUser",
           .options = {"--unshare-user", "--userns", "5"},
           .exit = 1,
           .err_has = "bwrap: --userns not compatible --unshare-user\n"},
          {.name = "UsernsBadFd",
           .options = {"--userns", "55"},
           .exit = 1,
           .err_has = "bwrap: Joining specified user namespace failed: Bad file descriptor\n"},
          // A failed --userns2 ends bwrap's monitor before it releases the child, which
          // then waits forever holding stdout/stderr (the native backend kills it): only
          // its exit is waited for.
          {.name = "Userns2BadFd",
           .options = {"--userns2", "55"},
           .timeout = kOrphanWait,
           .leaves_orphan = true,
           .exit = 1,
           .err_has = "bwrap: Setting userns2 failed: Bad file descriptor\n"},
          {.name = "PidnsBadFd",
           .options = {"--pidns", "55"},
           .exit = 1,
           .err_has = "bwrap: Setting pidns failed: Bad file descriptor\n"},
          // Joining the caller's own user namespace, or something else, is EINVAL.
          {.name = "UsernsOwnNamespace",
           .options = {"--userns", "5"},
           .fds = {{5, FdSpec::Kind::kOwnNamespace, "user"}},
           .exit = 1,
           .err_has = "bwrap: Joining the specified user namespace failed, it might not be a "
                      "descendant of the current user namespace.\n"},
          {.name = "UsernsNotANamespace",
           .options = {"--userns", "5"},
           .fds = {{5, FdSpec::Kind::kData, "x"}},
           .exit = 1,
           .err_has = "bwrap: Joining the specified user namespace failed, it might not be a "
                      "descendant of the current user namespace.\n"},
          {.name = "Userns2OwnNamespace",
           .options = {"--userns2", "5"},
           .fds = {{5, FdSpec::Kind::kOwnNamespace, "user"}},
           .timeout = kOrphanWait,
           .leaves_orphan = true,
           .exit = 1,
           .err_has = "bwrap: Setting userns2 failed: Invalid argument\n"},
          {.name = "PidnsWrongType",
           .options = {"--pidns", "5"},
           .fds = {{5, FdSpec::Kind::kOwnNamespace, "user"}},
           .exit = 1,
           .err_has = "bwrap: Setting pidns failed: Invalid argument\n"},
          // Root joins its own pid namespace (the sandbox then shares it); an unprivileged
          // caller's sandbox, in a user namespace of its own, may not. The probe only exits:
          // a report in the host pid namespace would show pids that differ between runs.
          {.name = "PidnsOfCaller",
           .options = {"--pidns", "5"},
           .command = {kProbe, "exit", "0"},
           .fds = {{5, FdSpec::Kind::kOwnNamespace, "pid"}},
           .exit = 0,
           .user_exit = 1,
           .user_err_has = "bwrap: Setting pidns failed: Operation not permitted\n"},
          {.name = "DisableUserns",
           .options = {"--unshare-user", "--disable-userns"},
           .command = {kProbe, "try-syscall", "unshare-user"},
           .exit = 0,
           .out_has = "unshare-user: ENOSPC\n"},
          {.name = "DisableUsernsReport",
           .options = {"--unshare-user", "--disable-userns"},
           .exit = 0},
          {.name = "DisableUsernsAssert",
           .options = {"--unshare-user", "--disable-userns", "--assert-userns-disabled"},
           .command = {kProbe, "try-syscall", "unshare-user"},
           .exit = 0,
           .out_has = "unshare-user: ENOSPC\n"},
          {.name = "DisableUsernsWithoutUnshareUser",
           .options = {"--disable-userns"},
           .exit = 1,
           .err_has = "bwrap: --disable-userns requires --unshare-user\n"},
          {.name = "DisableUsernsWithUsernsBlockFd",
           .options = {"--unshare-user", "--disable-userns", "--userns-block-fd", "5", "--info-fd",
                       "6"},
           .exit = 1,
           .err_has = "bwrap: --disable-userns is not compatible with  --userns-block-fd\n"},
          {.name = "AssertUsernsDisabledFails",
           .options = {"--assert-userns-disabled"},
           .exit = 1,
           .err_has = "bwrap: creation of new user namespaces was not disabled as requested\n"},
      });
}

const std::vector<Scenario>& AllScenarios() {
  static const std::vector<Scenario> table = [] {
    std::vector<Scenario> all;
    AddGeneralScenarios(&all);
    AddNamespaceScenarios(&all);
    AddProcessScenarios(&all);
    AddFilesystemScenarios(&all);
    AddFdScenarios(&all);
    return all;
  }();
  return table;
}

}  // namespace sbx::integration::parity
