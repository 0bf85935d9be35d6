#include "dispatch/git/harvest.h"

#include <sys/prctl.h>
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
#include "dispatch/sys/stop_signals.h"
#include "runtime/launcher.h"

namespace sbx::dispatch {
namespace {

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
[[noreturn]] void HarvestChild(const runtime::Plan& plan, int in_fd, int out_fd,
                               const base::ChildReport& report) {
  // A group of its own, so a stop kills it whole; the sandbox dies with it (its death
  // signal). The default signal mask: `run` blocks its stop signals.
  (void)::setpgid(0, 0);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  // A child of its own: the launcher wants a single-threaded process, and the sandbox
  // gets this stdin and stdout, not the caller's.
  if (::dup2(in_fd, 0) < 0 || ::dup2(out_fd, 1) < 0) ::_exit(126);
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

// Runs one of the harvest's sandboxes, `input` (one line, or nothing) on its stdin and its
// stdout on `out_fd`, stopped after kHarvestSeconds or by `bounds`.
base::Result<int> RunGitSandbox(const runtime::Plan& plan, const std::string& input, int out_fd,
                                HarvestBounds* bounds) {
  // The line is far below a pipe's buffer: written whole before the child starts.
  auto in = base::MakePipe();
  if (!in) return in.error();
  if (!input.empty()) {
    const std::string line = input + "\n";
    if (::write(in->write_end.get(), line.data(), line.size()) != static_cast<ssize_t>(line.size()))
      return base::ErrnoError("write the harvest's input");
  }
  in->write_end.reset();
  // The child's own failure comes back on the report, for the caller to report (or not:
  // the base-commit read is optional), never printed over `run`'s one-line error.
  auto report = base::ChildReport::Open();
  if (!report) return report.error();
  auto child = base::ForkWithPidfd("the harvest sandbox's child");
  if (!child) return child.error();
  if (child->pid == 0) {
    report->CloseReadEnd();
    HarvestChild(plan, in->read_end.get(), out_fd, *report);
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
  if (code == kHarvestNotRegularExit) {
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

base::Status WritePatchFile(base::OutputFile& file, const HarvestPlan& plan,
                            const std::string& base, HarvestBounds* bounds) {
  auto fd = file.CreateTemp(0644);
  if (!fd) return fd.error();
  if (auto st = WriteHarvestPatch(plan, base, fd->get(), bounds); !st) {
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

// `plan` for a short answer on stdout (a pipe holds it all: git prints one line here).
base::Result<ScriptOutput> RunForLine(const runtime::Plan& plan, const std::string& input,
                                      HarvestBounds* bounds) {
  auto pipe = base::MakePipe();
  if (!pipe) return pipe.error();
  auto code = RunGitSandbox(plan, input, pipe->write_end.get(), bounds);
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

base::Result<std::string> ReadBaseCommit(const HarvestPlan& plan, HarvestBounds* bounds) {
  auto output = RunForLine(plan.base_read, "", bounds);
  if (!output) return output.error();
  if (output->code != 0) {
    return ScriptFailure("reading the workspace's base commit", output->code);
  }
  return output->text;
}

base::Result<std::string> ResolveCommit(const runtime::Plan& revision_read,
                                        const std::string& rev) {
  // Git reads a leading '-' as an option, and nothing else it takes as a revision needs a
  // blank, a control character or a byte outside ASCII.
  const bool printable =
      std::all_of(rev.begin(), rev.end(), [](char c) { return c > 0x20 && c < 0x7f; });
  if (rev.empty() || rev.size() > kMaxRevisionLength || rev.front() == '-' || !printable) {
    return base::Error::Message(fmt::format(
        "--base: give a branch, tag or commit (at most {} printable characters, not starting "
        "with '-')",
        kMaxRevisionLength));
  }
  auto output = RunForLine(revision_read, rev, nullptr);
  if (!output) return output.error();
  if (output->code == kHarvestNoSuchCommitExit) {
    return base::Error::Message(fmt::format("--base {}: names no commit in the workspace", rev));
  }
  if (output->code != 0) return ScriptFailure("resolving --base " + rev, output->code);
  const bool hex = (output->text.size() == 40 || output->text.size() == 64) &&
                   output->text.find_first_not_of("0123456789abcdef") == std::string::npos;
  if (!hex) return base::Error::Message(fmt::format("--base {}: git named no commit id", rev));
  return output->text;
}

base::Status WriteHarvestPatch(const HarvestPlan& plan, const std::string& base, int out_fd,
                               HarvestBounds* bounds) {
  auto code = RunGitSandbox(plan.patch, base, out_fd, bounds);
  if (!code) return code.error();
  if (*code != 0) return ScriptFailure("the harvest's git", *code);
  return {};
}

}  // namespace sbx::dispatch
