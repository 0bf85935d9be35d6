// DispatchRequest: what `ateam-sandbox run` was asked for, as plain data (cli/run_command.cc
// fills it from flags; nothing here touches the system).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "dispatch/request/labels.h"

namespace sbx::dispatch {

enum class AgentPreset { kNone, kClaude, kOpencode };
enum class DispatchBackend { kNative, kBwrap };
// Whether the agent gets a terminal of the sandbox (dispatch/terminal/tty_session.h): kAuto is on
// when the caller's stdin and stdout are both terminals.
enum class TtyMode { kOff, kOn, kAuto };

struct DispatchRequest {
  std::optional<std::string> repo;   // --repo: cloned fresh
  std::optional<std::string> rev;    // --rev: the clone starts at this revision
  bool include_uncommitted = false;  // --include-uncommitted: SRC's changes carried
  bool include_untracked = false;    // --include-untracked: its untracked files too
  bool object_cache = false;  // --object-cache: borrow objects from a cache (git/object_cache.h)
  std::optional<std::string> cache_root;      // --cache-root: where the object caches are
  std::optional<std::string> workspace;       // --workspace: used as is
  std::optional<std::string> workspace_root;  // --workspace-root: where clones go
  std::optional<std::string> out;             // --out
  std::vector<std::string> credentials;       // --credentials SRC[:DEST] (repeatable)
  AgentPreset agent = AgentPreset::kNone;
  std::vector<std::string> env_names;       // --env NAME
  std::vector<std::string> set_env;         // --setenv NAME=VALUE
  std::vector<std::string> ro_paths;        // --ro PATH
  std::vector<std::string> rw_paths;        // --rw PATH
  std::vector<std::string> allow;           // --allow HOST[:PORT][=ADDR:PORT]
  bool no_default_allow = false;            // --no-default-allow: not even the preset's endpoints
  bool agent_telemetry = false;             // --agent-telemetry: the preset's telemetry too
  std::vector<std::string> broker_secrets;  // --broker-secret HOST:HEADER=@FILE|$NAME
  std::optional<std::string> broker_ca;     // --broker-ca FILE (dispatch/plan/broker_setup.h)
  std::optional<std::string> ledger;        // --ledger FILE
  DispatchBackend backend = DispatchBackend::kNative;
  std::string bwrap_path = "/usr/bin/bwrap";
  std::optional<double> timeout_seconds;
  double grace_seconds = 5;  // --grace: from the stop signal passed on to SIGKILL
  bool dry_run = false;
  std::optional<std::string> status_json;
  std::vector<std::string> seccomp_allow;
  std::vector<std::string> landlock_allow;  // --landlock-allow fs|net|scope
  std::optional<std::string> run_as;        // root callers: a user name or uid[:gid]
  std::optional<std::string> patch;         // --patch FILE: the agent's work, harvested
  bool rm = false;                          // --rm: <root>/<id> removed at the end
  bool die_with_parent = false;             // --die-with-parent: `run` stops when its caller dies
  std::optional<std::string> id_file;       // --id-file FILE: the dispatch id, once known
  std::vector<DispatchLabel> labels;        // --label KEY=VALUE (labels.h)
  std::optional<std::string>
      tmpfs_size;                     // --tmpfs-size: home and /tmp, each (dispatch/plan/limits.h)
  std::optional<std::string> memory;  // --memory
  std::optional<long long> pids;      // --pids
  std::optional<double> cpus;         // --cpus
  std::optional<std::string> disk;    // --disk: what the agent may add to the host's disk
  std::optional<std::string> inodes;  // --inodes: how many names it may add there
  bool allow_nested_userns = false;   // --allow-nested-userns
  bool limits_best_effort = false;    // --limits best-effort (dispatch/plan/limit_check.h)
  TtyMode tty = TtyMode::kOff;        // --tty / --no-tty; the command line's default is kAuto
  std::vector<std::string> command;
};

// What a preset brings; every part can be overridden by explicit flags.
struct AgentProfile {
  std::string binary;                   // looked up in the caller's PATH ("" for none)
  std::vector<std::string> state_dirs;  // created in the throwaway home
  std::string credentials_dest;         // default DEST for --credentials, relative to HOME
  std::string default_endpoint;         // the API: allowed unless --no-default-allow
  // What else the agent reaches to start and work (its sign-in host): allowed with the API.
  std::vector<std::string> extra_endpoints;
  // Where it sends telemetry and error reports: allowed only with --agent-telemetry; without
  // it, `quiet_env` tells the agent not to try.
  std::vector<std::string> telemetry_endpoints;
  std::vector<std::string> quiet_env;  // NAME=VALUE set unless --agent-telemetry
  std::vector<std::string> env;        // host variables passed through when set
};
AgentProfile ProfileFor(AgentPreset preset);

}  // namespace sbx::dispatch
