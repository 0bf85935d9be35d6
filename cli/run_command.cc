#include "cli/run_command.h"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <optional>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "cli/parse_options.h"
#include "cli/run_args.h"
#include "dispatch/dispatch.h"
#include "dispatch/identity/subordinate.h"
#include "dispatch/identity/subordinate_dirs.h"
#include "dispatch/plan/limits.h"
#include "dispatch/record/status_file.h"
#include "dispatch/request/human_units.h"
#include "dispatch/request/labels.h"
#include "dispatch/sys/caller_stderr.h"
#include "dispatch/sys/subordinate_env.h"

namespace sbx::cli {
namespace {

using dispatch::AgentPreset;
using dispatch::DispatchBackend;
using dispatch::DispatchRequest;

// The options CLI11 keeps as text, parsed afterwards (human_units.h) so that every bad value
// is refused with the same kind of line.
struct RunFlagTexts {
  std::string agent = "none";
  std::string backend = "native";
  std::string timeout;
  std::string grace;
  std::string limits_mode = "strict";
  std::string pids;
  std::string cpus;
  bool tty = false;
  bool no_tty = false;
  bool quiet = false;
  std::string identity = "own";
  std::vector<std::string> labels;
};

// The workspace, the out dir and the files of the dispatch.
void AddPlaceFlags(CLI::App& app, DispatchRequest& r, RunFlagTexts& t) {
  app.add_option("--repo", r.repo, "clone this repository (path or git URL) as the workspace");
  app.add_option("--rev", r.rev, "with --repo: start from this branch, tag or commit");
  app.add_flag("--include-uncommitted", r.include_uncommitted,
               "with --repo: carry the source's uncommitted changes into the clone");
  app.add_flag("--include-untracked", r.include_untracked,
               "with --repo: carry its uncommitted changes and untracked files");
  app.add_flag("--object-cache,!--no-object-cache", r.object_cache,
               "with a local --repo: the clone borrows its objects read-only from a cache of "
               "the repository kept for later dispatches, and writes only the checkout");
  app.add_option("--cache-root", r.cache_root, "where --object-cache keeps its caches");
  app.add_option("--workspace", r.workspace, "use this existing directory as the workspace");
  app.add_option("--workspace-root", r.workspace_root, "where per-dispatch directories go");
  app.add_option("--out", r.out, "the output directory (created if missing)");
  app.add_option("--credentials", r.credentials,
                 "a host file, copied read-only into the throwaway home at DEST "
                 "(relative to it, or absolute inside it; default: the preset's) (repeatable)");
  app.add_option("--agent", t.agent, "agent preset: claude, opencode or none")
      ->check(CLI::IsMember({"claude", "opencode", "none"}));
}

// What reaches the sandbox: the environment, host paths, endpoints and secrets.
void AddReachFlags(CLI::App& app, DispatchRequest& r) {
  app.add_option("--env", r.env_names, "pass this host variable through (repeatable)");
  app.add_option("--setenv", r.set_env, "a variable to set inside (repeatable)");
  app.add_option("--ro", r.ro_paths, "extra host path, read-only at the same place");
  app.add_option("--rw", r.rw_paths, "extra host path, read-write at the same place");
  app.add_option("--allow", r.allow, "an allowed endpoint (repeatable)");
  app.add_flag("--no-default-allow", r.no_default_allow, "do not allow the preset's endpoints");
  app.add_flag("--agent-telemetry", r.agent_telemetry,
               "let the preset's agent send telemetry: allow its telemetry hosts too");
  app.add_option("--broker-secret", r.broker_secrets,
                 "the secret a broker route sets in HEADER (repeatable)");
  app.add_option("--broker-ca", r.broker_ca, "the CA certificates broker routes trust");
  app.add_option("--ledger", r.ledger, "append one JSON line per relayed connection here");
}

// How the sandbox runs, ends and is bounded.
void AddRunningFlags(CLI::App& app, DispatchRequest& r, RunFlagTexts& t) {
  app.add_option("--backend", t.backend, "native or bwrap")
      ->check(CLI::IsMember({"native", "bwrap"}));
  app.add_option("--bwrap-path", r.bwrap_path, "the bwrap used by --backend bwrap")
      ->envname("ATEAM_SANDBOX_BWRAP");
  app.add_option("--timeout", t.timeout, "kill the whole sandbox after DURATION (90s, 30m, 2h)");
  app.add_option("--grace", t.grace,
                 "time from the SIGINT/SIGTERM passed to the agent to SIGKILL (default 5s)");
  app.add_flag("--dry-run", r.dry_run,
               "print the agent's sandbox and a bwrap line for it; create nothing");
  app.add_option("--status-json", r.status_json, "write the dispatch's status document here");
  app.add_option("--seccomp-allow", r.seccomp_allow, "relax one seccomp group (repeatable)");
  app.add_option("--landlock-allow", r.landlock_allow,
                 "leave out one Landlock part: fs, net or scope (repeatable)");
  app.add_option("--run-as", r.run_as, "root callers: the user the sandbox runs as");
  app.add_option("--identity", t.identity,
                 "unprivileged callers: own (default: the sandbox runs as you) or subuid (a "
                 "subordinate uid of your /etc/subuid range per dispatch)")
      ->check(CLI::IsMember({"own", "subuid"}));
}

// What is left afterwards, and the limits.
void AddResultAndLimitFlags(CLI::App& app, DispatchRequest& r, RunFlagTexts& t) {
  app.add_option("--patch", r.patch, "afterwards, write the agent's work here as one patch");
  app.add_flag("--rm", r.rm,
               "remove the dispatch directory at the end (a given --out or --workspace stays)");
  app.add_flag("--die-with-parent", r.die_with_parent,
               "stop (as on SIGTERM) when the caller dies; by default run outlives its caller");
  app.add_option("--id-file", r.id_file,
                 "write the dispatch id here once its directory and record exist");
  app.add_option("--label", t.labels,
                 "kept in the status document and record, for ls/gc --label (repeatable)");
  app.add_option("--tmpfs-size", r.tmpfs_size,
                 "the size of the home and of /tmp, each (default 2G)");
  app.add_option("--memory", r.memory, "memory for the whole sandbox (default 8G)");
  app.add_option("--pids", t.pids, "at most N processes and threads (default 4096)");
  app.add_option("--cpus", t.cpus, "at most N CPUs of time, e.g. 2 or 0.5 (default: no limit)");
  app.add_option("--disk", r.disk,
                 "SIZE the agent may add to the host's disk, workspace and out dir together "
                 "(default 16G)");
  app.add_option("--inodes", r.inodes,
                 "N files, directories and links it may add there (default 500000)");
  app.add_option("--limits", t.limits_mode,
                 "strict (default): refuse a limit this host cannot enforce; best-effort: run "
                 "without it, as the status document says")
      ->check(CLI::IsMember({"strict", "best-effort"}));
  app.add_flag("--allow-nested-userns", r.allow_nested_userns,
               "let the agent create user namespaces (its own sandbox), at most 16");
  auto* tty_flag = app.add_flag("--tty", t.tty,
                                "give the agent a terminal of the sandbox, relayed to this one "
                                "(default when stdin and stdout are terminals)");
  app.add_flag("-q,--quiet", t.quiet, "no notices on stderr (errors still)");
  app.add_flag("--no-tty", t.no_tty, "never give the agent a terminal: plain stdin/stdout/stderr")
      ->excludes(tty_flag);
}

void AddFlags(CLI::App& app, DispatchRequest& r, RunFlagTexts& t) {
  AddPlaceFlags(app, r, t);
  AddReachFlags(app, r);
  AddRunningFlags(app, r, t);
  AddResultAndLimitFlags(app, r, t);
  app.footer(
      "The command comes after the options, after -- when it starts with '-':\n"
      "  ateam-sandbox run [OPTIONS] [--] COMMAND [ARGS...]");
}

std::string SelfExe() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string("/proc/self/exe");
}

// The durations and counts kept as text, into the request.
base::Status ParseValueTexts(const RunFlagTexts& t, DispatchRequest* request) {
  // A deadline beyond a year is a typo, not a plan; so are more CPUs than any host has.
  constexpr double kMaxCpus = 65536;
  constexpr dispatch::DurationRange kDeadline{/*zero_allowed=*/false, 365.0 * 86400};
  if (!t.timeout.empty()) {
    SBX_ASSIGN_OR_RETURN(request->timeout_seconds,
                         dispatch::ParseDuration(t.timeout, "--timeout", kDeadline));
  }
  if (!t.grace.empty()) {
    SBX_ASSIGN_OR_RETURN(request->grace_seconds,
                         dispatch::ParseDuration(t.grace, "--grace", kDeadline));
  }
  if (!t.pids.empty()) {
    SBX_ASSIGN_OR_RETURN(uint64_t pids, dispatch::ParseCount(t.pids, "--pids", dispatch::kMinPids,
                                                             dispatch::kMaxPids));
    request->pids = static_cast<long long>(pids);
  }
  SBX_ASSIGN_OR_RETURN(request->labels, dispatch::ParseLabels(t.labels));
  if (!t.cpus.empty()) {
    SBX_ASSIGN_OR_RETURN(request->cpus, dispatch::ParsePositiveNumber(t.cpus, "--cpus", kMaxCpus));
  }
  return {};
}

int Fail(const std::string& message) {
  dispatch::SayToCaller(message);
  return dispatch::kRuntimeFailureExit;
}

// --identity subuid: the same run again as uid 0 of a namespace that maps the caller's
// subordinate ids (dispatch/identity/subordinate.h), which takes it from there; its exit
// code, or nullopt when this run goes on itself (no subuid, or it is that run already).
std::optional<int> RunWithSubordinateIdentity(const std::string& identity,
                                              const DispatchRequest& request,
                                              std::span<const std::string> args) {
  if (dispatch::InSubordinateNamespace()) {
    // Before any path is checked: only host root's directories the outer run saw count as
    // root's here (dispatch/identity/subordinate_dirs.h).
    dispatch::TrustOnlyVouchedHostRootDirs();
    return std::nullopt;
  }
  if (identity != "subuid") return std::nullopt;
  if (::geteuid() == 0) {
    return Fail(
        "--identity subuid is for unprivileged callers: a root caller's dispatches get host ids "
        "of their own already");
  }
  if (request.run_as) return Fail("--identity subuid and --run-as do not go together");
  auto ids = dispatch::ResolveCallerSubordinateIds();
  if (!ids) return Fail(ids.error().Render());
  auto root_dirs = dispatch::CheckSubordinateHostDirs(request, ids->uid);
  if (!root_dirs) return Fail(root_dirs.error().Render());
  ids->host_root_dirs = std::move(*root_dirs);
  std::fflush(stdout);
  auto code = dispatch::RunInSubordinateNamespace(*ids, SelfExe(), args, request.die_with_parent);
  if (!code) return Fail(code.error().Render());
  return *code;
}

}  // namespace

int RunRunCommand(std::span<const std::string> args) {
  dispatch::FillClosedStandardFds();
  CLI::App app{"Run COMMAND in a per-dispatch agent sandbox", "ateam-sandbox run"};
  DispatchRequest request;
  RunFlagTexts texts;
  AddFlags(app, request, texts);
  // The command, verbatim, is split off first; CLI11 sees only the options.
  auto split = SplitRunArgs(args, KnownOptions(app));
  if (!split) return Fail(split.error().Render());
  request.command = std::move(split->command);
  if (auto done = ParseOptions(app, split->options, Fail)) return *done;
  if (auto parsed = ParseValueTexts(texts, &request); !parsed) return Fail(parsed.error().Render());
  dispatch::SetNoticesQuiet(texts.quiet);
  if (request.command.empty()) {
    return Fail(
        "no command: give it after the options, e.g. ateam-sandbox run --workspace DIR -- sh");
  }
  if (request.repo.has_value() == request.workspace.has_value()) {
    return Fail("give exactly one of --repo SRC or --workspace DIR");
  }
  if (!request.repo && (request.rev || request.include_uncommitted || request.include_untracked ||
                        request.object_cache)) {
    return Fail(
        "--rev, --include-uncommitted, --include-untracked and --object-cache go with --repo SRC");
  }
  request.agent = texts.agent == "claude"     ? AgentPreset::kClaude
                  : texts.agent == "opencode" ? AgentPreset::kOpencode
                                              : AgentPreset::kNone;
  request.limits_best_effort = texts.limits_mode == "best-effort";
  request.backend = texts.backend == "bwrap" ? DispatchBackend::kBwrap : DispatchBackend::kNative;
  request.tty = texts.tty      ? dispatch::TtyMode::kOn
                : texts.no_tty ? dispatch::TtyMode::kOff
                               : dispatch::TtyMode::kAuto;
  if (auto done = RunWithSubordinateIdentity(texts.identity, request, args)) return *done;
  // Checked before anything starts: a name that is not a regular file is refused now, not
  // written through after the agent ran.
  std::optional<dispatch::StatusFile> status_file;
  if (request.status_json) {
    auto opened = dispatch::StatusFile::Open(*request.status_json);
    if (!opened) return Fail(opened.error().Render());
    status_file.emplace(std::move(*opened));
  }
  std::fflush(stdout);
  dispatch::DispatchResult result = dispatch::RunDispatch(request, SelfExe());
  // The status document first: the closing lines below may find nobody reading.
  std::string status_error;
  if (status_file && result.reason != dispatch::DispatchReason::kDryRun) {
    if (auto written =
            status_file->Write(dispatch::RenderStatusJson(result), result.workspace, result.out);
        !written) {
      status_error = written.error().Render();
    }
  }
  if (!result.error.empty()) dispatch::SayToCaller(result.error);
  if (!result.network_note.empty()) dispatch::NoticeToCaller("note: " + result.network_note);
  if (result.reason == dispatch::DispatchReason::kTimeout && result.error.empty()) {
    dispatch::SayToCaller(
        fmt::format("--timeout {} expired: the whole sandbox was killed", texts.timeout));
  }
  if (!result.patch_error.empty()) dispatch::SayToCaller("--patch: " + result.patch_error);
  for (const auto& line : result.workspace_taint) {
    dispatch::SayToCaller("workspace git metadata: " + line);
  }
  if (!status_error.empty()) dispatch::SayToCaller(status_error);
  return result.exit_code;
}

}  // namespace sbx::cli
