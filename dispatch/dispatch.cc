#include "dispatch/dispatch.h"

#include <grp.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>

#include <fmt/format.h>

#include "base/exit_status.h"
#include "base/syscalls.h"
#include "dispatch/broker_setup.h"
#include "dispatch/cgroup.h"
#include "dispatch/dispatch_announce.h"
#include "dispatch/dispatch_dir.h"
#include "dispatch/dispatch_record.h"
#include "dispatch/dry_run.h"
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
#include "dispatch/stop_signals.h"
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
      const DumpableWhileCloning dumpable;  // the child's uid map is run's to write
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
      if (pid > 0) pidfd = base::PidfdOpen(pid);
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
    p.bwrap_pid_ = pid;
    return p;
  }

  [[nodiscard]] int pidfd() const { return native_ ? native_->pidfd() : bwrap_pidfd_.get(); }
  // SIGKILL goes to the first process: the sandbox dies with it. Other signals are for the
  // supervisor, which passes them to the agent; under bwrap that is bwrap's only child
  // (the sandbox's pid 1, --as-pid-1), since bwrap itself passes nothing on.
  void Signal(int sig) const {
    if (sig != SIGKILL && !native_) {
      if (base::UniqueFd supervisor = BwrapChildPidfd(); supervisor) {
        base::PidfdSendSignal(supervisor.get(), sig);
        return;
      }
    }
    base::PidfdSendSignal(pidfd(), sig);
  }

  // After pidfd() turned readable: the wait status of the sandbox's first process.
  siginfo_t Reap() {
    siginfo_t info{};
    ::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd()), &info, WEXITED);
    if (native_) native_->MarkReaped();
    return info;
  }

 private:
  // bwrap's child, from /proc/<bwrap>/task/<bwrap>/children, as a pidfd (checked to be
  // still bwrap's child after it was opened, so a recycled pid is never signalled).
  [[nodiscard]] base::UniqueFd BwrapChildPidfd() const {
    std::ifstream children(fmt::format("/proc/{}/task/{}/children", bwrap_pid_, bwrap_pid_));
    pid_t child = 0;
    if (!(children >> child) || child <= 0) return {};
    base::UniqueFd fd(base::PidfdOpen(child));
    if (base::ParentPidOf(child) != bwrap_pid_) return {};
    return fd;
  }

  std::optional<runtime::StartedSandbox> native_;
  base::UniqueFd bwrap_pidfd_;
  pid_t bwrap_pid_ = 0;
};

struct LoopOutcome {
  bool timed_out = false;
  bool killed = false;  // the grace after a stop signal ran out, or a second one came
  int stop_signal = 0;  // the first SIGINT/SIGTERM/SIGHUP `run` got
};

// Serves the relays until the sandbox's first process is gone. SIGINT and SIGTERM are
// passed to the supervisor as they came (it passes them to the agent); SIGHUP without a
// terminal as SIGTERM. A second one, or `grace` without an end, kills the sandbox whole.
// The timeout kills it whole at once.
// With a terminal (`hang_up` set), SIGHUP is the caller's terminal going away: the agent's
// terminal is hung up instead, so it gets SIGHUP through its own terminal as it would there.
LoopOutcome ServeUntilExit(relay::EventLoop& loop, const SandboxProcess& sandbox, int signal_fd,
                           const DispatchRequest& request, const std::function<void()>& hang_up) {
  LoopOutcome outcome;
  int interrupts = 0;
  (void)loop.WatchCallback(sandbox.pidfd(), EPOLLIN, [&](uint32_t) { loop.Stop(); });
  (void)loop.WatchCallback(signal_fd, EPOLLIN, [&](uint32_t) {
    const int sig = TakeStopSignal(signal_fd);
    if (sig == 0) return;
    // A terminal that went away may say so twice (the kernel's SIGHUP, the relay's own):
    // once is the hang-up, never the second interrupt that kills at once.
    if (sig == SIGHUP && hang_up && outcome.stop_signal == SIGHUP) return;
    if (++interrupts == 1) {
      outcome.stop_signal = sig;
      if (sig == SIGHUP && hang_up) {
        hang_up();
      } else {
        sandbox.Signal(sig == SIGHUP ? SIGTERM : sig);
      }
      loop.AddTimer(std::chrono::duration_cast<Clock::duration>(
                        std::chrono::duration<double>(request.grace_seconds)),
                    [&] {
                      outcome.killed = true;
                      sandbox.Signal(SIGKILL);
                    });
    } else {
      outcome.killed = true;
      sandbox.Signal(SIGKILL);
    }
  });
  if (request.timeout_seconds) {
    auto delay = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(*request.timeout_seconds));
    loop.AddTimer(delay, [&] {
      outcome.timed_out = true;
      sandbox.Signal(SIGKILL);  // pid 1 of the sandbox: the kernel ends every process in it
    });
  }
  (void)loop.Run();
  return outcome;
}

// What the sandbox's end means. An agent that handled a stop signal and exited by itself
// is recorded as exited, with its own code; one that died of it (or of the kill after the
// grace) as interrupted, 128 + the stop signal.
void RecordExit(const siginfo_t& info, const LoopOutcome& loop, DispatchResult* result) {
  result->exit_code = base::ExitCodeFromSiginfo(info);
  if (info.si_code == CLD_EXITED) {
    result->reason = DispatchReason::kExited;
  } else {
    result->signal = info.si_status;
    result->reason = DispatchReason::kSignaled;
  }
  if (loop.stop_signal != 0) result->stop_signal = loop.stop_signal;
  // Died of the stop signal: killed by it, or the supervisor's report of the agent killed
  // by it (the same 128 + N either way).
  const bool ended_by_stop =
      loop.killed || result->exit_code == base::kSignalExitBase + loop.stop_signal;
  if (loop.timed_out) {
    result->reason = DispatchReason::kTimeout;
    result->exit_code = kTimeoutExit;
  } else if (loop.stop_signal != 0 && ended_by_stop) {
    result->reason = DispatchReason::kInterrupted;
    result->signal = loop.stop_signal;
    result->exit_code = base::kSignalExitBase + loop.stop_signal;
  }
}

std::vector<std::string> CurrentEnvironment() {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  return env;
}

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

// After the sandbox: an agent the OOM killer ended in the dispatch's cgroup is reported as
// such; the cgroup goes.
void RecordOomAndRemove(DispatchCgroup* cgroup, uint64_t memory, DispatchResult* result) {
  if (result->exit_code == base::kSignalExitBase + SIGKILL && cgroup->OomKills() > 0) {
    result->reason = DispatchReason::kOom;
    result->error = fmt::format(
        "out of memory: the sandbox reached --memory {} bytes and the kernel killed it", memory);
  }
  cgroup->Remove();
}

// Everything the request resolves to, checked, before anything is created.
struct ResolvedRequest {
  runtime::HostFacts host;
  DispatchRequest request;  // its paths made absolute
  std::vector<relay::Route> routes;
  std::optional<runtime::SandboxSpec::HostIds> run_as;
  std::vector<std::string> host_env;
  AgentInstall agent;
  DispatchLimits limits;
  std::vector<std::string> seccomp_groups;  // the relaxed ones
  security::BpfProgram seccomp;
};

base::Result<ResolvedRequest> ResolveRequest(const DispatchRequest& given) {
  auto host = runtime::ProbeHostFacts();
  if (!host) return host.error();
  ResolvedRequest r;
  r.host = std::move(*host);
  r.request = given;
  // Every path is checked, and made absolute, before anything is created.
  if (auto st = CheckRequestPaths(r.request, r.host.cwd); !st) return st.error();
  if (auto st = CheckHostMountPoints("/etc"); !st) return st.error();
  auto routes = ParseDispatchRoutes(r.request);
  if (!routes) return routes.error();
  r.routes = std::move(*routes);
  auto run_as = ResolveRunAs(r.request, r.host);
  if (!run_as) return run_as.error();
  r.run_as = *run_as;
  // Root of a user namespace with no other id to hand the sandbox to runs it as itself.
  if (r.host.IsRoot() && !r.run_as) r.host.root_acts_unprivileged = true;
  // bwrap would print its own words for a refused namespace, so ask first; the native
  // backend asks only after a failed start, which costs nothing when it works.
  if (!r.request.dry_run && r.request.backend == DispatchBackend::kBwrap) {
    if (auto st = CheckNamespacesAllowed(); !st) return st.error();
  }
  r.host_env = CurrentEnvironment();
  auto agent = FindAgentInstall(r.request, r.host_env);
  if (!agent) return agent.error();
  r.agent = std::move(*agent);
  auto limits = ResolveLimits(r.request);
  if (!limits) return limits.error();
  r.limits = *limits;
  r.seccomp_groups = r.request.seccomp_allow;
  if (r.limits.nested_userns) r.seccomp_groups.emplace_back("nested-userns");
  auto seccomp = security::CompileDefaultSeccompPolicy({.relaxed_groups = r.seccomp_groups});
  if (!seccomp) return seccomp.error();
  r.seccomp = std::move(*seccomp);
  return r;
}

// What the host runs for one dispatch beside the sandbox, in the order it must exist: the
// state directory, the cgroup, the janitor (before any other descriptor of this dispatch),
// the event loop, the relays, the generated /etc/hosts, the terminal. Built in place and
// never moved: the janitor points at the state directory, the relays at the loop.
struct HostServices {
  std::optional<relay::StateDir> state_dir;
  DispatchCgroupSetup cg;
  std::optional<StateDirJanitor> janitor;
  std::unique_ptr<relay::EventLoop> loop;
  std::optional<uid_t> socket_owner;
  std::unique_ptr<relay::HostRelay> tunnel;
  base::UniqueFd hosts_fd;
  SandboxFiles files;               // the credentials' copy, /etc/resolv.conf
  std::unique_ptr<TtySession> tty;  // --tty: the agent on a terminal of the sandbox's own

  base::Status Start(const ResolvedRequest& r, const std::string& id) {
    // A root caller's state directory is its own, under /run (root's, so nobody can block
    // or prepare the name), 0711: the sandbox's uid reaches the sockets in it, whose owner
    // and mode (set through the directory's fd) decide who may connect.
    const char* xdg_runtime_dir = std::getenv("XDG_RUNTIME_DIR");  // NOLINT(concurrency-mt-unsafe)
    auto dir = relay::StateDir::Create(
        r.host.IsRoot() ? relay::StateDirOptions{"", "/run", r.host.euid, /*traversable=*/true}
                        : relay::StateDirOptions{xdg_runtime_dir != nullptr ? xdg_runtime_dir : "",
                                                 "/tmp", r.host.euid});
    if (!dir) return dir.error();
    state_dir.emplace(std::move(*dir));
    // Before the janitor, which removes it too after a SIGKILL of `run`.
    cg = SetUpCgroup(r.request, id, r.limits);
    // Before any other descriptor of this dispatch exists (dispatch/state_janitor.h), but
    // for the cgroup's cgroup.procs files, which keep nothing alive.
    auto started = StateDirJanitor::Start(
        &*state_dir, cg.cgroup ? cg.cgroup->dirs() : std::vector<std::string>{});
    if (!started) return started.error();
    janitor.emplace(std::move(*started));
    // A relay that writes to a connection the agent already closed must get EPIPE, not
    // die; it is also what lets the relays splice (relay/flow.h).
    ::signal(SIGPIPE, SIG_IGN);
    auto made_loop = relay::EventLoop::Create();
    if (!made_loop) return made_loop.error();
    loop = std::move(*made_loop);
    if (r.run_as) socket_owner = r.run_as->uid;
    relay::HostRelayOptions options{
        state_dir->path(), r.routes, {}, r.request.ledger.value_or(""), socket_owner, {}, {}};
    if (auto st = AddBrokerOptions(r.request, r.routes, r.host_env, options); !st) return st;
    auto relays = relay::HostRelay::Create(loop.get(), std::move(options));
    if (!relays) {
      // When it is the preset's endpoint that failed, say how to go without it.
      const std::string& preset = ProfileFor(r.request.agent).default_endpoint;
      const std::string message = relays.error().Render();
      if (r.request.no_default_allow || preset.empty() ||
          !message.starts_with("Can't resolve " + preset + " ")) {
        return relays.error();
      }
      return base::Error::Message(fmt::format(
          "{}; or leave the --agent preset's endpoint out with --no-default-allow", message));
    }
    tunnel = std::move(*relays);
    auto hosts = HostsFileFd(r.routes);
    if (!hosts) return hosts.error();
    hosts_fd = std::move(*hosts);
    auto made_files = SandboxFiles::Make(r.request);
    if (!made_files) return made_files.error();
    files = std::move(*made_files);
    if (WantsTty(r.request.tty)) {
      auto session = TtySession::Create(loop.get(), state_dir->path(), socket_owner);
      if (!session) return session.error();
      tty = std::move(*session);
    }
    return {};
  }
};

// The sandbox as compiled, with what the dry run and the status document say of it.
struct SandboxPlan {
  runtime::Plan plan;
  security::LandlockRuleset landlock;
  LimitsReport limits;
};

base::Result<SandboxPlan> PlanSandbox(const ResolvedRequest& r, const DispatchDirs& dirs,
                                      const HostServices& services, const GitGuard* guard,
                                      const std::string& self_exe, DispatchResult* result) {
  const DispatchRequest& request = r.request;
  auto landlock = DispatchLandlockPolicy(request, dirs.workspace, dirs.out);
  if (!landlock) return landlock.error();
  DispatchHostPaths paths{.workspace = dirs.workspace,
                          .out = dirs.out,
                          .supervisor_binary = self_exe,
                          .route_sockets = {},
                          .route_listen = {},
                          .hosts_fd = services.hosts_fd.get(),
                          .agent_binds = r.agent.binds,
                          .host_env = r.host_env,
                          .seccomp_program = r.seccomp,
                          .agent_bin_dir = r.agent.bin_dir,
                          .landlock_args = LandlockSupervisorArgs(*landlock)};
  paths.sandbox_user = SandboxUserName(r.run_as ? r.run_as->uid : r.host.uid);
  services.files.AddTo(paths);
  if (services.tty) {
    paths.tty_socket = services.tty->socket_path();
    paths.tty_size = services.tty->size_argument();
  }
  for (const auto& route : services.tunnel->routes()) {
    auto address = netns::RouteAddress(static_cast<size_t>(route.route.index));
    if (!address) return address.error();
    paths.route_sockets.push_back(route.socket_path);
    paths.route_listen.push_back(fmt::format("{}:{}", *address, relay::SandboxPort(route.route)));
    result->routes.push_back({route.route.host, route.route.port, *address,
                              route.upstream.ToString(),
                              std::string(relay::RouteKindName(route.route.kind))});
    // What the supervisor will apply: the same kernel answers there as here.
    landlock->connect_ports.push_back(relay::SandboxPort(route.route));
  }
  SandboxPlan planned;
  planned.landlock = security::BuildLandlockRuleset(*landlock, security::LandlockAbi());
  result->landlock_abi = planned.landlock.abi;
  result->landlock_parts = security::LandlockParts(planned.landlock);
  auto spec = BuildDispatchSpec(request, paths);
  if (!spec) return spec.error();
  if (guard != nullptr) guard->AddBinds(*spec);
  spec->run_as = r.run_as;
  ApplyLimitsToSpec(r.limits, &*spec);
  const bool bwrap_backend = request.backend == DispatchBackend::kBwrap;
  // bwrap cannot write the sandbox's sysctls; its own --disable-userns is the second layer
  // behind the seccomp rule there.
  if (bwrap_backend && !r.limits.nested_userns) spec->disable_userns = true;
  const auto& cgroup = services.cg.cgroup;
  if (cgroup) spec->cgroup_procs_fds = cgroup->ProcsFds();
  planned.limits =
      ReportLimits(r.limits, bwrap_backend, cgroup ? cgroup->Describe() : services.cg.planned,
                   services.cg.missing);
  result->limits_json = RenderLimitsJson(r.limits, planned.limits);
  auto plan = runtime::CompilePlan(*spec, r.host);
  if (!plan) return plan.error();
  // The caller's terminal is never the sandbox's console.
  if (services.tty) plan->stdout_tty.reset();
  planned.plan = std::move(*plan);
  return planned;
}

// --dry-run: everything resolved and compiled, nothing created that outlives it.
base::Status DryRun(const ResolvedRequest& r, const std::string& self_exe, DispatchResult* result) {
  auto dirs = PlanDispatchDirs(r.request, result->id, r.run_as.has_value());
  if (!dirs) return dirs.error();
  result->workspace = dirs->workspace;
  result->out = dirs->out;
  HostServices services;
  if (auto st = services.Start(r, result->id); !st) return st;
  auto planned = PlanSandbox(r, *dirs, services, nullptr, self_exe, result);
  if (!planned) return planned.error();
  struct stat st {};
  PrintDryRun({.plan = &planned->plan,
               .request = &r.request,
               .result = result,
               .landlock = &planned->landlock,
               .limits = &planned->limits,
               .run_as = r.run_as,
               .seccomp_groups = r.seccomp_groups,
               .workspace_exists = ::stat(dirs->workspace.c_str(), &st) == 0 &&
                                   ::stat(dirs->out.c_str(), &st) == 0});
  result->reason = DispatchReason::kDryRun;
  result->exit_code = 0;
  return {};
}

// Removes the dispatch directory this run made unless told to keep it: a run that fails
// before the agent started leaves nothing behind.
class MadeDirCleanup {
 public:
  MadeDirCleanup(DispatchDirs* dirs, const std::optional<runtime::SandboxSpec::HostIds>& owner)
      : dirs_(dirs), owner_(owner) {}
  MadeDirCleanup(const MadeDirCleanup&) = delete;
  MadeDirCleanup& operator=(const MadeDirCleanup&) = delete;
  ~MadeDirCleanup() {
    if (keep_ || dirs_->made_dir.empty()) return;
    dirs_->given_workspace.reset();
    dirs_->given_out.reset();
    (void)RemoveDispatchDir(dirs_->root_fd.get(), dirs_->made_dir, owner_);
  }
  void Keep() { keep_ = true; }

 private:
  DispatchDirs* dirs_;
  std::optional<runtime::SandboxSpec::HostIds> owner_;
  bool keep_ = false;
};

// The stop signal that came before the agent could start: nothing is started then.
base::Status StoppedBeforeStart(int sig, DispatchResult* result) {
  result->stop_signal = sig;
  result->signal = sig;
  result->reason = DispatchReason::kInterrupted;
  result->exit_code = base::kSignalExitBase + sig;
  result->error =
      fmt::format("interrupted by {} before the agent started: nothing ran", StopSignalName(sig));
  return {};
}

// One dispatch from request to exit status, in the order the host side must take its
// steps: every check before anything is created, the stop signals taken as events from
// the start, the clone, the host's services, the sandbox, then what comes after it.
base::Status Dispatch(const DispatchRequest& given, const std::string& self_exe,
                      DispatchResult* result, Clock::time_point start, DispatchDirEnd* dir_end) {
  auto resolved = ResolveRequest(given);
  if (!resolved) return resolved.error();
  const ResolvedRequest& r = *resolved;
  const DispatchRequest& request = r.request;
  if (request.dry_run) return DryRun(r, self_exe, result);
  auto signal_fd = BlockStopSignals();
  if (!signal_fd) return signal_fd.error();
  int stopped_by = 0;
  auto dirs = PrepareDispatchDirs(request, result->id, r.run_as, signal_fd->get(), &stopped_by);
  if (!dirs) {
    if (stopped_by != 0) return StoppedBeforeStart(stopped_by, result);
    return dirs.error();
  }
  MadeDirCleanup cleanup(&*dirs, r.run_as);
  if (auto st = dir_end->Hold(*dirs, r.run_as, request.rm); !st) return st;
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
  HostServices services;
  if (auto st = services.Start(r, result->id); !st) return st;
  auto planned = PlanSandbox(r, *dirs, services, &*guard, self_exe, result);
  if (!planned) return planned.error();
  auto patch_fd = OpenPatchFile(request.patch, dirs->workspace, dirs->out);
  if (!patch_fd) return patch_fd.error();
  auto base_commit = guard->clone_head() ? base::Result<std::string>(*guard->clone_head())
                                         : ReadBaseCommit(dirs->workspace, r.run_as);
  if (!base_commit && request.patch) return base_commit.error();
  if (base_commit) result->base_commit = *base_commit;
  if (int sig = TakeStopSignal(signal_fd->get()); sig != 0) return StoppedBeforeStart(sig, result);
  WarnUnwritablePlaces(request, *dirs, r.run_as);  // --rw, --workspace: said, never chowned
  AnnounceDispatch(result->id, dirs->workspace, dirs->out);
  std::unique_ptr<TtySession>& tty = services.tty;
  std::optional<CallerStdioHidden> hidden;
  if (tty) {
    auto swapped = tty->HideCallerStdio();
    if (!swapped) return swapped.error();
    hidden.emplace(std::move(*swapped));
  }
  auto sandbox = SandboxProcess::Start(planned->plan, request);
  hidden.reset();
  if (!sandbox) {
    // A refused namespace, mount or /proc comes back in the kernel's words: name the step
    // and point to doctor instead.
    if (auto st = CheckNamespacesAllowed(); !st) return st;
    return sandbox.error();
  }
  // The agent may write from now on: what it leaves is the caller's, whatever follows.
  cleanup.Keep();
  services.hosts_fd.reset();
  if (tty) {
    if (auto st = tty->Start(); !st) return st;
  }
  result->setup_ms = MsSince(start);
  std::function<void()> hang_up;
  if (tty) hang_up = [&tty] { tty->HangUp(); };
  LoopOutcome outcome =
      ServeUntilExit(*services.loop, *sandbox, signal_fd->get(), request, hang_up);
  if (tty) tty->Finish();
  RecordExit(sandbox->Reap(), outcome, result);
  if (services.cg.cgroup) RecordOomAndRemove(&*services.cg.cgroup, r.limits.memory, result);
  // The sandbox is gone: undo what the agent left in the git metadata, then harvest.
  result->workspace_taint = guard->CheckAndRestore();
  result->workspace_tainted = !result->workspace_taint.empty();
  if (*patch_fd) {
    auto st = WriteHarvestPatch(dirs->workspace, result->base_commit, patch_fd->get(), r.run_as);
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
  DispatchDirEnd dir_end;  // <root>/<id> after the run: its record, or --rm
  if (auto st = Dispatch(request, self_exe, &result, start, &dir_end); !st) {
    result.reason = DispatchReason::kRuntimeError;
    result.exit_code = kRuntimeFailureExit;
    result.error = st.error().Render();
  }
  result.total_ms = MsSince(start);
  dir_end.Finish(result);
  return result;
}

}  // namespace sbx::dispatch
