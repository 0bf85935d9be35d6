#include "cli/run_command.h"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <fstream>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "dispatch/dispatch.h"

namespace sbx::cli {
namespace {

using dispatch::AgentPreset;
using dispatch::DispatchBackend;
using dispatch::DispatchRequest;

void AddFlags(CLI::App& app, DispatchRequest& r, std::string& agent, std::string& backend,
              bool& tty, bool& no_tty) {
  app.add_option("--repo", r.repo, "clone this repository (path or git URL) as the workspace");
  app.add_option("--workspace", r.workspace, "use this existing directory as the workspace");
  app.add_option("--workspace-root", r.workspace_root, "where per-dispatch directories go");
  app.add_option("--out", r.out, "the output directory (created if missing)");
  app.add_option("--credentials", r.credentials,
                 "SRC[:DEST] one host file, read-only in the throwaway home");
  app.add_option("--agent", agent, "agent preset: claude, opencode or none")
      ->check(CLI::IsMember({"claude", "opencode", "none"}));
  app.add_option("--env", r.env_names, "pass this host variable through (repeatable)");
  app.add_option("--setenv", r.set_env, "NAME=VALUE to set inside (repeatable)");
  app.add_option("--ro", r.ro_paths, "extra host path, read-only at the same place");
  app.add_option("--rw", r.rw_paths, "extra host path, read-write at the same place");
  app.add_option("--allow", r.allow, "HOST[:PORT][=ADDR:PORT] an allowed endpoint (repeatable)");
  app.add_flag("--no-default-allow", r.no_default_allow, "do not allow the preset's endpoint");
  app.add_option("--ledger", r.ledger, "append one JSON line per relayed connection here");
  app.add_option("--backend", backend, "native or bwrap")
      ->check(CLI::IsMember({"native", "bwrap"}));
  app.add_option("--bwrap-path", r.bwrap_path, "the bwrap used by --backend bwrap")
      ->envname("ATEAM_SANDBOX_BWRAP");
  app.add_option("--timeout", r.timeout_seconds, "kill the whole sandbox after SECONDS")
      ->check(CLI::PositiveNumber);
  app.add_flag("--dry-run", r.dry_run, "print the plan and the equivalent bwrap command line");
  app.add_option("--status-json", r.status_json, "write the dispatch's status document here");
  app.add_option("--seccomp-allow", r.seccomp_allow, "relax one seccomp group (repeatable)");
  app.add_option("--run-as", r.run_as, "root callers: USER or UID[:GID] the sandbox runs as");
  auto* tty_flag = app.add_flag("--tty", tty,
                                "give the agent a terminal of the sandbox, relayed to this one "
                                "(default when stdin and stdout are terminals)");
  app.add_flag("--no-tty", no_tty, "never give the agent a terminal: plain stdin/stdout/stderr")
      ->excludes(tty_flag);
  app.footer("The command comes after --: ateam-sandbox run [OPTIONS] -- COMMAND [ARGS...]");
}

std::string SelfExe() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string("/proc/self/exe");
}

int Fail(const std::string& message) {
  fmt::print(stderr, "ateam-sandbox run: {}\n", message);
  return dispatch::kRuntimeFailureExit;
}

}  // namespace

int RunRunCommand(std::span<const std::string> args) {
  CLI::App app{"Run COMMAND in a per-dispatch agent sandbox", "ateam-sandbox run"};
  DispatchRequest request;
  std::string agent = "none";
  std::string backend = "native";
  bool tty = false;
  bool no_tty = false;
  AddFlags(app, request, agent, backend, tty, no_tty);
  // Everything after the first "--" is the command, verbatim; CLI11 sees only the options.
  auto separator = std::find(args.begin(), args.end(), "--");
  if (separator != args.end()) request.command.assign(separator + 1, args.end());
  std::vector<std::string> reversed(std::make_reverse_iterator(separator), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    fmt::print("{}", app.help());
    return 0;
  } catch (const CLI::ParseError& e) {
    return Fail(e.what());
  }
  if (request.command.empty()) return Fail("no command: give it after --");
  if (request.repo.has_value() == request.workspace.has_value()) {
    return Fail("give exactly one of --repo SRC or --workspace DIR");
  }
  request.agent = agent == "claude"     ? AgentPreset::kClaude
                  : agent == "opencode" ? AgentPreset::kOpencode
                                        : AgentPreset::kNone;
  request.backend = backend == "bwrap" ? DispatchBackend::kBwrap : DispatchBackend::kNative;
  request.tty = tty      ? dispatch::TtyMode::kOn
                : no_tty ? dispatch::TtyMode::kOff
                         : dispatch::TtyMode::kAuto;
  std::fflush(stdout);
  dispatch::DispatchResult result = dispatch::RunDispatch(request, SelfExe());
  if (!result.error.empty()) fmt::print(stderr, "ateam-sandbox run: {}\n", result.error);
  if (request.status_json && result.reason != "dry-run") {
    std::ofstream out(*request.status_json, std::ios::trunc);
    out << dispatch::RenderStatusJson(result);
    if (!out) fmt::print(stderr, "ateam-sandbox run: can't write {}\n", *request.status_json);
  }
  return result.exit_code;
}

}  // namespace sbx::cli
