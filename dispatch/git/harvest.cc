#include "dispatch/git/harvest.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include "base/child_process.h"
#include "base/exit_status.h"
#include "base/unique_fd.h"
#include "dispatch/plan/layout.h"
#include "dispatch/sys/stop_signals.h"
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
      -c diff.mnemonicPrefix=false -c diff.relative=false -c format.signature= \
      -c core.bigFileThreshold=1m -c core.packedGitLimit=256m -c core.packedGitWindowSize=32m \
      -c core.deltaBaseCacheLimit=64m -c pack.windowMemory=64m "$@"
}
# Git would block on a FIFO (or read a device) where it expects a file: only regular files
# and directories in the git directory, but for the hooks, which git never opens here
# (core.hooksPath), and which people often link. find looks at each entry, opens none.
if [ ! -d "$GIT_DIR" ] || [ -h "$GIT_DIR" ] ||
   [ -n "$(find "$GIT_DIR" \( -path "$GIT_DIR/hooks" -o -path "$GIT_DIR/modules/*/hooks" \) \
           -prune -o ! -type f ! -type d -print -quit)" ]; then
  exit 86
fi
tmp=$(mktemp -d)
# The repository's own index is never opened by git: a copy, when it is a regular file.
export GIT_INDEX_FILE="$tmp/index"
cp "$GIT_DIR/index" "$tmp/index" 2>/dev/null || :
# No filter driver the workspace's config names runs: each one's commands are emptied on
# git's command line (GIT_CONFIG_COUNT), which wins over the repository's config.
g config --name-only --get-regexp '^filter\.' >"$tmp/filters" 2>/dev/null || :
n=0
while IFS= read -r key; do
  case "$key" in
  *.clean | *.smudge | *.process)
    export "GIT_CONFIG_KEY_$n=$key" "GIT_CONFIG_VALUE_$n="
    n=$((n + 1))
    ;;
  *.required)
    export "GIT_CONFIG_KEY_$n=$key" "GIT_CONFIG_VALUE_$n=false"
    n=$((n + 1))
    ;;
  esac
done <"$tmp/filters"
export GIT_CONFIG_COUNT=$n
)sh";

// The script's exit status for a git directory it refuses (the prelude's check).
constexpr int kNotRegularExit = 86;

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
mkdir "$tmp/objects"
export GIT_OBJECT_DIRECTORY="$tmp/objects"
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

// $1: a revision the caller named, checked not to start with '-' (no option) first.
constexpr const char* kResolveScript = R"sh(
g rev-parse -q --verify "$1^{commit}" 2>/dev/null || exit 87
)sh";

// The script's exit status for a revision that names no commit.
constexpr int kNoSuchCommitExit = 87;

// The harvest sandbox for `script` with /bin/sh, within the harvest's bounds (harvest.h).
base::Result<runtime::SandboxSpec> HarvestSpec(const std::string& workspace,
                                               const std::string& script,
                                               const std::vector<std::string>& args,
                                               const RunAsIds& run_as,
                                               const HarvestBounds* bounds) {
  auto seccomp = security::CompileDefaultSeccompPolicy();
  if (!seccomp) return seccomp.error();
  runtime::SandboxSpec spec;
  spec.unshare_user = spec.unshare_ipc = spec.unshare_pid = spec.unshare_uts = true;
  spec.unshare_net = true;
  spec.unshare_cgroup_try = true;
  AddReadOnlySystem(spec);
  spec.ops.emplace_back(runtime::ProcOp{.dest = "/proc"});
  spec.ops.emplace_back(runtime::DevOp{.dest = "/dev"});
  spec.ops.emplace_back(runtime::TmpfsOp{.dest = "/tmp", .perms = 01777, .size = kHarvestTmpBytes});
  spec.ops.emplace_back(runtime::BindOp{.source = workspace, .dest = workspace, .read_only = true});
  spec.chdir = workspace;
  spec.env = {"PATH=/usr/bin:/bin", "HOME=/tmp", "LANG=C.UTF-8", "TMPDIR=/tmp"};
  spec.cap_changes = {{security::CapChange::Kind::kDrop, std::nullopt}};
  spec.seccomp_programs.push_back(*seccomp);
  spec.new_session = spec.die_with_parent = true;
  spec.close_inherited_fds = true;
  spec.run_as = run_as;
  // Git inflates a whole blob in memory to diff it: a small object the agent left can stand
  // for gigabytes of zeros. The address space bounds that; RLIMIT_FSIZE the patch itself.
  spec.self_limits.rlimits = {{.resource = RLIMIT_AS, .value = kHarvestMemory},
                              {.resource = RLIMIT_FSIZE, .value = kHarvestPatchBytes}};
  if (bounds != nullptr) spec.cgroup_procs_fds = bounds->cgroup_procs_fds;
  spec.command = {"/bin/sh", "-c", std::string(kGitPrelude) + script, "ateam-harvest"};
  spec.command.insert(spec.command.end(), args.begin(), args.end());
  return spec;
}

// Waits for the harvest's child until it is gone, a stop signal or the deadline arrives,
// or its own time is up: the latter ones kill its group (the sandbox dies with it). The
// child's wait status.
base::Result<int> WaitForHarvest(const base::ClonedChild& child, HarvestBounds* bounds) {
  const int stopped = WaitOrStop(child.pidfd.get(), bounds != nullptr ? bounds->stop_fd : -1,
                                 child.pid, -1, nullptr, 0, kHarvestSeconds * 1000);
  int status = 0;
  while (::waitpid(child.pid, &status, 0) < 0) {
    if (errno != EINTR) return base::ErrnoError("waitpid for the harvest sandbox");
  }
  if (stopped == kWaitTimedOut) {
    return base::Error::Message(
        fmt::format("the harvest was stopped after {} seconds, its own bound", kHarvestSeconds));
  }
  if (stopped != 0) {
    if (bounds != nullptr) bounds->stopped_by = stopped;
    return base::Error::Message(stopped == SIGALRM
                                    ? "the harvest was stopped by --timeout"
                                    : "the harvest was interrupted by " + StopSignalName(stopped));
  }
  return status;
}

// The harvest child's one reported step: the launcher, whose error comes back with its
// errno and its text (op and subject).
constexpr uint32_t kLaunchStep = 1;

// In the harvest's child: the sandbox launched and waited for; its exit code is the child's.
[[noreturn]] void HarvestChild(const runtime::Plan& plan, int out_fd,
                               const base::ChildReport& report) {
  // A group of its own, so a stop kills it whole; the sandbox dies with it (its death
  // signal). The default signal mask: `run` blocks its stop signals.
  (void)::setpgid(0, 0);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  // A child of its own: the launcher wants a single-threaded process, and the sandbox
  // gets this stdout, not the caller's.
  int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null < 0 || ::dup2(null, 0) < 0 || ::dup2(out_fd, 1) < 0) ::_exit(126);
  // What the seccomp filter needs without CAP_SYS_ADMIN (as bwrap's face sets it).
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) ::_exit(126);
  auto code = runtime::Launch(plan);
  if (code) ::_exit(*code);
  const base::Error& error = code.error();
  std::string text = error.op();
  if (!error.subject().empty()) text += (text.empty() ? "" : " ") + error.subject();
  report.Fail(base::ChildFailure{.step = kLaunchStep, .err = error.err()}, text.data(), text.size(),
              125);
}

// Runs `script` with /bin/sh in the harvest sandbox, its stdout on `out_fd`, within the
// harvest's bounds (harvest.h).
base::Result<int> RunGitSandbox(const std::string& workspace, const std::string& script,
                                const std::vector<std::string>& args, int out_fd,
                                const RunAsIds& run_as, HarvestBounds* bounds) {
  auto host = runtime::ProbeHostFacts();
  if (!host) return host.error();
  auto spec = HarvestSpec(workspace, script, args, run_as, bounds);
  if (!spec) return spec.error();
  auto plan = runtime::CompilePlan(*spec, *host);
  if (!plan) return plan.error();
  // The child's own failure comes back on the report, for the caller to report (or not:
  // the base-commit read is optional), never printed over `run`'s one-line error.
  auto report = base::ChildReport::Open();
  if (!report) return report.error();
  auto child = base::ForkWithPidfd("the harvest sandbox's child");
  if (!child) return child.error();
  if (child->pid == 0) {
    report->CloseReadEnd();
    HarvestChild(*plan, out_fd, *report);
  }
  report->CloseWriteEnd();
  (void)::setpgid(child->pid, child->pid);  // both sides: the group exists whichever runs first
  auto status = WaitForHarvest(*child, bounds);
  if (!status) return status.error();
  // The child is gone: its report, when it wrote one, waits in the pipe.
  auto failure = report->Read();
  if (!failure) return failure.error();
  if (*failure) {
    return base::Error((*failure)->err, report->ReadText((*failure)->detail))
        .WithContext("harvest sandbox");
  }
  return base::ExitCodeFromWaitStatus(*status);
}

// What a nonzero exit status of the harvest's script means.
base::Error ScriptFailure(std::string_view what, int code) {
  if (code == kNotRegularExit) {
    return base::Error::Message(fmt::format(
        "{}: the workspace's .git holds something that is not a regular file or directory "
        "(a FIFO, socket, device or symlink), or is not a directory: not read",
        what));
  }
  if (code == base::kSignalExitBase + SIGXFSZ) {
    return base::Error::Message(
        fmt::format("{}: the patch would be larger than {} bytes", what, kHarvestPatchBytes));
  }
  return base::Error::Message(fmt::format("{} failed (exit status {})", what, code));
}

bool IsBelow(const std::string& path, const std::string& dir) {
  return path == dir || (path.starts_with(dir) && path[dir.size()] == '/');
}

}  // namespace

base::Result<std::optional<base::OutputFile>> PreparePatchFile(
    const std::string& flag, const std::optional<std::string>& path, const std::string& workspace,
    const std::string& out) {
  if (!path) return std::optional<base::OutputFile>();
  auto slash = path->rfind('/');
  std::string parent = slash == std::string::npos ? "." : path->substr(0, slash == 0 ? 1 : slash);
  char resolved[PATH_MAX];
  if (::realpath(parent.c_str(), resolved) == nullptr) return base::ErrnoError(flag, *path);
  if (IsBelow(resolved, workspace) || IsBelow(resolved, out)) {
    return base::Error::Message(
        fmt::format("{} {}: must not be inside the sandbox's workspace or out dir", flag, *path));
  }
  auto file = base::OutputFile::Prepare(flag, *path);
  if (!file) return file.error();
  return std::optional<base::OutputFile>(std::move(*file));
}

base::Status WritePatchFile(base::OutputFile& file, const std::string& workspace,
                            const std::string& base, const RunAsIds& run_as,
                            HarvestBounds* bounds) {
  auto fd = file.CreateTemp(0644);
  if (!fd) return fd.error();
  if (auto st = WriteHarvestPatch(workspace, base, fd->get(), run_as, bounds); !st) {
    file.Abort();
    return st;
  }
  return file.Commit(fd->get());
}

namespace {

struct ScriptOutput {
  int code = 0;
  std::string text;  // its stdout, without the final line ends
};

// `script` in the harvest sandbox, for a short answer on stdout (a pipe holds it all: git
// prints one line here).
base::Result<ScriptOutput> RunGitForLine(const std::string& workspace, const std::string& script,
                                         const std::vector<std::string>& args,
                                         const RunAsIds& run_as, HarvestBounds* bounds) {
  auto pipe = base::MakePipe();
  if (!pipe) return pipe.error();
  auto code = RunGitSandbox(workspace, script, args, pipe->write_end.get(), run_as, bounds);
  pipe->write_end.reset();
  if (!code) return code.error();
  ScriptOutput output{.code = *code, .text = {}};
  char buf[256];
  ssize_t n = 0;
  while ((n = ::read(pipe->read_end.get(), buf, sizeof(buf))) > 0)
    output.text.append(buf, static_cast<size_t>(n));
  while (!output.text.empty() && (output.text.back() == '\n' || output.text.back() == '\r')) {
    output.text.pop_back();
  }
  return output;
}

}  // namespace

base::Result<std::string> ReadBaseCommit(const std::string& workspace, const RunAsIds& run_as,
                                         HarvestBounds* bounds) {
  auto output = RunGitForLine(workspace, kBaseScript, {}, run_as, bounds);
  if (!output) return output.error();
  if (output->code != 0) {
    return ScriptFailure("reading the workspace's base commit", output->code);
  }
  return output->text;
}

base::Result<std::string> ResolveCommit(const std::string& workspace, const std::string& rev,
                                        const RunAsIds& run_as) {
  // Git reads a leading '-' as an option, and nothing else it takes as a revision needs a
  // control character or a byte outside ASCII.
  const bool printable =
      std::all_of(rev.begin(), rev.end(), [](char c) { return c > 0x20 && c < 0x7f; });
  if (rev.empty() || rev.size() > kMaxRevisionLength || rev.front() == '-' || !printable) {
    return base::Error::Message(fmt::format(
        "--base: give a branch, tag or commit (at most {} printable characters, not starting "
        "with '-')",
        kMaxRevisionLength));
  }
  auto output = RunGitForLine(workspace, kResolveScript, {rev}, run_as, nullptr);
  if (!output) return output.error();
  if (output->code == kNoSuchCommitExit) {
    return base::Error::Message(fmt::format("--base {}: names no commit in {}", rev, workspace));
  }
  if (output->code != 0) return ScriptFailure("resolving --base " + rev, output->code);
  const bool hex = (output->text.size() == 40 || output->text.size() == 64) &&
                   output->text.find_first_not_of("0123456789abcdef") == std::string::npos;
  if (!hex) {
    return base::Error::Message(fmt::format("--base {}: git named no commit id", rev));
  }
  return output->text;
}

base::Status WriteHarvestPatch(const std::string& workspace, const std::string& base, int out_fd,
                               const RunAsIds& run_as, HarvestBounds* bounds) {
  std::string who = fmt::format("{} <{}>", kAgentGitName, kAgentGitEmail);
  auto code = RunGitSandbox(workspace, kPatchScript, {base, who}, out_fd, run_as, bounds);
  if (!code) return code.error();
  if (*code != 0) return ScriptFailure("the harvest's git", *code);
  return {};
}

}  // namespace sbx::dispatch
