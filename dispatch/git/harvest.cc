#include "dispatch/git/harvest.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include "base/exit_status.h"
#include "base/unique_fd.h"
#include "dispatch/plan/layout.h"
#include "runtime/host_facts.h"
#include "runtime/launcher.h"
#include "runtime/plan_compiler.h"
#include "security/seccomp.h"

namespace sbx::dispatch {
namespace {

// Git as the harvest runs it: the repository named outright (no discovery, so no layout
// the agent left decides which config is read), no system or global config, and every
// setting that can start a program overridden on the command line, where it wins over
// the repository's config.
constexpr const char* kGitPrelude = R"sh(set -eu
export GIT_DIR="$PWD/.git" GIT_WORK_TREE="$PWD"
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_PAGER=cat PAGER=cat
export GIT_TERMINAL_PROMPT=0 GIT_OPTIONAL_LOCKS=0 GIT_NO_REPLACE_OBJECTS=1 GIT_EDITOR=:
g() {
  git -c core.hooksPath=/dev/null -c core.fsmonitor=false -c core.pager=cat \
      -c core.attributesFile=/dev/null -c safe.directory='*' -c diff.noprefix=false \
      -c diff.mnemonicPrefix=false -c diff.relative=false -c format.signature= "$@"
}
)sh";

// $1: the base commit ("" when the clone had none). The uncommitted part is staged into a
// throwaway index with its new objects in a throwaway object directory (the repository's
// own stays read-only and untouched), then diffed against HEAD.
constexpr const char* kPatchScript = R"sh(
head=$(g rev-parse -q --verify 'HEAD^{commit}' || :)
if [ -n "$head" ] && [ "$head" != "$1" ]; then
  if [ -n "$1" ]; then range="$1..$head"; else range="--root $head"; fi
  # shellcheck disable=SC2086
  g format-patch --stdout --binary --full-index --no-ext-diff --no-textconv $range
fi
tmp=$(mktemp -d)
mkdir "$tmp/objects"
cp "$GIT_DIR/index" "$tmp/index" 2>/dev/null || :
export GIT_INDEX_FILE="$tmp/index" GIT_OBJECT_DIRECTORY="$tmp/objects"
export GIT_ALTERNATE_OBJECT_DIRECTORIES="$GIT_DIR/objects"
g add --all
against=${head:-$(g hash-object -t tree /dev/null)}
if ! g diff --cached --quiet --no-ext-diff --no-textconv "$against"; then
  printf 'From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n'
  printf 'From: %s\nDate: %s\n' "$2" "$(date -R)"
  printf 'Subject: [PATCH] Uncommitted changes left in the workspace\n\n---\n'
  g diff --cached --stat --no-ext-diff --no-textconv "$against"
  printf '\n'
  g diff --cached --binary --full-index --no-ext-diff --no-textconv "$against"
  printf -- '-- \nateam-sandbox harvest\n\n'
fi
)sh";

constexpr const char* kBaseScript = R"sh(
g rev-parse -q --verify 'HEAD^{commit}' 2>/dev/null || :
)sh";

// Runs `script` with /bin/sh in the harvest sandbox, its stdout on `out_fd`.
base::Result<int> RunGitSandbox(const std::string& workspace, const std::string& script,
                                const std::vector<std::string>& args, int out_fd,
                                const RunAsIds& run_as) {
  auto host = runtime::ProbeHostFacts();
  if (!host) return host.error();
  auto seccomp = security::CompileDefaultSeccompPolicy();
  if (!seccomp) return seccomp.error();
  runtime::SandboxSpec spec;
  spec.unshare_user = spec.unshare_ipc = spec.unshare_pid = spec.unshare_uts = true;
  spec.unshare_net = true;
  spec.unshare_cgroup_try = true;
  AddReadOnlySystem(spec);
  spec.ops.emplace_back(runtime::ProcOp{.dest = "/proc"});
  spec.ops.emplace_back(runtime::DevOp{.dest = "/dev"});
  spec.ops.emplace_back(runtime::TmpfsOp{.dest = "/tmp", .perms = 01777});
  spec.ops.emplace_back(runtime::BindOp{.source = workspace, .dest = workspace, .read_only = true});
  spec.chdir = workspace;
  spec.env = {"PATH=/usr/bin:/bin", "HOME=/tmp", "LANG=C.UTF-8", "TMPDIR=/tmp"};
  spec.cap_changes = {{security::CapChange::Kind::kDrop, std::nullopt}};
  spec.seccomp_programs.push_back(*seccomp);
  spec.new_session = spec.die_with_parent = true;
  spec.close_inherited_fds = true;
  spec.run_as = run_as;
  spec.command = {"/bin/sh", "-c", std::string(kGitPrelude) + script, "ateam-harvest"};
  spec.command.insert(spec.command.end(), args.begin(), args.end());
  auto plan = runtime::CompilePlan(spec, *host);
  if (!plan) return plan.error();
  // The child's own failure comes back on this pipe, for the caller to report (or not:
  // the base-commit read is optional), never printed over `run`'s one-line error.
  int error_pipe[2];
  if (::pipe2(error_pipe, O_CLOEXEC) != 0) return base::ErrnoError("pipe for the harvest sandbox");
  base::UniqueFd error_read(error_pipe[0]);
  base::UniqueFd error_write(error_pipe[1]);
  pid_t pid = ::fork();
  if (pid < 0) return base::ErrnoError("fork for the harvest sandbox");
  if (pid == 0) {
    // A child of its own: the launcher wants a single-threaded process, and the sandbox
    // gets this stdout, not the caller's.
    int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null < 0 || ::dup2(null, 0) < 0 || ::dup2(out_fd, 1) < 0) ::_exit(126);
    // What the seccomp filter needs without CAP_SYS_ADMIN (as bwrap's face sets it).
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) ::_exit(126);
    auto code = runtime::Launch(*plan);
    if (!code) {
      std::string message = code.error().Render();
      (void)!::write(error_write.get(), message.data(), message.size());
      ::_exit(125);
    }
    ::_exit(*code);
  }
  error_write.reset();
  std::string failure;
  char buf[512];
  for (ssize_t n; (n = ::read(error_read.get(), buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    failure.append(buf, static_cast<size_t>(n));
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return base::ErrnoError("waitpid for the harvest sandbox");
  }
  if (!failure.empty()) return base::Error::Message("harvest sandbox: " + failure);
  return base::ExitCodeFromWaitStatus(status);
}

bool IsBelow(const std::string& path, const std::string& dir) {
  return path == dir || (path.starts_with(dir) && path[dir.size()] == '/');
}

}  // namespace

base::Result<base::UniqueFd> OpenPatchFile(const std::optional<std::string>& path,
                                           const std::string& workspace, const std::string& out) {
  if (!path) return base::UniqueFd();
  auto slash = path->rfind('/');
  std::string parent = slash == std::string::npos ? "." : path->substr(0, slash == 0 ? 1 : slash);
  char resolved[PATH_MAX];
  if (::realpath(parent.c_str(), resolved) == nullptr) return base::ErrnoError("--patch", *path);
  if (IsBelow(resolved, workspace) || IsBelow(resolved, out)) {
    return base::Error::Message(
        fmt::format("--patch {}: must not be inside the sandbox's workspace or out dir", *path));
  }
  base::UniqueFd fd(
      ::open(path->c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (!fd) return base::ErrnoError("Can't open --patch", *path);
  return fd;
}

base::Result<std::string> ReadBaseCommit(const std::string& workspace, const RunAsIds& run_as) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return base::ErrnoError("pipe");
  base::UniqueFd read_end(fds[0]);
  base::UniqueFd write_end(fds[1]);
  auto code = RunGitSandbox(workspace, kBaseScript, {}, write_end.get(), run_as);
  write_end.reset();
  if (!code) return code.error();
  std::string out;
  char buf[256];
  ssize_t n = 0;
  while ((n = ::read(read_end.get(), buf, sizeof(buf))) > 0)
    out.append(buf, static_cast<size_t>(n));
  if (*code != 0) {
    return base::Error::Message(
        fmt::format("reading the workspace's base commit failed (exit status {})", *code));
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

base::Status WriteHarvestPatch(const std::string& workspace, const std::string& base, int out_fd,
                               const RunAsIds& run_as) {
  std::string who = fmt::format("{} <{}>", kAgentGitName, kAgentGitEmail);
  auto code = RunGitSandbox(workspace, kPatchScript, {base, who}, out_fd, run_as);
  if (!code) return code.error();
  if (*code != 0) {
    return base::Error::Message(fmt::format("the harvest's git failed (exit status {})", *code));
  }
  return {};
}

}  // namespace sbx::dispatch
