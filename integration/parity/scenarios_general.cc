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
          {.name = "Help", .options = {"--help"}, .command = {}, .profile = none},
          {.name = "Version",
           .options = {"--version"},
           .command = {},
           .profile = none,
           .compare = kExitCode | kStderr,
           .known_difference = "the bwrap backend reports the version of the bwrap it runs "
                               "(bubblewrap 0.8.0); we implement 0.11.1",
           .bwrap_stdout = "bubblewrap 0.8.0\n"},
          {.name = "NoArguments", .options = {}, .command = {}, .profile = none},
          {.name = "OptionsWithoutCommand",
           .options = {"--unshare-ipc", "--chdir", "/"},
           .command = {},
           .profile = none},
          {.name = "UnknownOption", .options = {"--frobnicate"}},
          {.name = "DoubleDashBeforeCommand", .options = {"--unshare-uts", "--"}},
          {.name = "TooManyArguments", .options = ManyArgs(9001)},
          {.name = "ArgsFd",
           .options = {"--args", "5"},
           .fds = {{5, FdSpec::Kind::kData, "--unshare-ipc\0--setenv\0FROM_ARGS\0yes"s}}},
          {.name = "ArgsFdStopsAtWord",
           .options = {"--args", "5"},
           .fds = {{5, FdSpec::Kind::kData, "--unshare-uts\0word\0--unshare-ipc\0"s}}},
          {.name = "ArgsNested",
           .options = {"--args", "5"},
           .fds = {{5, FdSpec::Kind::kData,
                    "--args\0"
                    "6\0"s}}},
          {.name = "ArgsBadFd", .options = {"--args", "77"}},
          {.name = "Argv0",
           .options = {"--argv0", "renamed"},
           .compare = 0,
           .known_difference = k080NoArgv0,
           .bwrap_stderr = "bwrap: Unknown option --argv0\n"},
          {.name = "Argv0Twice", .options = {"--argv0", "a", "--argv0", "b"}},
          {.name = "LevelPrefixUnknownOption", .options = {"--level-prefix", "--frobnicate"}},
          // Our parser prints the warning and does not pass --level-prefix on to bwrap, so
          // 0.8.0's lack of the option does not show.
          {.name = "LevelPrefixWarning",
           .options = {"--level-prefix", "--chdir", "/", "--chdir", "/"}},
          {.name = "MissingArgument", .options = {"--bind", "/"}, .command = {}},
      });
}

void AddNamespaceScenarios(std::vector<Scenario>* table) {
  table->insert(
      table->end(),
      {
          {.name = "NoOptions", .options = {}},
          {.name = "NoDevNoProc", .options = {}, .profile = Profile::kBase},
          {.name = "UnshareUser", .options = {"--unshare-user"}},
          {.name = "UnshareUserNoDev", .options = {"--unshare-user"}, .profile = Profile::kNoDev},
          {.name = "UnshareUserTry", .options = {"--unshare-user-try"}},
          {.name = "UnshareIpc", .options = {"--unshare-ipc"}},
          {.name = "UnsharePid", .options = {"--unshare-pid"}},
          {.name = "UnshareNet", .options = {"--unshare-net"}},
          {.name = "UnshareUts", .options = {"--unshare-uts"}},
          {.name = "Hostname", .options = {"--unshare-uts", "--hostname", "sbx-parity"}},
          {.name = "HostnameTwice",
           .options = {"--unshare-uts", "--hostname", "first", "--hostname", "second"}},
          {.name = "HostnameWithoutUts", .options = {"--hostname", "x"}},
          {.name = "UnshareCgroup", .options = {"--unshare-cgroup"}},
          {.name = "UnshareCgroupTry", .options = {"--unshare-cgroup-try"}},
          {.name = "UnshareAll", .options = {"--unshare-all"}},
          {.name = "UnshareAllShareNet", .options = {"--unshare-all", "--share-net"}},
          {.name = "ShareNetUnshareAll", .options = {"--share-net", "--unshare-all"}},
          {.name = "UidGid", .options = {"--unshare-user", "--uid", "1234", "--gid", "4321"}},
          {.name = "UidGidNoDev",
           .options = {"--unshare-user", "--uid", "0", "--gid", "0"},
           .profile = Profile::kNoDev},
          {.name = "UidWithoutUserns", .options = {"--uid", "5"}},
          {.name = "GidWithoutUserns", .options = {"--gid", "5"}},
          {.name = "UidInvalid", .options = {"--uid", "abc"}},
          {.name = "UsernsWithUnshareUser", .options = {"--unshare-user", "--userns", "5"}},
          {.name = "UsernsBadFd", .options = {"--userns", "55"}},
          // A failed --userns2 ends bwrap's monitor before it releases the child, which
          // then waits forever holding stdout/stderr (the native backend kills it): only
          // its exit is waited for.
          {.name = "Userns2BadFd", .options = {"--userns2", "55"}, .timeout = kOrphanWait},
          {.name = "PidnsBadFd", .options = {"--pidns", "55"}},
          // Joining the caller's own user namespace, or something else, is EINVAL.
          {.name = "UsernsOwnNamespace",
           .options = {"--userns", "5"},
           .fds = {{5, FdSpec::Kind::kOwnNamespace, "user"}}},
          {.name = "UsernsNotANamespace",
           .options = {"--userns", "5"},
           .fds = {{5, FdSpec::Kind::kData, "x"}}},
          {.name = "Userns2OwnNamespace",
           .options = {"--userns2", "5"},
           .fds = {{5, FdSpec::Kind::kOwnNamespace, "user"}},
           .timeout = kOrphanWait},
          {.name = "PidnsWrongType",
           .options = {"--pidns", "5"},
           .fds = {{5, FdSpec::Kind::kOwnNamespace, "user"}}},
          // Root joins its own pid namespace (the sandbox then shares it); an unprivileged
          // caller's sandbox, in a user namespace of its own, may not. The probe only exits:
          // a report in the host pid namespace would show pids that differ between runs.
          {.name = "PidnsOfCaller",
           .options = {"--pidns", "5"},
           .command = {kProbe, "exit", "0"},
           .fds = {{5, FdSpec::Kind::kOwnNamespace, "pid"}}},
          {.name = "DisableUserns",
           .options = {"--unshare-user", "--disable-userns"},
           .command = {kProbe, "try-syscall", "unshare-user"}},
          {.name = "DisableUsernsReport", .options = {"--unshare-user", "--disable-userns"}},
          {.name = "DisableUsernsAssert",
           .options = {"--unshare-user", "--disable-userns", "--assert-userns-disabled"},
           .command = {kProbe, "try-syscall", "unshare-user"}},
          {.name = "DisableUsernsWithoutUnshareUser", .options = {"--disable-userns"}},
          {.name = "DisableUsernsWithUsernsBlockFd",
           .options = {"--unshare-user", "--disable-userns", "--userns-block-fd", "5", "--info-fd",
                       "6"}},
          {.name = "AssertUsernsDisabledFails", .options = {"--assert-userns-disabled"}},
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
