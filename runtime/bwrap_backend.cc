#include "runtime/bwrap_backend.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <span>

#include "base/child_process.h"
#include "base/exit_status.h"
#include "runtime/bwrap_render.h"

namespace sbx::runtime {
namespace {

// The fd numbers the plan itself names (the caller's inherited fds), unsorted.
std::vector<int> PlanFds(const Plan& plan) {
  std::vector<int> fds;
  auto note = [&fds](const std::optional<int>& fd) {
    if (fd) fds.push_back(*fd);
  };
  for (const PlanOp& op : plan.ops) {
    if (const auto* bind = std::get_if<BindFdOp>(&op)) note(bind->fd);
    if (const auto* file = std::get_if<FileOp>(&op)) note(file->fd);
    if (const auto* data = std::get_if<BindDataOp>(&op)) note(data->fd);
  }
  for (const auto* fd : {&plan.seccomp_fd, &plan.info_fd, &plan.json_status_fd, &plan.sync_fd,
                         &plan.block_fd, &plan.userns_block_fd, &plan.joined.userns_fd,
                         &plan.joined.userns2_fd, &plan.joined.pidns_fd}) {
    note(*fd);
  }
  return fds;
}

// The highest fd number the plan names, or 2.
int HighestPlanFd(const Plan& plan) {
  std::vector<int> fds = PlanFds(plan);
  return std::max(2, fds.empty() ? 2 : *std::max_element(fds.begin(), fds.end()));
}

// Every fd above 2 that bwrap must get, sorted and unique: the plan's own and the memfds.
std::vector<int> FdsForBwrap(const Plan& plan, const BwrapInvocation& invocation) {
  std::vector<int> fds = PlanFds(plan);
  fds.push_back(invocation.args_fd.get());
  for (const auto& fd : invocation.seccomp_fds) fds.push_back(fd.get());
  std::erase_if(fds, [](int fd) { return fd <= 2; });
  std::sort(fds.begin(), fds.end());
  fds.erase(std::unique(fds.begin(), fds.end()), fds.end());
  return fds;
}

// Marks close-on-exec every fd above 2 except `keep` (sorted): the gaps between them.
int CloseOthersOnExec(const std::vector<int>& keep) noexcept {
  unsigned int next = 3;
  for (int fd : keep) {
    const auto number = static_cast<unsigned int>(fd);
    if (number > next && ::close_range(next, number - 1, CLOSE_RANGE_CLOEXEC) != 0) return errno;
    next = number + 1;
  }
  return ::close_range(next, ~0U, CLOSE_RANGE_CLOEXEC) == 0 ? 0 : errno;
}

base::Status WriteAll(int fd, std::span<const char> data, const std::string& what) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return base::ErrnoError("bwrap backend: can't write", what);
    data = data.subspan(static_cast<size_t>(n));
  }
  return {};
}

// A close-on-exec memfd holding `data`, read offset 0, numbered at least `min_fd`.
base::Result<base::UniqueFd> MakeDataFd(std::span<const char> data, const std::string& what,
                                        int min_fd) {
  base::UniqueFd created(::memfd_create("sbx-bwrap-data", MFD_CLOEXEC));
  if (!created) return base::ErrnoError("bwrap backend: can't create a memfd for", what);
  base::UniqueFd fd(::fcntl(created.get(), F_DUPFD_CLOEXEC, min_fd));
  if (!fd) return base::ErrnoError("bwrap backend: can't move the memfd for", what);
  if (auto written = WriteAll(fd.get(), data, what); !written) return written.error();
  // bwrap reads from the current offset, which the write left at the end.
  if (::lseek(fd.get(), 0, SEEK_SET) != 0) {
    return base::ErrnoError("bwrap backend: can't rewind the memfd for", what);
  }
  return fd;
}

}  // namespace

// In the process about to become bwrap: only fcntl and execve (fork-child safe).
int ExecPrepared(const BwrapInvocation& invocation, char* const* argv) noexcept {
  // bwrap hands every fd it inherits on to the command; `run` must not hand over the
  // caller's (a shell's or a supervisor's leftovers, a host directory).
  if (invocation.close_inherited_fds) {
    if (int err = CloseOthersOnExec(invocation.bwrap_fds)) return err;
  }
  // The plan's own fds (--ro-bind-data, --file, ...) reach bwrap even when the caller
  // keeps them close-on-exec so that nothing else it starts inherits them. Errors are
  // bwrap's to report (a number that is not open).
  for (int fd : invocation.bwrap_fds) (void)::fcntl(fd, F_SETFD, 0);
  if (::fcntl(invocation.args_fd.get(), F_SETFD, 0) != 0) return errno;
  for (const auto& fd : invocation.seccomp_fds) {
    if (::fcntl(fd.get(), F_SETFD, 0) != 0) return errno;
  }
  // bwrap 0.8.0's monitor hangs when SIGCHLD is ignored; a caller may have left it so.
  ::signal(SIGCHLD, SIG_DFL);
  ::execve(invocation.path.c_str(), argv, environ);
  return errno;
}

std::vector<char*> ArgvPointers(const BwrapInvocation& invocation) {
  std::vector<char*> pointers;
  pointers.reserve(invocation.argv.size() + 1);
  for (const auto& arg : invocation.argv) pointers.push_back(const_cast<char*>(arg.c_str()));
  pointers.push_back(nullptr);
  return pointers;
}

base::Error ExecError(int err, const std::string& path) {
  return {err, "bwrap backend: can't execute", path};
}

namespace {

// The one step a LaunchWithBwrap child can fail at.
constexpr uint32_t kExecStep = 1;

base::Result<int> WaitForBwrap(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return base::ErrnoError("bwrap backend: can't wait for", "bwrap");
  }
  return base::ExitCodeFromWaitStatus(status);
}

}  // namespace

base::Result<BwrapInvocation> PrepareBwrapInvocation(const Plan& plan,
                                                     const std::string& bwrap_path) {
  if (::access(bwrap_path.c_str(), X_OK) != 0) {
    if (errno == ENOENT) return base::ErrnoError("bwrap backend:", bwrap_path + " not found");
    return ExecError(errno, bwrap_path);
  }
  BwrapInvocation invocation;
  invocation.path = bwrap_path;
  const int min_fd = HighestPlanFd(plan) + 1;

  BwrapFdNumbers numbers;
  for (size_t i = 0; i < plan.seccomp_programs.size(); ++i) {
    const auto& program = plan.seccomp_programs[i];
    auto fd = MakeDataFd({reinterpret_cast<const char*>(program.data()), program.size()},
                         "seccomp program " + std::to_string(i), min_fd);
    if (!fd) return fd.error();
    numbers.seccomp_programs.push_back(fd->get());
    invocation.seccomp_fds.push_back(std::move(*fd));
  }

  invocation.options = RenderBwrapOptions(plan, numbers);
  std::string data;
  for (const auto& option : invocation.options) {
    data += option;
    data += '\0';
  }
  auto args_fd = MakeDataFd(data, "--args data", min_fd);
  if (!args_fd) return args_fd.error();
  invocation.args_fd = std::move(*args_fd);

  invocation.close_inherited_fds = plan.close_inherited_fds;
  invocation.bwrap_fds = FdsForBwrap(plan, invocation);
  invocation.argv = {bwrap_path, "--args", std::to_string(invocation.args_fd.get()), "--",
                     plan.exec_file};
  if (!plan.argv.empty()) {
    invocation.argv.insert(invocation.argv.end(), plan.argv.begin() + 1, plan.argv.end());
  }
  return invocation;
}

base::Status ExecBwrap(const Plan& plan, const std::string& bwrap_path) {
  auto invocation = PrepareBwrapInvocation(plan, bwrap_path);
  if (!invocation) return invocation.error();
  std::vector<char*> argv = ArgvPointers(*invocation);
  return ExecError(ExecPrepared(*invocation, argv.data()), bwrap_path);
}

base::Result<int> LaunchWithBwrap(const Plan& plan, const std::string& bwrap_path) {
  auto invocation = PrepareBwrapInvocation(plan, bwrap_path);
  if (!invocation) return invocation.error();
  std::vector<char*> argv = ArgvPointers(*invocation);
  // The child reports execve's errno; EOF without data means bwrap was exec'd.
  auto report = base::ChildReport::Open();
  if (!report) return report.error();

  // The child only makes system calls until it execs: everything was prepared above.
  auto child = base::CloneWithPidfd(0, "the bwrap backend's child");
  if (!child) return child.error().WithContext("bwrap backend");
  if (child->pid == 0) {
    report->CloseReadEnd();
    // If the report cannot be written the parent sees EOF and reports exit status 127.
    report->Fail(kExecStep, ExecPrepared(*invocation, argv.data()), 127);
  }
  report->CloseWriteEnd();
  auto failure = report->Read();
  auto code = WaitForBwrap(child->pid);
  if (failure && *failure) return ExecError((*failure)->err, bwrap_path);
  return code;
}

}  // namespace sbx::runtime
