#include "dispatch/dispatch.h"

#include <grp.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <functional>

#include <fmt/format.h>

#include "base/syscalls.h"
#include "dispatch/cgroup.h"
#include "dispatch/git_guard.h"
#include "dispatch/harvest.h"
#include "dispatch/landlock_plan.h"
#include "dispatch/layout.h"
#include "dispatch/limits.h"
#include "dispatch/namespace_preflight.h"
#include "dispatch/prepare.h"
#include "dispatch/request_checks.h"
#include "dispatch/sandbox_files.h"
#include "dispatch/state_janitor.h"
#include "dispatch/terminal.h"
#include "dispatch/tty_session.h"
#include "dispatch/workspace.h"
#include "dispatch/write_access.h"
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
    // Container seccomp profiles answer clone3 with ENOSYS to send callers back to clone.
    if (pid < 0 && errno == ENOSYS) {
      pid = static_cast<pid_t>(::fork());
      if (pid > 0) pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
    }
    if (pid < 0) return base::ErrnoError("clone3 for the bwrap backend");
    if (pid == 0) {
      sigset_t none;
      sigemptyset(&none);
      ::sigprocmask(SIG_SETMASK, &none, nullptr);
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      // Into the dispatch's cgroups before anything else runs, and while still the caller
      // (a cgroup v1 is root's to write): "0" moves the writer itself.
      for (int fd : plan.cgroup_procs_fds) {
        if (::write(fd, "0", 1) != 1) {
          fmt::print(stderr, "ateam-sandbox run: can't enter the dispatch's cgroup: {}\n",
                     std::strerror(errno));  // NOLINT(concurrency-mt-unsafe)
          ::_exit(kRuntimeFailureExit);
        }
      }
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
      // The rlimits that hold across bwrap's exec and mean the same there (RLIMIT_NPROC
      // would count the caller's processes outside the sandbox too).
      for (const auto& limit : plan.self_limits.rlimits) {
        if (limit.resource == RLIMIT_NPROC) continue;
        rlimit current{};
        if (::getrlimit(static_cast<__rlimit_resource>(limit.resource), &current) != 0) continue;
        rlimit lowered{std::min<rlim_t>(current.rlim_cur, limit.value),
                       std::min<rlim_t>(current.rlim_max, limit.value)};
        (void)::setrlimit(static_cast<__rlimit_resource>(limit.resource), &lowered);
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
// With a terminal (`hang_up` set), SIGHUP is the caller's terminal going away: the agent's
// terminal is hung up instead, so it gets SIGHUP through its own terminal as it would there.
LoopOutcome ServeUntilExit(relay::EventLoop& loop, const SandboxProcess& sandbox, int signal_fd,
                           std::optional<double> timeout_seconds,
                           const std::function<void()>& hang_up) {
  LoopOutcome outcome;
  int interrupts = 0;
  (void)loop.WatchCallback(sandbox.pidfd(), EPOLLIN, [&](uint32_t) { loop.Stop(); });
  (void)loop.WatchCallback(signal_fd, EPOLLIN, [&](uint32_t) {
    signalfd_siginfo info{};
    if (::read(signal_fd, &info, sizeof(info)) != sizeof(info)) return;
    // A terminal that went away may say so twice (the kernel's SIGHUP, the relay's own):
    // once is the hang-up, never the second interrupt that kills at once.
    if (info.ssi_signo == SIGHUP && hang_up && outcome.signal == SIGHUP) return;
    outcome.reason = "interrupted";
    outcome.signal = static_cast<int>(info.ssi_signo);
    if (++interrupts == 1) {
      if (info.ssi_signo == SIGHUP && hang_up) {
        hang_up();
      } else {
        sandbox.Signal(SIGTERM);
      }
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
// The dispatch's cgroup, or why there is none; a dry run makes none and says where it
// would go.
struct DispatchCgroupSetup {
  std::optional<DispatchCgroup> cgroup;
  std::string missing;
  std::string planned;
};

DispatchCgroupSetup SetUpCgroup(const DispatchRequest& request, const std::string& id,
                                const DispatchLimits& limits) {
  DispatchCgroupSetup setup;
  if (request.dry_run) {
    auto where = DispatchCgroup::Probe();
    if (where) setup.planned = "(dry run: none made) " + *where;
    if (!where) setup.missing = where.error().Render();
    return setup;
  }
  auto made = DispatchCgroup::Create(id, {limits.memory, limits.pids, limits.cpus});
  if (made) {
    setup.cgroup.emplace(std::move(*made));
    return setup;
  }
  setup.missing = made.error().Render();
  // Said on stderr when the caller asked for a cgroup limit or is looking (a terminal);
  // always in the status document and the dry run, and `doctor` explains it.
  if (request.memory || request.pids || request.cpus || ::isatty(STDERR_FILENO) == 1) {
    fmt::print(stderr,
               "ateam-sandbox run: no cgroup for this dispatch ({}): memory and cpu are not "
               "limited; `ateam-sandbox doctor` says how to delegate one\n",
               setup.missing);
  }
  return setup;
}

// --dry-run: what the agent's sandbox would be, printed instead of started.
void PrintDryRun(const runtime::Plan& plan, const DispatchRequest& request,
                 const DispatchResult& result, const security::LandlockRuleset& ruleset,
                 const LimitsReport& report) {
  fmt::print("{}", runtime::PrintPlan(plan));
  fmt::print("bwrap: {}\n", runtime::RenderBwrapCommandLine(plan, request.bwrap_path));
  for (const DispatchRoute& route : result.routes) {
    fmt::print("route: {}:{} {} at {} -> {}\n", route.host, route.port, route.kind,
               route.sandbox_address, route.upstream);
  }
  // The groups were checked when the policy was compiled.
  auto seccomp_lines = security::DescribeSeccompPolicy({.relaxed_groups = request.seccomp_allow});
  if (seccomp_lines) {
    for (const std::string& line : *seccomp_lines) fmt::print("{}\n", line);
  }
  for (const std::string& line : security::DescribeLandlock(ruleset)) fmt::print("{}\n", line);
  for (const auto& line : report.enforced) fmt::print("limit: {}\n", line);
  for (const auto& line : report.not_enforced) fmt::print("limit not enforced: {}\n", line);
}

// After the sandbox: an agent the OOM killer ended in the dispatch's cgroup is reported as
// such; the cgroup goes.
void RecordOomAndRemove(DispatchCgroup* cgroup, uint64_t memory, DispatchResult* result) {
  if (result->exit_code == 128 + SIGKILL && cgroup->OomKills() > 0) {
    result->reason = "oom";
    result->error = fmt::format(
        "out of memory: the sandbox reached --memory {} bytes and the kernel killed it", memory);
  }
  cgroup->Remove();
}

// One dispatch from request to exit status, in the order the host side must take its
// steps (every check before anything is created; the janitor before any other descriptor).
// Longer than the size check wants: its objects hold each other (the janitor the state
// directory, the relay the loop), and splitting it means a setup struct that keeps them
// in place; left for that change. NOLINTNEXTLINE(readability-function-size)
base::Status Dispatch(const DispatchRequest& given, const std::string& self_exe,
                      DispatchResult* result, Clock::time_point start) {
  auto host = runtime::ProbeHostFacts();
  if (!host) return host.error();
  // Every path is checked, and made absolute, before anything is created.
  DispatchRequest request = given;
  if (auto st = CheckRequestPaths(request, host->cwd); !st) return st;
  auto routes = ParseDispatchRoutes(request);
  if (!routes) return routes.error();
  auto run_as = ResolveRunAs(request, *host);
  if (!run_as) return run_as.error();
  // Root of a user namespace with no other id to hand the sandbox to runs it as itself.
  if (host->IsRoot() && !*run_as) host->root_acts_unprivileged = true;
  // bwrap would print its own words for a refused namespace, so ask first; the native
  // backend asks only after a failed start (below), which costs nothing when it works.
  if (!request.dry_run && request.backend == DispatchBackend::kBwrap) {
    if (auto st = CheckNamespacesAllowed(); !st) return st;
  }
  std::vector<std::string> host_env = CurrentEnvironment();
  auto agent = FindAgentInstall(request, host_env);
  if (!agent) return agent.error();
  auto limits = ResolveLimits(request);
  if (!limits) return limits.error();
  std::vector<std::string> relaxed = request.seccomp_allow;
  if (limits->nested_userns) relaxed.emplace_back("nested-userns");
  auto seccomp = security::CompileDefaultSeccompPolicy({.relaxed_groups = relaxed});
  if (!seccomp) return seccomp.error();
  auto dirs = PrepareDispatchDirs(request, result->id, *run_as);
  if (!dirs) return dirs.error();
  result->workspace = dirs->workspace;
  result->out = dirs->out;
  auto guard = GitGuard::Prepare(dirs->workspace, !request.workspace,
                                 request.repo ? CloneOriginUrl(*request.repo) : "");
  if (!guard) return guard.error();
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
  // Before the janitor, which removes it too after a SIGKILL of `run`.
  DispatchCgroupSetup cg = SetUpCgroup(request, result->id, *limits);
  std::optional<DispatchCgroup>& cgroup = cg.cgroup;
  // Before any other descriptor of this dispatch exists (dispatch/state_janitor.h), but
  // for the cgroup's cgroup.procs files, which keep nothing alive.
  auto janitor =
      StateDirJanitor::Start(&*state_dir, cgroup ? cgroup->dirs() : std::vector<std::string>{});
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
  auto files = SandboxFiles::Make(request);  // the credentials' copy, /etc/resolv.conf
  if (!files) return files.error();
  std::unique_ptr<TtySession> tty;  // --tty: the agent on a terminal of the sandbox's own
  if (WantsTty(request.tty)) {
    auto session = TtySession::Create(loop->get(), state_dir->path(), relay_options.socket_owner);
    if (!session) return session.error();
    tty = std::move(*session);
  }

  auto landlock = DispatchLandlockPolicy(request, dirs->workspace, dirs->out);
  if (!landlock) return landlock.error();
  DispatchHostPaths paths{dirs->workspace,
                          dirs->out,
                          self_exe,
                          {},
                          {},
                          hosts_fd->get(),
                          agent->binds,
                          host_env,
                          *seccomp,
                          agent->bin_dir,
                          LandlockSupervisorArgs(*landlock)};
  paths.sandbox_user = SandboxUserName(*run_as ? (*run_as)->uid : host->uid);
  files->AddTo(paths);
  if (tty) {
    paths.tty_socket = tty->socket_path();
    paths.tty_size = tty->size_argument();
  }
  for (const auto& r : (*tunnel)->routes()) {
    auto address = netns::RouteAddress(static_cast<size_t>(r.route.index));
    if (!address) return address.error();
    paths.route_sockets.push_back(r.socket_path);
    paths.route_listen.push_back(fmt::format("{}:{}", *address, r.route.port));
    result->routes.push_back({r.route.host, r.route.port, *address, r.upstream.ToString(),
                              std::string(relay::RouteKindName(r.route.kind))});
  }
  // What the supervisor will apply: the same kernel answers there as here.
  for (const auto& r : (*tunnel)->routes()) {
    landlock->connect_ports.push_back(static_cast<uint16_t>(r.route.port));
  }
  const security::LandlockRuleset ruleset =
      security::BuildLandlockRuleset(*landlock, security::LandlockAbi());
  result->landlock_abi = ruleset.abi;
  result->landlock_parts = security::LandlockParts(ruleset);
  auto spec = BuildDispatchSpec(request, paths);
  if (!spec) return spec.error();
  guard->AddBinds(*spec);
  spec->run_as = *run_as;
  ApplyLimitsToSpec(*limits, &*spec);
  const bool bwrap_backend = request.backend == DispatchBackend::kBwrap;
  // bwrap cannot write the sandbox's sysctls; its own --disable-userns is the second layer
  // behind the seccomp rule there.
  if (bwrap_backend && !limits->nested_userns) spec->disable_userns = true;
  if (cgroup) spec->cgroup_procs_fds = cgroup->ProcsFds();
  LimitsReport report =
      ReportLimits(*limits, bwrap_backend, cgroup ? cgroup->Describe() : cg.planned, cg.missing);
  result->limits_json = RenderLimitsJson(*limits, report);
  auto plan = runtime::CompilePlan(*spec, *host);
  if (!plan) return plan.error();
  if (tty) plan->stdout_tty.reset();  // the caller's terminal is never the sandbox's console
  if (request.dry_run) {
    PrintDryRun(*plan, request, *result, ruleset, report);
    result->reason = "dry-run";
    result->exit_code = 0;
    return {};
  }
  auto patch_fd = OpenPatchFile(request.patch, dirs->workspace, dirs->out);
  if (!patch_fd) return patch_fd.error();
  auto base_commit = guard->clone_head() ? base::Result<std::string>(*guard->clone_head())
                                         : ReadBaseCommit(dirs->workspace, *run_as);
  if (!base_commit && request.patch) return base_commit.error();
  if (base_commit) result->base_commit = *base_commit;
  auto signal_fd = BlockStopSignals();
  if (!signal_fd) return signal_fd.error();
  WarnUnwritablePlaces(request, *dirs, *run_as);  // --rw, --workspace: said, never chowned
  std::optional<CallerStdioHidden> hidden;
  if (tty) {
    auto swapped = tty->HideCallerStdio();
    if (!swapped) return swapped.error();
    hidden.emplace(std::move(*swapped));
  }
  auto sandbox = SandboxProcess::Start(*plan, request);
  hidden.reset();
  if (!sandbox) {
    // A refused namespace, mount or /proc comes back in the kernel's words: name the step
    // and point to doctor instead.
    if (auto st = CheckNamespacesAllowed(); !st) return st;
    return sandbox.error();
  }
  hosts_fd->reset();
  if (tty) {
    if (auto st = tty->Start(); !st) return st;
  }
  result->setup_ms = MsSince(start);
  std::function<void()> hang_up;
  if (tty) hang_up = [&tty] { tty->HangUp(); };
  LoopOutcome outcome =
      ServeUntilExit(**loop, *sandbox, signal_fd->get(), request.timeout_seconds, hang_up);
  if (tty) tty->Finish();
  RecordExit(sandbox->Reap(), outcome, result);
  if (cgroup) RecordOomAndRemove(&*cgroup, limits->memory, result);
  // The sandbox is gone: undo what the agent left in the git metadata, then harvest.
  result->workspace_taint = guard->CheckAndRestore();
  result->workspace_tainted = !result->workspace_taint.empty();
  if (*patch_fd) {
    auto st = WriteHarvestPatch(dirs->workspace, result->base_commit, patch_fd->get(), *run_as);
    if (!st) result->patch_error = st.error().Render();
  }
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
