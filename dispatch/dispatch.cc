#include "dispatch/dispatch.h"

#include <grp.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "base/syscalls.h"
#include "dispatch/layout.h"
#include "dispatch/prepare.h"
#include "dispatch/state_janitor.h"
#include "dispatch/workspace.h"
#include "netns/hosts.h"
#include "relay/event_loop.h"
#include "relay/host_relay.h"
#include "relay/ledger.h"
#include "relay/state_dir.h"
#include "runtime/bwrap_backend.h"
#include "runtime/bwrap_render.h"
#include "runtime/launcher.h"
#include "runtime/plan_compiler.h"
#include "runtime/plan_printer.h"
#include "security/seccomp.h"

extern char** environ;  // NOLINT: POSIX

namespace sbx::dispatch {
namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// The sandbox, whichever backend built it: its first process and how to wait for it.
class SandboxProcess {
 public:
  static base::Result<SandboxProcess> Start(const runtime::Plan& plan,
                                            const DispatchRequest& request) {
    SandboxProcess p;
    if (request.backend == DispatchBackend::kNative) {
      auto started = runtime::Start(plan);
      if (!started) return started.error();
      p.native_.emplace(std::move(*started));
      return p;
    }
    // bwrap backend: a child that becomes /usr/bin/bwrap; our pidfd of it is the handle.
    int pidfd = -1;
    base::Clone3Args args;
    args.flags = CLONE_PIDFD;
    args.pidfd = reinterpret_cast<uint64_t>(&pidfd);
    args.exit_signal = SIGCHLD;
    pid_t pid = base::Clone3(&args);
    if (pid < 0) return base::ErrnoError("clone3 for the bwrap backend");
    if (pid == 0) {
      sigset_t none;
      sigemptyset(&none);
      ::sigprocmask(SIG_SETMASK, &none, nullptr);
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      // bwrap cannot map the sandbox onto another host uid, so for a root caller it runs
      // as the run-as user itself: the sandbox is then that user, never host root.
      if (plan.userns && plan.userns->written_by_parent &&
          (::setgroups(0, nullptr) != 0 ||
           ::setresgid(plan.sandbox_gid, plan.sandbox_gid, plan.sandbox_gid) != 0 ||
           ::setresuid(plan.sandbox_uid, plan.sandbox_uid, plan.sandbox_uid) != 0)) {
        fmt::print(stderr, "ateam-sandbox run: can't switch to uid {}: {}\n", plan.sandbox_uid,
                   std::strerror(errno));  // NOLINT(concurrency-mt-unsafe)
        ::_exit(kRuntimeFailureExit);
      }
      auto st = runtime::ExecBwrap(plan, request.bwrap_path);
      fmt::print(stderr, "ateam-sandbox run: {}\n", st.error().Render());
      ::_exit(kRuntimeFailureExit);
    }
    p.bwrap_pidfd_.reset(pidfd);
    return p;
  }

  [[nodiscard]] int pidfd() const { return native_ ? native_->pidfd() : bwrap_pidfd_.get(); }
  void Signal(int sig) const { base::PidfdSendSignal(pidfd(), sig); }

  // After pidfd() turned readable: the wait status of the sandbox's first process.
  siginfo_t Reap() {
    siginfo_t info{};
    ::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd()), &info, WEXITED);
    if (native_) native_->MarkReaped();
    return info;
  }

 private:
  std::optional<runtime::StartedSandbox> native_;
  base::UniqueFd bwrap_pidfd_;
};

struct LoopOutcome {
  std::string reason = "exited";
  int signal = 0;  // the interrupting signal
};

// Serves the relays until the sandbox's first process is gone. SIGINT/SIGTERM are passed
// to the supervisor (which passes them to the agent); a second one, or 5 s without an
// end, kills the sandbox whole. The timeout kills it whole at once.
LoopOutcome ServeUntilExit(relay::EventLoop& loop, const SandboxProcess& sandbox, int signal_fd,
                           std::optional<double> timeout_seconds) {
  LoopOutcome outcome;
  int interrupts = 0;
  (void)loop.WatchCallback(sandbox.pidfd(), EPOLLIN, [&](uint32_t) { loop.Stop(); });
  (void)loop.WatchCallback(signal_fd, EPOLLIN, [&](uint32_t) {
    signalfd_siginfo info{};
    if (::read(signal_fd, &info, sizeof(info)) != sizeof(info)) return;
    outcome.reason = "interrupted";
    outcome.signal = static_cast<int>(info.ssi_signo);
    if (++interrupts == 1) {
      sandbox.Signal(SIGTERM);
      loop.AddTimer(std::chrono::seconds(5), [&] { sandbox.Signal(SIGKILL); });
    } else {
      sandbox.Signal(SIGKILL);
    }
  });
  if (timeout_seconds) {
    auto delay = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(*timeout_seconds));
    loop.AddTimer(delay, [&] {
      outcome.reason = "timeout";
      sandbox.Signal(SIGKILL);  // pid 1 of the sandbox: the kernel ends every process in it
    });
  }
  (void)loop.Run();
  return outcome;
}

void RecordExit(const siginfo_t& info, const LoopOutcome& loop, DispatchResult* result) {
  if (info.si_code == CLD_EXITED) {
    result->exit_code = info.si_status;
    result->reason = "exited";
  } else {
    result->exit_code = 128 + info.si_status;
    result->signal = info.si_status;
    result->reason = "signaled";
  }
  if (loop.reason == "timeout") {
    result->reason = "timeout";
    result->exit_code = kTimeoutExit;
  } else if (loop.reason == "interrupted") {
    result->reason = "interrupted";
    result->signal = loop.signal;
    result->exit_code = 128 + loop.signal;
  }
}

base::Result<base::UniqueFd> BlockStopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  if (::sigprocmask(SIG_BLOCK, &set, nullptr) != 0) return base::ErrnoError("sigprocmask");
  base::UniqueFd fd(::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!fd) return base::ErrnoError("signalfd");
  return fd;
}

std::vector<std::string> CurrentEnvironment() {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  return env;
}

// Everything up to a compiled plan and running relays; then launch and serve.
base::Status Dispatch(const DispatchRequest& request, const std::string& self_exe,
                      DispatchResult* result, Clock::time_point start) {
  auto host = runtime::ProbeHostFacts();
  if (!host) return host.error();
  auto routes = ParseDispatchRoutes(request);
  if (!routes) return routes.error();
  auto run_as = ResolveRunAs(request, *host);
  if (!run_as) return run_as.error();
  std::vector<std::string> host_env = CurrentEnvironment();
  auto agent = FindAgentInstall(request, host_env);
  if (!agent) return agent.error();
  auto seccomp = security::CompileDefaultSeccompPolicy({.relaxed_groups = request.seccomp_allow});
  if (!seccomp) return seccomp.error();
  auto dirs = PrepareDispatchDirs(request, result->id, *run_as);
  if (!dirs) return dirs.error();
  result->workspace = dirs->workspace;
  result->out = dirs->out;
  for (const auto& [flag, file] :
       {std::pair{"--ledger", request.ledger}, std::pair{"--status-json", request.status_json}}) {
    if (file) {
      if (auto st = CheckFileOutside(flag, *file, *dirs); !st) return st;
    }
  }
  // A root caller's state directory is its own, under /run (root's, so nobody can block or
  // prepare the name), 0711: the sandbox's uid reaches the sockets in it, whose owner and
  // mode (set through the directory's fd) decide who may connect.
  const char* xdg_runtime_dir = std::getenv("XDG_RUNTIME_DIR");  // NOLINT(concurrency-mt-unsafe)
  auto state_dir = relay::StateDir::Create(
      host->IsRoot() ? relay::StateDirOptions{"", "/run", host->euid, /*traversable=*/true}
                     : relay::StateDirOptions{xdg_runtime_dir != nullptr ? xdg_runtime_dir : "",
                                              "/tmp", host->euid});
  if (!state_dir) return state_dir.error();
  // Before any other descriptor of this dispatch exists (dispatch/state_janitor.h).
  auto janitor = StateDirJanitor::Start(&*state_dir);
  if (!janitor) return janitor.error();
  // A relay that writes to a connection the agent already closed must get EPIPE, not die;
  // it is also what lets the relays splice (relay/flow.h).
  ::signal(SIGPIPE, SIG_IGN);
  auto loop = relay::EventLoop::Create();
  if (!loop) return loop.error();
  relay::HostRelayOptions relay_options{
      state_dir->path(), *routes, {}, request.ledger.value_or(""), std::nullopt};
  if (*run_as) relay_options.socket_owner = (*run_as)->uid;
  auto tunnel = relay::HostRelay::Create(loop->get(), relay_options);
  if (!tunnel) return tunnel.error();
  auto hosts_fd = HostsFileFd(*routes);
  if (!hosts_fd) return hosts_fd.error();

  DispatchHostPaths paths{dirs->workspace, dirs->out,    self_exe, {},       {},
                          hosts_fd->get(), agent->binds, host_env, *seccomp, agent->bin_dir};
  for (const auto& r : (*tunnel)->routes()) {
    auto address = netns::RouteAddress(static_cast<size_t>(r.route.index));
    if (!address) return address.error();
    paths.route_sockets.push_back(r.socket_path);
    paths.route_listen.push_back(fmt::format("{}:{}", *address, r.route.port));
    result->routes.push_back({r.route.host, r.route.port, *address, r.upstream.ToString()});
  }
  auto spec = BuildDispatchSpec(request, paths);
  if (!spec) return spec.error();
  spec->run_as = *run_as;
  auto plan = runtime::CompilePlan(*spec, *host);
  if (!plan) return plan.error();
  if (request.dry_run) {
    fmt::print("{}", runtime::PrintPlan(*plan));
    fmt::print("bwrap: {}\n", runtime::RenderBwrapCommandLine(*plan, request.bwrap_path));
    result->reason = "dry-run";
    result->exit_code = 0;
    return {};
  }
  auto signal_fd = BlockStopSignals();
  if (!signal_fd) return signal_fd.error();
  auto sandbox = SandboxProcess::Start(*plan, request);
  if (!sandbox) return sandbox.error();
  hosts_fd->reset();
  result->setup_ms = MsSince(start);
  LoopOutcome outcome = ServeUntilExit(**loop, *sandbox, signal_fd->get(), request.timeout_seconds);
  RecordExit(sandbox->Reap(), outcome, result);
  return {};
}

}  // namespace

DispatchResult RunDispatch(const DispatchRequest& request, const std::string& self_exe) {
  DispatchResult result;
  auto start = Clock::now();
  result.id = NewDispatchId();
  result.backend = request.backend;
  result.started_at = relay::FormatRfc3339Utc(std::chrono::system_clock::now());
  if (auto st = Dispatch(request, self_exe, &result, start); !st) {
    result.reason = "runtime-error";
    result.exit_code = kRuntimeFailureExit;
    result.error = st.error().Render();
  }
  result.total_ms = MsSince(start);
  return result;
}

}  // namespace sbx::dispatch
