#include "tests/supervise/sandbox_harness.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <optional>
#include <span>

#include "base/unique_fd.h"
#include "relay/endpoint.h"
#include "relay/handoff.h"
#include "security/capabilities.h"
#include "supervise/supervise_command.h"

namespace sbx::supervise::testing {
namespace {

using base::UniqueFd;
using Clock = std::chrono::steady_clock;

constexpr char kSkip = 'S';
constexpr char kFail = 'F';

// Child side: one report message ("S..." skip or "F..." failure) on the report pipe.
void Report(int fd, char kind, const std::string& what) {
  std::string text = kind + what + ": " + std::strerror(errno);
  (void)!::write(fd, text.data(), text.size());
}

bool WriteFile(const char* path, const std::string& text) {
  UniqueFd fd(::open(path, O_WRONLY | O_CLOEXEC));
  return fd && ::write(fd.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size());
}

// Grandchild: pid 1 of the new pid namespace. Never returns.
[[noreturn]] void RunAsPid1(const std::vector<std::string>& args, const SandboxOptions& options,
                            int report) {
  (void)::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (options.mount_proc) {
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        ::mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
      Report(report, kSkip, "cannot mount a fresh /proc in the sandbox");
      ::_exit(0);
    }
  }
  if (options.keep_caps) {
    const uint64_t keep = *options.keep_caps;
    if (security::DropBoundingSet(keep, 63) != 0 ||
        security::SetCapSets(keep, keep, 0, /*tolerate_eperm=*/false) != 0) {
      Report(report, kFail, "cannot narrow the capabilities of pid 1");
      ::_exit(1);
    }
  }
  ::close(report);
  ::_exit(RunSuperviseCommand(args));
}

// The intermediate child: enters the namespaces, forks pid 1, exits with its exit code.
[[noreturn]] void RunIntermediate(const std::vector<std::string>& args,
                                  const SandboxOptions& options, int report, int stderr_fd,
                                  uid_t uid, gid_t gid) {
  (void)::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::dup2(stderr_fd, STDERR_FILENO) < 0) {
    Report(report, kFail, "dup2");
    ::_exit(1);
  }
  if (::unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID) != 0) {
    Report(report, kSkip, "user namespaces unavailable: unshare(NEWUSER|NEWNS|NEWPID)");
    ::_exit(0);
  }
  if (!WriteFile("/proc/self/setgroups", "deny") ||
      !WriteFile("/proc/self/uid_map", "0 " + std::to_string(uid) + " 1") ||
      !WriteFile("/proc/self/gid_map", "0 " + std::to_string(gid) + " 1")) {
    Report(report, kFail, "cannot write the id maps");
    ::_exit(1);
  }
  pid_t pid = ::fork();
  if (pid < 0) {
    Report(report, kFail, "fork of pid 1");
    ::_exit(1);
  }
  if (pid == 0) RunAsPid1(args, options, report);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) ::_exit(WEXITSTATUS(status));
  Report(report, kFail, "pid 1 was killed by signal " + std::to_string(WTERMSIG(status)));
  ::_exit(1);
}

std::string ReadAll(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n = 0;
  while ((n = ::read(fd, buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
  return out;
}

// Collects `stderr_fd` until `pid` exits or the deadline passes. Returns the wait status,
// or nullopt on timeout (the child is then killed and reaped).
std::optional<int> WaitCollecting(pid_t pid, int stderr_fd, Clock::time_point deadline,
                                  std::string* out) {
  UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  bool stderr_open = true;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0 || !pidfd) break;
    pollfd fds[2] = {{pidfd.get(), POLLIN, 0}, {stderr_open ? stderr_fd : -1, POLLIN, 0}};
    if (::poll(fds, 2, static_cast<int>(left.count())) < 0 && errno != EINTR) break;
    if ((fds[1].revents & (POLLIN | POLLHUP)) != 0) {
      char buf[4096];
      ssize_t n = ::read(stderr_fd, buf, sizeof(buf));
      if (n > 0) out->append(buf, static_cast<size_t>(n));
      if (n == 0) stderr_open = false;
    }
    if ((fds[0].revents & POLLIN) != 0) {
      int status = 0;
      ::waitpid(pid, &status, 0);
      if (stderr_open) *out += ReadAll(stderr_fd);  // every writer is gone with pid 1
      return status;
    }
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  return std::nullopt;
}

}  // namespace

SandboxRun RunSupervisorInSandbox(const std::vector<std::string>& args,
                                  const SandboxOptions& options) {
  SandboxRun run;
  auto report = base::MakePipe();
  auto err = base::MakePipe();
  if (!report || !err) {
    run.message = "pipe failed";
    return run;
  }
  const uid_t uid = ::getuid();
  const gid_t gid = ::getgid();
  pid_t pid = ::fork();
  if (pid < 0) {
    run.message = std::string("fork: ") + std::strerror(errno);
    return run;
  }
  if (pid == 0) {
    RunIntermediate(args, options, report->write_end.get(), err->write_end.get(), uid, gid);
  }
  report->write_end.reset();
  err->write_end.reset();
  auto status =
      WaitCollecting(pid, err->read_end.get(), Clock::now() + options.timeout, &run.stderr_text);
  const std::string reported = ReadAll(report->read_end.get());
  if (!status) {
    run.message = "timed out; stderr: " + run.stderr_text;
  } else if (!reported.empty()) {
    run.kind = reported[0] == kSkip ? SandboxRun::Kind::kSkipped : SandboxRun::Kind::kHarnessFailed;
    run.message = reported.substr(1);
  } else if (!WIFEXITED(*status)) {
    run.message = "the harness child was killed";
  } else {
    run.kind = SandboxRun::Kind::kRan;
    run.exit_code = WEXITSTATUS(*status);
  }
  return run;
}

namespace {

void EchoUntilEof(int fd) {
  (void)::fcntl(fd, F_SETFL, 0);  // blocking: this process does nothing else meanwhile
  char buf[16384];
  ssize_t n = 0;
  while ((n = ::read(fd, buf, sizeof(buf))) > 0) {
    for (ssize_t off = 0; off < n;) {
      ssize_t w = ::send(fd, buf + off, static_cast<size_t>(n - off), MSG_NOSIGNAL);
      if (w <= 0) return;
      off += w;
    }
  }
}

}  // namespace

EchoServer::EchoServer(const std::string& path) {
  auto endpoint = relay::Endpoint::Unix(path);
  if (!endpoint) {
    error_ = endpoint.error().Render();
    return;
  }
  auto listener = endpoint->Listen();
  if (!listener) {
    error_ = listener.error().Render();
    return;
  }
  pid_ = ::fork();
  if (pid_ < 0) {
    error_ = std::string("fork: ") + std::strerror(errno);
    return;
  }
  if (pid_ != 0) return;
  (void)::prctl(PR_SET_PDEATHSIG, SIGKILL);
  (void)::fcntl(listener->get(), F_SETFL, 0);  // blocking: this process does nothing else
  // The first connection is the supervisor's handoff channel (relay/handoff.h), which brings
  // the route's listener; every connection accepted from it is echoed until EOF, one at a
  // time.
  UniqueFd channel(::accept4(listener->get(), nullptr, nullptr, SOCK_CLOEXEC));
  if (!channel) ::_exit(1);
  UniqueFd route_listener;
  while (!route_listener) {
    pollfd pfd{channel.get(), POLLIN, 0};
    if (::poll(&pfd, 1, -1) < 0) continue;
    relay::ReceiveBatch batch;
    relay::ReceiveSockets(channel.get(), batch);
    for (size_t i = 0; i < batch.count && !route_listener; ++i) {
      if (batch.items[i].check == relay::HandoffCheck::kOk) {
        route_listener = std::move(batch.items[i].fd);
      }
    }
    if (batch.closed && !route_listener) ::_exit(0);
  }
  (void)::fcntl(route_listener.get(), F_SETFL, 0);
  for (;;) {
    UniqueFd connection(::accept4(route_listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (connection) {
      EchoUntilEof(connection.get());
    } else if (errno != EINTR && errno != ECONNABORTED) {
      ::_exit(0);
    }
  }
}

EchoServer::~EchoServer() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

}  // namespace sbx::supervise::testing
