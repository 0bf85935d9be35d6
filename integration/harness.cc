#include "integration/harness.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

extern char** environ;

namespace sbx::integration {
namespace {

using Clock = std::chrono::steady_clock;

// Harness setup failures are bugs in the test environment, not test results.
[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "integration harness: %s: %s\n", what.c_str(), std::strerror(errno));
  std::abort();
}

int MillisUntil(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::max<long long>(0, left.count()));
}

std::vector<std::string> MergedEnv(const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  for (char** entry = environ; *entry != nullptr; ++entry) env.emplace_back(*entry);
  for (const std::string& kv : extra) {
    std::string name = kv.substr(0, kv.find('=') + 1);
    std::erase_if(env, [&](const std::string& e) { return e.rfind(name, 0) == 0; });
    env.push_back(kv);
  }
  return env;
}

std::vector<char*> CStrings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// Runs in the forked child only: async-signal-safe calls, no allocation, ends in exec or
// _exit. `pty_slave` is null unless a controlling terminal was requested.
[[noreturn]] void ExecChild(char* const* argv, char* const* envp, const RunOptions& options,
                            const char* pty_slave, int out_fd, int err_fd) {
  if (pty_slave != nullptr) {
    // A new session has no controlling tty; opening the slave and TIOCSCTTY attaches it.
    int tty = setsid() < 0 ? -1 : open(pty_slave, O_RDWR);
    if (tty < 0 || ioctl(tty, TIOCSCTTY, 0) != 0) _exit(126);
    close(tty);
  } else {
    setpgid(0, 0);
  }
  int null_fd = open("/dev/null", O_RDONLY);
  if (null_fd < 0 || dup2(null_fd, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0) {
    _exit(126);
  }
  // Move sources out of the way first, so a target number never clobbers another source.
  constexpr int kScratch = 1000;
  int targets[64];
  int scratch[64];
  size_t count = std::min<size_t>(options.pass_fds.size(), 64);
  for (size_t i = 0; i < count; ++i) {
    scratch[i] = fcntl(options.pass_fds[i].second, F_DUPFD_CLOEXEC, kScratch);
    if (scratch[i] < 0) _exit(126);
  }
  for (size_t i = 0; i < count; ++i) {
    if (dup2(scratch[i], options.pass_fds[i].first) < 0) _exit(126);
    targets[i] = options.pass_fds[i].first;
  }
  std::sort(targets, targets + count);
  // Close everything else above stderr: inherited strays would show up in the sandbox.
  unsigned int next = 3;
  for (size_t i = 0; i <= count; ++i) {
    unsigned int end = i < count ? static_cast<unsigned int>(targets[i]) : UINT_MAX;
    if (end > next) syscall(SYS_close_range, next, i < count ? end - 1 : UINT_MAX, 0);
    if (i < count) next = std::max(next, end + 1);
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  signal(SIGCHLD, options.ignore_sigchld ? SIG_IGN : SIG_DFL);
  signal(SIGPIPE, SIG_DFL);
  if (!options.cwd.empty() && chdir(options.cwd.c_str()) != 0) _exit(126);
  execvpe(argv[0], argv, envp);
  constexpr char kMsg[] = "integration harness: exec failed\n";
  ssize_t ignored = write(2, kMsg, sizeof kMsg - 1);
  (void)ignored;
  _exit(127);
}

}  // namespace

Pipe MakePipe() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) Die("pipe2");
  return {Fd(fds[0]), Fd(fds[1])};
}

std::string Describe(const RunResult& r) {
  std::ostringstream out;
  out << "command: " << r.command << "\nexit=" << r.exit_code << " signal=" << r.term_signal
      << (r.timed_out ? " TIMED OUT" : "") << "\n--- stdout ---\n"
      << r.out << "--- stderr ---\n"
      << r.err << "---";
  return out.str();
}

Process Process::Start(const Args& argv, const RunOptions& options) {
  Pipe out = MakePipe();
  Pipe err = MakePipe();
  Process process;
  std::string slave_name;
  if (options.controlling_pty) {
    process.pty_master_ = Fd(posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC));
    if (process.pty_master_.get() < 0 || grantpt(process.pty_master_.get()) != 0 ||
        unlockpt(process.pty_master_.get()) != 0) {
      Die("posix_openpt");
    }
    slave_name = ptsname(process.pty_master_.get());
  }
  // Everything the child needs is built before fork: it must not allocate.
  Args args = argv;
  std::vector<std::string> env = MergedEnv(options.extra_env);
  std::vector<char*> c_args = CStrings(args);
  std::vector<char*> c_env = CStrings(env);
  pid_t pid = fork();
  if (pid < 0) Die("fork");
  if (pid == 0) {
    ExecChild(c_args.data(), c_env.data(), options,
              options.controlling_pty ? slave_name.c_str() : nullptr, out.write_end.get(),
              err.write_end.get());
  }
  if (!options.controlling_pty) setpgid(pid, pid);  // also done in the child; avoids a race
  process.pid_ = pid;
  process.out_fd_ = std::move(out.read_end);
  process.err_fd_ = std::move(err.read_end);
  return process;
}

Process::Process(Process&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      reaped_(other.reaped_),
      status_(other.status_),
      out_fd_(std::move(other.out_fd_)),
      err_fd_(std::move(other.err_fd_)),
      pty_master_(std::move(other.pty_master_)),
      out_(std::move(other.out_)),
      err_(std::move(other.err_)) {}

Process::~Process() {
  if (pid_ <= 0 || reaped_) return;
  kill(-pid_, SIGKILL);
  kill(pid_, SIGKILL);
  TryReap(true);
}

bool Process::TryReap(bool block) {
  if (reaped_) return true;
  pid_t rc = waitpid(pid_, &status_, block ? 0 : WNOHANG);
  reaped_ = rc == pid_;
  return reaped_;
}

bool Process::Pump(Clock::time_point deadline) {
  pollfd fds[2];
  Fd* owners[2];
  nfds_t n = 0;
  for (Fd* fd : {&out_fd_, &err_fd_}) {
    if (fd->get() < 0) continue;
    fds[n] = {fd->get(), POLLIN, 0};
    owners[n++] = fd;
  }
  int wait_ms = std::min(MillisUntil(deadline), 20);  // short slices: reaping is polled too
  if (n == 0) {
    poll(nullptr, 0, wait_ms);
  } else if (poll(fds, n, wait_ms) > 0) {
    for (nfds_t i = 0; i < n; ++i) {
      if (fds[i].revents == 0) continue;
      char buf[4096];
      ssize_t got = read(fds[i].fd, buf, sizeof buf);
      if (got > 0) {
        (owners[i] == &out_fd_ ? out_ : err_).append(buf, got);
      } else if (got == 0 || errno != EINTR) {
        owners[i]->reset();
      }
    }
  }
  return Clock::now() < deadline;
}

bool Process::WaitForOutput(std::string_view needle, std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  while (out_.find(needle) == std::string::npos) {
    if (out_fd_.get() < 0 || !Pump(deadline)) return out_.find(needle) != std::string::npos;
  }
  return true;
}

bool Process::WaitForEof(std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  while (out_fd_.get() >= 0 || err_fd_.get() >= 0) {
    if (!Pump(deadline)) return out_fd_.get() < 0 && err_fd_.get() < 0;
  }
  return true;
}

RunResult Process::Wait(std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  RunResult result;
  // Collect output until the child is reaped and the pipes are closed. A process that
  // outlives the child while holding the pipes only delays us until the deadline.
  while (!(TryReap(false) && out_fd_.get() < 0 && err_fd_.get() < 0)) {
    if (!Pump(deadline)) break;
  }
  if (!reaped_) {
    result.timed_out = true;
    kill(-pid_, SIGKILL);
    kill(pid_, SIGKILL);
    TryReap(true);
  }
  result.exit_code = WIFEXITED(status_) && !result.timed_out ? WEXITSTATUS(status_) : -1;
  result.term_signal = WIFSIGNALED(status_) ? WTERMSIG(status_) : 0;
  result.out = out_;
  result.err = err_;
  return result;
}

RunResult RunCommand(const Args& argv, const RunOptions& options) {
  Process process = Process::Start(argv, options);
  RunResult result = process.Wait(options.timeout);
  for (const std::string& arg : argv) result.command += (result.command.empty() ? "" : " ") + arg;
  return result;
}

}  // namespace sbx::integration
