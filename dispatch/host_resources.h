// HostResources, Acquire's last part (dispatch/acquire.h): what the host holds for one
// dispatch beside its identity, its directories and the git guard, in the order it must exist: the
// state directory, the cgroup, the janitor (before any other descriptor of this dispatch), the
// event loop, the relays, the generated /etc/hosts and files, the terminal. One object owns them
// all; its members are destroyed in reverse order on every path, a failed Acquire included. Built
// in place and never moved: the janitor points at the state directory, the relays at the loop.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"
#include "dispatch/dispatch_plan.h"
#include "dispatch/host/cgroup.h"
#include "dispatch/host/disk_watch.h"
#include "dispatch/host/sandbox_files.h"
#include "dispatch/host/start_report.h"
#include "dispatch/host/state_janitor.h"
#include "dispatch/resolve.h"
#include "dispatch/terminal/tty_session.h"
#include "relay/event_loop.h"
#include "relay/host_relay.h"
#include "relay/state_dir.h"

namespace sbx::dispatch {

// The --credentials copies and the preset's state for an agent working in `workspace` with
// the environment `env` (SandboxEnvironment: the state approves the key it holds)
// (dispatch/host/sandbox_files.h).
base::Result<SandboxFiles> MakeSandboxFiles(const ResolvedRequest& r, const std::string& workspace,
                                            const std::vector<std::string>& env);

struct HostResources {
  std::optional<relay::StateDir> state_dir;
  std::optional<DispatchCgroup> cgroup;
  std::string cgroup_missing;  // why there is none
  std::optional<StateDirJanitor> janitor;
  std::unique_ptr<relay::EventLoop> loop;
  std::unique_ptr<relay::HostRelay> tunnel;
  base::UniqueFd hosts_fd;
  SandboxFiles files;               // the credentials' copies, the agent's state, /etc/resolv.conf
  std::unique_ptr<TtySession> tty;  // --tty: the agent on a terminal of the sandbox's own
  std::unique_ptr<StartReport> report;  // how a command that could not start is learnt
  std::unique_ptr<DiskWatch> disk;      // --disk and --inodes (started before the agent)
  // Who the channels adopt: the supervisor, once it runs (relay/peer_check.h). The relays
  // and the terminal point at it: the struct is built in place and never moved.
  relay::PeerGate gate;

  // `workspace`: where the workspace is; `env`: the agent's environment (the agent's state
  // names both).
  base::Status Acquire(const ResolvedRequest& r, const std::string& id,
                       const std::string& workspace, const std::vector<std::string>& env);
  // What the plan needs of them, with the dispatch's directories and the git guard.
  [[nodiscard]] PlanFacts Facts(const std::string& workspace, const std::string& out,
                                const std::string& self_exe, const GitGuard* guard) const;
};

}  // namespace sbx::dispatch
