#include "supervise/supervisor.h"

#include <poll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/exit_status.h"
#include "base/syscalls.h"
#include "relay/event_loop.h"
#include "security/landlock.h"
#include "supervise/agent_process.h"
#include "supervise/agent_tty.h"
#include "supervise/tunnel_setup.h"

namespace sbx::supervise {
namespace {

using base::ErrnoError;
using base::Error;
using base::Result;
using base::Status;
using base::UniqueFd;

// Blocks the signals the loop handles and returns a signalfd for them. Blocked before
// anything else so that a SIGTERM sent during setup waits in the queue (and reaches the
// agent) instead of killing us, and no SIGCHLD is lost between the fork and the loop.
Result<UniqueFd> TakeOverSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  if (::sigprocmask(SIG_BLOCK, &set, nullptr) != 0) return ErrnoError("Can't block signals");
  UniqueFd fd(::signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC));
  if (!fd) return ErrnoError("Can't create a signalfd");
  // The relay already sends with MSG_NOSIGNAL; this covers any other write to a closed peer.
  if (::signal(SIGPIPE, SIG_IGN) == SIG_ERR) return ErrnoError("Can't ignore SIGPIPE");
  return fd;
}

// Tells `run` over the --report channel that the command could not be started
// ("exec-failed ERRNO\n"), then waits until `run` closes its end (it has read the line), so
// that the supervisor, whose exit ends the sandbox, is still there to be checked as the
// channel's peer. Best effort: without an answer the exit code alone says it.
void ReportExecFailure(int channel, int err, std::chrono::milliseconds timeout) {
  const std::string line = "exec-failed " + std::to_string(err) + "\n";
  if (::send(channel, line.data(), line.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(line.size())) {
    return;
  }
  (void)::shutdown(channel, SHUT_WR);
  pollfd wait{channel, POLLIN, 0};
  char sink[64];
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    int ready = ::poll(&wait, 1, static_cast<int>(left.count()) + 1);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return;
    ssize_t n = ::recv(channel, sink, sizeof(sink), MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return;  // closed: read
  }
}

// The running sandbox: the loop, the agent and the signal stream (the routes' listeners are
// the host relay's by now).
class Supervision {
 public:
  Supervision(std::unique_ptr<relay::EventLoop> loop, UniqueFd signal_fd)
      : loop_(std::move(loop)), signal_fd_(std::move(signal_fd)) {}
  ~Supervision() {
    if (!exit_code_ && agent_.pidfd) KillAgent();
  }
  Supervision(const Supervision&) = delete;
  Supervision& operator=(const Supervision&) = delete;

  // Takes the agent and watches its pidfd and the signalfd.
  Status Watch(AgentProcess agent);
  // The agent leads its own session on a terminal: nobody above it in that session could
  // ever continue it, so a stop of the agent itself (not of its jobs) is undone at once.
  void ContinueStoppedAgent() { continue_stopped_ = true; }
  // Runs until the agent is gone (or a second signal); returns the exit code.
  Result<int> Run();

 private:
  void OnSignals();
  void ReapChildren();
  void KillAgent();
  void Finish(int code) {
    exit_code_ = code;
    loop_->Stop();
  }

  std::unique_ptr<relay::EventLoop> loop_;
  UniqueFd signal_fd_;
  AgentProcess agent_;
  int stop_signals_ = 0;
  bool continue_stopped_ = false;
  std::optional<int> exit_code_;
};

Status Supervision::Watch(AgentProcess agent) {
  agent_ = std::move(agent);
  if (auto w =
          loop_->WatchCallback(agent_.pidfd.get(), EPOLLIN, [this](uint32_t) { ReapChildren(); });
      !w) {
    return w;
  }
  return loop_->WatchCallback(signal_fd_.get(), EPOLLIN, [this](uint32_t) { OnSignals(); });
}

Result<int> Supervision::Run() {
  // A child that exited between the fork and the first poll is still pending on the pidfd
  // and the signalfd, both level-triggered, so no check is needed before running.
  if (auto run = loop_->Run(); !run) return run.error();
  if (!exit_code_) return Error(0, "The event loop stopped before the agent exited");
  return *exit_code_;
}

void Supervision::OnSignals() {
  signalfd_siginfo info{};
  bool child_signal = false;
  while (::read(signal_fd_.get(), &info, sizeof(info)) == static_cast<ssize_t>(sizeof(info))) {
    const int sig = static_cast<int>(info.ssi_signo);
    if (sig == SIGCHLD) {
      child_signal = true;
      continue;
    }
    // SIGTERM/SIGINT: the first is the host asking the agent to stop; a second means it
    // must stop now, and our exit as pid 1 takes the whole sandbox with it.
    if (++stop_signals_ == 1) {
      (void)base::PidfdSendSignal(agent_.pidfd.get(), sig);
    } else {
      KillAgent();
      Finish(base::kSignalExitBase + sig);
      return;
    }
  }
  if (child_signal) ReapChildren();
}

// Reaps every exited child: the agent, and the orphans re-parented to pid 1.
void Supervision::ReapChildren() {
  for (;;) {
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, WNOHANG | (continue_stopped_ ? WUNTRACED : 0));
    if (pid < 0 && errno == EINTR) continue;
    if (pid <= 0) return;  // none exited yet, or ECHILD
    if (WIFSTOPPED(status)) {
      if (pid == agent_.pid) (void)base::PidfdSendSignal(agent_.pidfd.get(), SIGCONT);
      continue;
    }
    if (pid == agent_.pid && !exit_code_) Finish(base::ExitCodeFromWaitStatus(status));
  }
}

void Supervision::KillAgent() {
  if (base::PidfdSendSignal(agent_.pidfd.get(), SIGKILL) == 0) {
    (void)::waitpid(agent_.pid, nullptr, 0);
  }
}

}  // namespace

Result<int> RunSupervisor(const SuperviseConfig& config) {
  auto signal_fd = TakeOverSignals();
  if (!signal_fd) return signal_fd.error();
  // The report channel is connected first, while nothing else runs in the sandbox: `run`
  // takes only the first connection, which is this one.
  UniqueFd report;
  if (config.report) {
    auto channel = config.report->Connect(config.probe_timeout);
    if (!channel) return channel.error();
    report = std::move(*channel);
  }
  if (auto net = EnterPrivateNetwork(); !net) return net.error();
  // Every route is handed over before the fork: a failure here needs no agent to be killed.
  if (auto routes = HandOverRouteListeners(config); !routes) return routes.error();
  if (auto drop = DropAllPrivileges(); !drop) return drop.error();
  // The agent's Landlock ruleset, built here with the paths as the sandbox sees them and
  // applied by the agent's child alone (the supervisor keeps reaping and signalling).
  // Where the kernel has no Landlock the ruleset is empty and nothing is applied; `run`
  // reports that from the host.
  UniqueFd landlock;
  if (config.landlock) {
    auto ruleset = security::CreateLandlockRuleset(
        security::BuildLandlockRuleset(*config.landlock, security::LandlockAbi()));
    if (!ruleset) return ruleset.error();
    landlock = std::move(*ruleset);
  }

  auto loop = relay::EventLoop::Create();
  if (!loop) return loop.error();
  Supervision supervision(std::move(*loop), std::move(*signal_fd));
  UniqueFd tty_slave;
  if (config.tty) {
    auto slave = OpenAgentTty(*config.tty, config.probe_timeout);
    if (!slave) return slave.error();
    tty_slave = std::move(*slave);
    supervision.ContinueStoppedAgent();
  }
  auto agent =
      SpawnAgent(config.command, tty_slave.get(), landlock.get(), static_cast<bool>(report));
  // Only the agent's session keeps the terminal open: when it is gone, `run` reads EIO.
  tty_slave.reset();
  if (!agent) return agent.error();
  if (agent->exec_errno != 0 && report) {
    ReportExecFailure(report.get(), agent->exec_errno, config.probe_timeout);
  }
  report.reset();
  if (auto watch = supervision.Watch(std::move(*agent)); !watch) return watch.error();
  return supervision.Run();
}

}  // namespace sbx::supervise
