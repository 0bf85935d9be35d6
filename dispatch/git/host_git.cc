#include "dispatch/git/host_git.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include <fmt/format.h>

#include "base/exit_status.h"
#include "base/syscalls.h"
#include "base/unique_fd.h"
#include "dispatch/sys/run_as_child.h"

namespace sbx::dispatch {
namespace {

constexpr size_t kOutputLimit = 1 << 20;
constexpr size_t kErrorsLimit = 1 << 16;

std::string Quote(const std::string& value) {
  std::string out = "\"";
  for (char c : value) {
    if (c == '\\' || c == '"') out += '\\';
    out += c;
  }
  return out + "\"";
}

// Global configuration as a memfd: inherited by every git process of the step and a
// file nobody else can replace (reached as /proc/self/fd/N).
int ConfigMemfd(const HostGitOptions& options) {
  int fd = ::memfd_create("ateam-git-config", 0);
  if (fd < 0) return -1;
  std::string text = "[safe]\n";
  for (const auto& dir : options.safe_directories) {
    if (dir.find('\n') == std::string::npos) text += fmt::format("\tdirectory = {}\n", Quote(dir));
  }
  text +=
      "[core]\n\thooksPath = /dev/null\n\tfsmonitor = false\n"
      "[protocol]\n\tallow = never\n[protocol \"file\"]\n\tallow = always\n";
  if (::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) return -1;
  return fd;
}

[[noreturn]] void GitChild(int dir_fd, const std::vector<std::string>& args,
                           const HostGitOptions& options, int out_fd, int err_fd,
                           const base::ChildReport& report) {
  if (::fchdir(dir_fd) != 0) FailGitStep(report, GitChildStep::kEnter, errno);
  int config = ConfigMemfd(options);
  if (config < 0) FailGitStep(report, GitChildStep::kConfigure, errno);
  ::setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
  ::setenv("GIT_CONFIG_GLOBAL", fmt::format("/proc/self/fd/{}", config).c_str(), 1);
  ::setenv("GIT_TERMINAL_PROMPT", "0", 1);
  ::setenv("GIT_PAGER", "cat", 1);
  for (const char* name :
       {"GIT_DIR", "GIT_WORK_TREE", "GIT_CONFIG", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT",
        "GIT_TEMPLATE_DIR", "GIT_EXEC_PATH", "GIT_INDEX_FILE", "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_OBJECT_DIRECTORY", "GIT_COMMON_DIR", "GIT_EXTERNAL_DIFF", "GIT_SSH", "GIT_SSH_COMMAND",
        "GIT_ASKPASS", "GIT_PROXY_COMMAND"}) {
    ::unsetenv(name);
  }
  ::dup2(out_fd, STDOUT_FILENO);
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
  if (options.stdout_fd < 0) {
    auto out_pipe = base::MakePipe();
    if (!out_pipe) return out_pipe.error();
    out_read = std::move(out_pipe->read_end);
    out_write = std::move(out_pipe->write_end);
  }
  int child_out = options.stdout_fd >= 0 ? options.stdout_fd : out_write.get();
  int child_err = err_pipe->write_end.get();
  HostGitRun run;
  auto child = RunChildAs(
      ids,
      [&](const base::ChildReport& report) -> int {
        GitChild(dir_fd, args, options, child_out, child_err, report);
      },
      [&](pid_t) {
        out_write.reset();
        err_pipe->write_end.reset();
        Drain(out_read ? out_read.get() : -1, err_pipe->read_end.get(), &run.output, &run.errors);
      });
  if (!child) return child.error();
  run.exit_code = base::ExitCodeFromWaitStatus(child->status);
  if (!child->failure) return run;
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
