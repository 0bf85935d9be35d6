#include "dispatch/host_resources.h"

#include <sys/resource.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>

#include <fmt/format.h>

#include "dispatch/host/orphan_cgroups.h"
#include "dispatch/plan/agent_state.h"
#include "dispatch/plan/broker_setup.h"
#include "dispatch/plan/limit_check.h"
#include "dispatch/sys/caller_stderr.h"
#include "dispatch/sys/subordinate_env.h"
#include "dispatch/terminal/terminal.h"

namespace sbx::dispatch {
namespace {

// The dispatch's cgroup, or why there is none (said on stderr when the caller asked for a
// cgroup limit or is looking at a terminal; always in the status document, and `doctor`
// explains it).
void MakeCgroup(const ResolvedRequest& r, const std::string& id, HostResources* held) {
  const DispatchLimits& limits = r.limits;
  auto made =
      DispatchCgroup::Create(id, {limits.memory, limits.pids, limits.cpus}, r.host.euid == 0);
  if (made) {
    held->cgroup.emplace(std::move(*made));
    return;
  }
  held->cgroup_missing = made.error().Render();
  // A limit asked for is refused instead, with its own line (Acquire).
  if (!CheckLimitsEnforceable(r.request, held->cgroup_missing)) return;
  // One short line: why there is none is in the status document, and doctor explains it.
  if (r.request.memory || r.request.pids || r.request.cpus || ::isatty(STDERR_FILENO) == 1) {
    NoticeToCaller(
        "notice: no cgroup, so memory and cpu are not limited (see ateam-sandbox doctor)");
  }
}

}  // namespace

base::Result<SandboxFiles> MakeSandboxFiles(const ResolvedRequest& r, const std::string& workspace,
                                            const std::vector<std::string>& env) {
  return SandboxFiles::Make(r.credentials, AgentStateFiles(r.request, workspace, env));
}

base::Status HostResources::Acquire(const ResolvedRequest& r, const std::string& id,
                                    const std::string& workspace,
                                    const std::vector<std::string>& env) {
  // The relays hold two descriptors per connection, up to each route's cap: the caller's
  // soft open-files limit (often 1024) would let two busy routes starve a third. The soft
  // limit goes up to the hard one; the sandbox still lowers its own to at most kOpenFiles.
  if (rlimit nofile{};
      ::getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
    nofile.rlim_cur = nofile.rlim_max;
    (void)::setrlimit(RLIMIT_NOFILE, &nofile);
  }
  // A root caller's state directory is its own, under /run (root's, so nobody can block
  // or prepare the name), 0711: the sandbox's uid reaches the sockets in it, whose owner
  // and mode (set through the directory's fd) decide who may connect.
  // Under `run --identity subuid` /run is host root's: the caller's own base below /tmp.
  const char* xdg_runtime_dir = std::getenv("XDG_RUNTIME_DIR");  // NOLINT(concurrency-mt-unsafe)
  const char* root_base = InSubordinateNamespace() ? "/tmp" : "/run";
  auto dir = relay::StateDir::Create(
      r.host.IsRoot() ? relay::StateDirOptions{"", root_base, r.host.euid, /*traversable=*/true}
                      : relay::StateDirOptions{xdg_runtime_dir != nullptr ? xdg_runtime_dir : "",
                                               "/tmp", r.host.euid});
  if (!dir) return dir.error();
  state_dir.emplace(std::move(*dir));
  // Before the cgroup: which dispatch the locked directory is, so that `gc` leaves this
  // one's cgroup alone while it runs (dispatch/host/orphan_cgroups.h).
  if (auto st = MarkStateDirDispatch(state_dir->path(), id); !st) return st;
  // Before the janitor, which removes it too after a SIGKILL of `run`.
  MakeCgroup(r, id, this);
  // A limit asked for that nothing enforces is refused (dispatch/plan/limit_check.h).
  if (auto st = CheckLimitsEnforceable(r.request, cgroup_missing); !st) return st;
  // Before any other descriptor of this dispatch exists (dispatch/host/state_janitor.h), but
  // for the cgroup's cgroup.procs files, which keep nothing alive.
  auto started =
      StateDirJanitor::Start(&*state_dir, cgroup ? cgroup->dirs() : std::vector<std::string>{});
  if (!started) return started.error();
  janitor.emplace(std::move(*started));
  // A relay that writes to a connection the agent already closed must get EPIPE, not
  // die; it is also what lets the relays splice (relay/flow.h).
  ::signal(SIGPIPE, SIG_IGN);
  auto made_loop = relay::EventLoop::Create();
  if (!made_loop) return made_loop.error();
  loop = std::move(*made_loop);
  std::optional<uid_t> socket_owner;
  if (r.run_as) socket_owner = r.run_as->uid;
  // The routes' upstreams were pinned by Resolve: nothing is looked up here.
  relay::HostRelayOptions options{state_dir->path(), r.routes, {}, r.request.ledger.value_or(""),
                                  socket_owner,      &gate,    {}, {}};
  if (auto st = AddBrokerOptions(r.request, r.routes, r.host_env, r.host.euid == 0, options); !st)
    return st;
  auto relays = relay::HostRelay::Create(loop.get(), std::move(options));
  if (!relays) return relays.error();
  tunnel = std::move(*relays);
  auto hosts = HostsFileFd(r.routes);
  if (!hosts) return hosts.error();
  hosts_fd = std::move(*hosts);
  auto made_files = MakeSandboxFiles(r, workspace, env);
  if (!made_files) return made_files.error();
  files = std::move(*made_files);
  auto made_report = StartReport::Create(loop.get(), state_dir->path(), socket_owner);
  if (!made_report) return made_report.error();
  report = std::move(*made_report);
  report->SetPeerGate(&gate);
  if (WantsTty(r.request.tty)) {
    auto session = TtySession::Create(loop.get(), state_dir->path(), socket_owner);
    if (!session) return session.error();
    tty = std::move(*session);
    tty->SetPeerGate(&gate);
  }
  return {};
}

PlanFacts HostResources::Facts(const std::string& workspace, const std::string& out,
                               const std::string& self_exe, const GitGuard* guard) const {
  PlanFacts facts{.workspace = workspace,
                  .out = out,
                  .self_exe = self_exe,
                  .state_dir = state_dir->path(),
                  .hosts_fd = hosts_fd.get(),
                  .credentials = files.CredentialFds(),
                  .agent_state = files.AgentStateFds(),
                  .resolv_conf_fd = files.resolv_conf ? files.resolv_conf.get() : -1,
                  .tty = tty != nullptr,
                  .tty_size = tty ? tty->size_argument() : std::string(),
                  .guard = guard};
  if (cgroup) {
    facts.cgroup_procs_fds = cgroup->ProcsFds();
    facts.cgroup_where = cgroup->Describe();
  }
  facts.cgroup_missing = cgroup_missing;
  return facts;
}

}  // namespace sbx::dispatch
