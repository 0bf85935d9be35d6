#include "dispatch/git/host_git.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>

#include <fmt/format.h>

#include "base/exit_status.h"
#include "base/syscalls.h"
#include "base/unique_fd.h"
#include "dispatch/git/git_child_env.h"
#include "dispatch/sys/run_as_child.h"
#include "dispatch/sys/stop_signals.h"

namespace sbx::dispatch {
namespace {

constexpr size_t kOutputLimit = 1 << 20;
constexpr size_t kErrorsLimit = 1 << 16;

[[noreturn]] void GitChild(int dir_fd, const std::vector<std::string>& args,
                           const HostGitOptions& options, int out_fd, int err_fd,
                           const base::ChildReport& report) {
  // Both sides set the group, so it exists whichever runs first.
  if (options.stop_fd >= 0) (void)::setpgid(0, 0);
  if (::fchdir(dir_fd) != 0) FailGitStep(report, GitChildStep::kEnter, errno);
  const int err = PrepareGitChild({.safe_directories = options.safe_directories, .offline = true});
  if (err != 0) FailGitStep(report, GitChildStep::kConfigure, err);
  if (!options.index_file.empty()) {
    char cwd[PATH_MAX];
    if (::getcwd(cwd, sizeof(cwd)) == nullptr) FailGitStep(report, GitChildStep::kEnter, errno);
    const std::string index = std::string(cwd) + "/" + options.index_file;
    ::setenv("GIT_INDEX_FILE", index.c_str(), 1);  // NOLINT(concurrency-mt-unsafe): one thread
  }
  if (out_fd < 0) out_fd = ::open("/dev/null", O_WRONLY);
  if (out_fd >= 0) ::dup2(out_fd, STDOUT_FILENO);
  ::dup2(err_fd, STDERR_FILENO);
  int in_fd = options.stdin_fd >= 0 ? options.stdin_fd : ::open("/dev/null", O_RDONLY);
  if (in_fd >= 0) ::dup2(in_fd, STDIN_FILENO);
  std::vector<const char*> argv = {"git"};
  for (const auto& arg : args) argv.push_back(arg.c_str());
  argv.push_back(nullptr);
  ::execvp("git", const_cast<char* const*>(argv.data()));
  FailGitStep(report, GitChildStep::kExec, errno);
}

// Reads both pipes until git closed them; keeps at most each limit.
void Drain(int out_fd, int err_fd, std::string* output, std::string* errors) {
  struct pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  std::string* sinks[2] = {output, errors};
  size_t limits[2] = {kOutputLimit, kErrorsLimit};
  int open = (out_fd >= 0 ? 1 : 0) + 1;
  if (out_fd < 0) fds[0].fd = -1;
  char buf[8192];
  while (open > 0) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      ssize_t n = ::read(fds[i].fd, buf, sizeof(buf));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        fds[i].fd = -1;
        --open;
        continue;
      }
      if (sinks[i]->size() < limits[i]) sinks[i]->append(buf, static_cast<size_t>(n));
    }
  }
}

}  // namespace

base::Result<HostGitRun> RunHostGit(const RunAsIds& ids, int dir_fd,
                                    const std::vector<std::string>& args,
                                    const HostGitOptions& options) {
  auto err_pipe = base::MakePipe();
  if (!err_pipe) return err_pipe.error();
  base::UniqueFd out_read;
  base::UniqueFd out_write;
  const bool stoppable = options.stop_fd >= 0;
  if (options.stdout_fd < 0 && !stoppable) {
    auto out_pipe = base::MakePipe();
    if (!out_pipe) return out_pipe.error();
    out_read = std::move(out_pipe->read_end);
    out_write = std::move(out_pipe->write_end);
  }
  int child_out = options.stdout_fd >= 0 ? options.stdout_fd : out_write ? out_write.get() : -1;
  int child_err = err_pipe->write_end.get();
  HostGitRun run;
  auto child = RunChildAs(
      ids,
      [&](const base::ChildReport& report) -> int {
        GitChild(dir_fd, args, options, child_out, child_err, report);
      },
      [&](pid_t pid) {
        out_write.reset();
        err_pipe->write_end.reset();
        if (stoppable) {
          (void)::setpgid(pid, pid);
          base::UniqueFd pidfd(base::PidfdOpen(pid));
          if (pidfd) {
            run.stopped_by = WaitOrStop(pidfd.get(), options.stop_fd, pid, err_pipe->read_end.get(),
                                        &run.errors, kErrorsLimit);
          }
          if (run.stopped_by != 0) return;
        }
        Drain(out_read ? out_read.get() : -1, err_pipe->read_end.get(), &run.output, &run.errors);
      });
  if (!child) return child.error();
  run.exit_code = base::ExitCodeFromWaitStatus(child->status);
  if (!child->failure || run.stopped_by != 0) return run;
  const int err = child->failure->err;
  std::string who = ids ? fmt::format("uid {}", ids->uid) : std::string("this user");
  switch (static_cast<GitChildStep>(child->failure->step)) {
    case GitChildStep::kEnter:
      return base::Error(err, fmt::format("{} can't enter the workspace for git", who));
    case GitChildStep::kConfigure:
      return base::Error(err, "can't write git's configuration (memfd)");
    case GitChildStep::kUnreadable:
    case GitChildStep::kNotARepository:
    case GitChildStep::kExec:
      break;
  }
  if (err == ENOENT) return base::Error::Message("git is not installed");
  return base::Error(err, "can't run git");
}

std::string GitComplaintLine(const std::string& text) {
  std::string last;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    if (line.starts_with("fatal: ") || line.starts_with("error: ")) return line;
    if (!line.empty()) last = line;
    start = end + 1;
  }
  return last;
}

}  // namespace sbx::dispatch
