#include "cli/run_command.h"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <optional>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "dispatch/dispatch.h"
#include "dispatch/status_file.h"

namespace sbx::cli {
namespace {

using dispatch::AgentPreset;
using dispatch::DispatchBackend;
using dispatch::DispatchRequest;

void AddFlags(CLI::App& app, DispatchRequest& r, std::string& agent, std::string& backend) {
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
  AddFlags(app, request, agent, backend);
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
  if (!result.error.empty()) fmt::print(stderr, "ateam-sandbox run: {}\n", result.error);
  if (status_file && result.reason != "dry-run") {
    if (auto written =
            status_file->Write(dispatch::RenderStatusJson(result), result.workspace, result.out);
        !written) {
      fmt::print(stderr, "ateam-sandbox run: {}\n", written.error().Render());
    }
  }
  return result.exit_code;
}

}  // namespace sbx::cli
