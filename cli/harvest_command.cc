#include "cli/harvest_command.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <optional>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "base/unique_fd.h"
#include "cli/parse_options.h"
#include "dispatch/git/harvest.h"
#include "dispatch/record/caches.h"
#include "runtime/host_facts.h"

namespace sbx::cli {
namespace {

constexpr int kFailureExit = 125;

int Fail(const std::string& message) {
  fmt::print(stderr, "ateam-sandbox harvest: {}\n", message);
  return kFailureExit;
}

}  // namespace

int RunHarvestCommand(std::span<const std::string> args) {
  CLI::App app{"Write the patch of the agent's work in a finished workspace",
               "ateam-sandbox harvest"};
  std::string workspace;
  std::optional<std::string> base;
  std::string output;
  app.add_option("workspace", workspace, "the workspace (a dispatch's clone)")->required();
  app.add_option("--base", base,
                 "where the agent started: a branch, tag, HEAD~1 or commit id (the status "
                 "document's base_commit); default: HEAD, so only uncommitted work");
  app.add_option("-o,--output", output, "the patch file to write")->required();
  std::optional<std::string> cache_root;
  app.add_option("--cache-root", cache_root,
                 "only borrow from object caches in this root (default: the one the "
                 "workspace's .git/objects/info/alternates names)");
  if (auto done = ParseOptions(app, args, Fail)) return *done;
  char resolved[PATH_MAX];
  if (::realpath(workspace.c_str(), resolved) == nullptr)
    return Fail("no such workspace: " + workspace);
  workspace = resolved;
  auto host = runtime::ProbeHostFacts();
  if (!host) return Fail(host.error().Render());
  // Root never runs git as root in a workspace another uid owns: the sandbox takes the
  // owner's ids. A workspace that is root's (a finished dispatch's, handed back) is read by
  // root's own ids in the harvest sandbox, with no capability and the prelude's settings.
  dispatch::RunAsIds run_as;
  if (host->IsRoot()) {
    struct stat st {};
    if (::stat(workspace.c_str(), &st) != 0) return Fail("can't stat " + workspace);
    if (st.st_uid != 0) run_as = runtime::SandboxSpec::HostIds{st.st_uid, st.st_gid};
  }
  // The same sandboxes as a dispatch's harvest, compiled by the same function.
  // A workspace of `run --object-cache` reads its history from the cache its alternates
  // names, once verified, bound read-only.
  auto borrowed = dispatch::BorrowedCachesOf(workspace, cache_root);
  if (!borrowed) return Fail(borrowed.error().Render());
  auto plan = dispatch::CompileHarvestPlan(
      {.workspace = workspace, .run_as = run_as, .borrowed_stores = *borrowed}, *host);
  if (!plan) return Fail(plan.error().Render());
  if (base) {
    auto read = dispatch::CompileRevisionRead({.workspace = workspace, .run_as = run_as}, *host);
    if (!read) return Fail(read.error().Render());
    auto commit = dispatch::ResolveCommit(*read, *base);
    if (!commit) return Fail(commit.error().Render());
    base = *commit;
  } else {
    auto head = dispatch::ReadBaseCommit(*plan);
    if (!head) return Fail(head.error().Render());
    base = *head;
  }
  auto file = dispatch::PreparePatchFile("-o", output, workspace, workspace);
  if (!file) return Fail(file.error().Render());
  if (auto st = dispatch::WritePatchFile(**file, *plan, *base); !st) {
    return Fail(st.error().Render());
  }
  return 0;
}

}  // namespace sbx::cli
