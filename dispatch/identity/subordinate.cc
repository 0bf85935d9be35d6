#include "dispatch/identity/subordinate.h"

#include <fcntl.h>
#include <pwd.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "base/child_process.h"
#include "base/unique_fd.h"
#include "dispatch/identity/id_range.h"
#include "dispatch/sys/subordinate_env.h"

namespace sbx::dispatch {
namespace {

// The file's text, "" when it does not exist.
base::Result<std::string> ReadIdFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    if (errno == ENOENT) return std::string();
    return base::ErrnoError("Can't read", path);
  }
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

base::Result<SubordinateRange> FirstRange(const std::string& path, const std::string& user,
                                          uid_t uid) {
  auto text = ReadIdFile(path);
  if (!text) return text.error();
  auto ranges = ParseSubordinateRanges(*text, user, uid);
  if (!ranges) return ranges.error().WithContext(path);
  if (ranges->empty()) {
    return base::Error::Message(fmt::format(
        "--identity subuid: {} grants {} (uid {}) no subordinate ids; an administrator gives "
        "them with usermod --add-subuids FIRST-LAST --add-subgids FIRST-LAST {}",
        path, user, uid, user));
  }
  return ranges->front();
}

std::string FindHelper(const std::string& name) {
  std::vector<std::string> dirs;
  const char* path = std::getenv("PATH");  // NOLINT(concurrency-mt-unsafe)
  std::stringstream list(path != nullptr ? path : "");
  for (std::string dir; std::getline(list, dir, ':');) {
    if (dir.starts_with('/')) dirs.push_back(dir);
  }
  for (const char* dir : {"/usr/bin", "/usr/sbin", "/bin", "/sbin"}) dirs.emplace_back(dir);
  for (const std::string& dir : dirs) {
    std::string candidate = dir;
    candidate += "/";
    candidate += name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

// Runs a map helper: HELPER PID 0 OUTSIDE 1 1 FIRST COUNT; true when it exited 0.
bool WriteMap(const std::string& helper, pid_t pid, uint32_t outside, uint32_t first,
              uint32_t count) {
  std::vector<std::string> words = {helper,
                                    std::to_string(pid),
                                    "0",
                                    std::to_string(outside),
                                    "1",
                                    "1",
                                    std::to_string(first),
                                    std::to_string(count)};
  std::vector<char*> argv;
  argv.reserve(words.size() + 1);
  for (std::string& word : words) argv.push_back(word.data());
  argv.push_back(nullptr);
  auto child = base::ForkWithPidfd(helper.c_str());
  if (!child) return false;
  if (child->pid == 0) {
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(child->pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

volatile sig_atomic_t g_inner = 0;  // the re-executed run, for the forwarding handler

// A signal sent to this process by kill(2) (an orchestrator's SIGTERM) is passed on; one
// the terminal sent (si_code > 0) reached the inner run already, as the whole foreground
// process group gets it.
void Forward(int sig, siginfo_t* info, void* /*context*/) {
  if (g_inner > 0 && info != nullptr && info->si_code <= 0) {
    ::kill(static_cast<pid_t>(g_inner), sig);
  }
}

// `self_exe run ARGS...` and this environment with `marker` instead of any value of
// kSubordinateEnv, as execve takes them (made before the fork: the child only execs).
struct InnerExec {
  InnerExec(const std::string& self_exe, std::span<const std::string> args, std::string marker)
      : marker_(std::move(marker)) {
    words_ = {self_exe, "run"};
    words_.insert(words_.end(), args.begin(), args.end());
    argv.reserve(words_.size() + 1);
    for (std::string& word : words_) argv.push_back(word.data());
    argv.push_back(nullptr);
    const std::string name = std::string(kSubordinateEnv) + "=";
    for (char** e = environ; *e != nullptr; ++e) {
      if (!std::string_view(*e).starts_with(name)) env.push_back(*e);
    }
    env.push_back(marker_.data());
    env.push_back(nullptr);
  }
  std::vector<char*> argv;
  std::vector<char*> env;

 private:
  std::vector<std::string> words_;
  std::string marker_;
};

// The inner run decides what every stop signal does; this process only passes on those
// sent to it. --die-with-parent: the inner run watches this process, so this one follows
// the caller (`parent`).
void ForwardStopSignals(pid_t inner, bool die_with_parent, pid_t parent) {
  g_inner = inner;
  struct sigaction forward {};
  forward.sa_sigaction = Forward;
  forward.sa_flags = SA_SIGINFO | SA_RESTART;
  for (int sig : {SIGTERM, SIGHUP, SIGINT, SIGQUIT}) ::sigaction(sig, &forward, nullptr);
  if (die_with_parent) {
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::kill(inner, SIGTERM);
  }
}

}  // namespace

base::Result<CallerSubordinateIds> ResolveCallerSubordinateIds(const std::string& subuid,
                                                               const std::string& subgid) {
  CallerSubordinateIds ids;
  ids.uid = ::getuid();
  ids.gid = ::getgid();
  const passwd* pw = ::getpwuid(ids.uid);
  if (pw == nullptr) {
    return base::Error::Message(fmt::format(
        "--identity subuid: uid {} has no passwd entry to look up in {}", ids.uid, subuid));
  }
  ids.user = pw->pw_name;
  auto uids = FirstRange(subuid, ids.user, ids.uid);
  if (!uids) return uids.error();
  auto gids = FirstRange(subgid, ids.user, ids.uid);
  if (!gids) return gids.error();
  ids.first_uid = uids->first;
  ids.first_gid = gids->first;
  ids.count = std::min(uids->count, gids->count);
  if (ids.count < kMinSubordinateIds) {
    return base::Error::Message(fmt::format(
        "--identity subuid: {} has {} subordinate ids in {} and {}; the sandbox needs at least "
        "{} (its own ids inside are 65534)",
        ids.user, ids.count, subuid, subgid, kMinSubordinateIds));
  }
  ids.newuidmap = FindHelper("newuidmap");
  ids.newgidmap = FindHelper("newgidmap");
  if (ids.newuidmap.empty() || ids.newgidmap.empty()) {
    return base::Error::Message(
        "--identity subuid: newuidmap and newgidmap are needed (package uidmap)");
  }
  return ids;
}

base::Result<int> RunInSubordinateNamespace(const CallerSubordinateIds& ids,
                                            const std::string& self_exe,
                                            std::span<const std::string> args,
                                            bool die_with_parent) {
  const pid_t parent = ::getppid();
  int ready_pipe[2];
  int go_pipe[2];
  if (::pipe2(ready_pipe, O_CLOEXEC) != 0) return base::ErrnoError("pipe");
  base::UniqueFd ready_read(ready_pipe[0]);
  base::UniqueFd ready_write(ready_pipe[1]);
  if (::pipe2(go_pipe, O_CLOEXEC) != 0) return base::ErrnoError("pipe");
  base::UniqueFd go_read(go_pipe[0]);
  base::UniqueFd go_write(go_pipe[1]);
  InnerExec inner(self_exe, args, fmt::format("{}={}:{}", kSubordinateEnv, ids.uid, ids.count));
  auto forked = base::ForkWithPidfd("the --identity subuid namespace");
  if (!forked) return forked.error();
  const pid_t child = forked->pid;
  if (child == 0) {
    ready_read.reset();
    go_write.reset();
    // The new user namespace first; its maps can only be written from outside it. The
    // parent gets 0 or unshare's errno.
    const int err = ::unshare(CLONE_NEWUSER) == 0 ? 0 : errno;
    (void)!::write(ready_write.get(), &err, sizeof err);
    char go = 0;
    if (err != 0 || ::read(go_read.get(), &go, 1) != 1) ::_exit(125);
    // Mapped: this process is uid 0 here, with every capability in this namespace (and
    // none outside it), which the exec keeps.
    ::execve(self_exe.c_str(), inner.argv.data(), inner.env.data());
    ::_exit(127);
  }
  ready_write.reset();
  go_read.reset();
  auto abandon = [&](const std::string& why) -> base::Result<int> {
    ::kill(child, SIGKILL);
    while (::waitpid(child, nullptr, 0) < 0 && errno == EINTR) {
    }
    return base::Error::Message(why);
  };
  int err = EPIPE;
  if (::read(ready_read.get(), &err, sizeof err) != sizeof err || err != 0) {
    return abandon(fmt::format(
        "--identity subuid: can't create a user namespace: {} (`ateam-sandbox doctor` says what "
        "refuses it)",
        std::strerror(err)));  // NOLINT(concurrency-mt-unsafe)
  }
  if (!WriteMap(ids.newuidmap, child, ids.uid, ids.first_uid, ids.count) ||
      !WriteMap(ids.newgidmap, child, ids.gid, ids.first_gid, ids.count)) {
    return abandon(fmt::format(
        "--identity subuid: {} or {} refused the map of {}'s subordinate ids (uids {}+{}, gids "
        "{}+{})",
        ids.newuidmap, ids.newgidmap, ids.user, ids.first_uid, ids.count, ids.first_gid,
        ids.count));
  }
  ForwardStopSignals(child, die_with_parent, parent);
  if (::write(go_write.get(), "g", 1) != 1) return abandon("--identity subuid: the run went away");
  go_write.reset();
  int status = 0;
  while (::waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) return base::ErrnoError("waitpid");
  }
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

base::Result<std::string> SubordinateLeaseDir() {
  for (const char* name : {"XDG_STATE_HOME", "HOME"}) {
    const char* value = std::getenv(name);  // NOLINT(concurrency-mt-unsafe)
    if (value != nullptr && *value == '/') {
      return fmt::format("{}{}/ateam-sandbox/leases", value,
                         std::string_view(name) == "HOME" ? "/.local/state" : "");
    }
  }
  return base::Error::Message(
      "--identity subuid: no place for the caller's leases: set HOME or XDG_STATE_HOME");
}

}  // namespace sbx::dispatch
