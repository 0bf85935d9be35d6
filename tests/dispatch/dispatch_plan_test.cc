// Golden dispatch plans: CompileDispatchPlan from injected host facts (root and
// unprivileged callers; with and without routes, a terminal, limits, credentials) printed
// whole: the sandbox's plan with the supervisor's command line, its environment, the
// routes, Landlock and the limits, then the harvest's two sandboxes. Each golden is a file in
// tests/dispatch/golden/; a changed plan fails here. SBX_UPDATE_GOLDENS=1 rewrites them, to be
// reviewed as a diff.
#include "dispatch/dispatch_plan.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "dispatch/host/prepare.h"
#include "runtime/plan_printer.h"
#include "security/landlock.h"
#include "tests/support/plan_fixtures.h"

namespace sbx::dispatch {
namespace {

std::string GoldenPath(const std::string& name) {
  return std::string(SBX_DISPATCH_GOLDEN_DIR) + "/" + name + ".txt";
}

// The harvest's two sandboxes, by name.
std::vector<std::pair<std::string, const runtime::Plan*>> HarvestRuns(const DispatchPlan& p) {
  return {{"base read", &p.harvest.base_read}, {"patch", &p.harvest.patch}};
}

std::string Render(const DispatchPlan& p) {
  std::string out = runtime::PrintPlan(p.plan);
  for (const std::string& entry : p.plan.env) out += "env: " + entry + "\n";
  for (const DispatchRoute& route : p.routes) {
    out += fmt::format("route: {}:{} {} at {} -> {}\n", route.host, route.port, route.kind,
                       route.sandbox_address, route.upstream);
  }
  for (const std::string& line : security::DescribeLandlock(p.landlock)) out += line + "\n";
  for (const std::string& line : p.limits.enforced) out += "limit: " + line + "\n";
  for (const std::string& line : p.limits.not_enforced) out += "limit not enforced: " + line + "\n";
  out += "limits json: " + p.limits_json + "\n";
  for (const auto& [name, plan] : HarvestRuns(p)) {
    // The script is the same in every plan: its text is the harvest_scripts golden's.
    runtime::Plan shown = *plan;
    if (shown.argv.size() > 2) shown.argv[2] = fmt::format("<the {} script>", name);
    out += fmt::format("harvest {}:\n", name) + runtime::PrintPlan(shown);
    for (const std::string& entry : plan->env) out += "env: " + entry + "\n";
  }
  return out;
}

void ExpectGoldenText(const std::string& name, const std::string& text) {
  const char* update = std::getenv("SBX_UPDATE_GOLDENS");  // NOLINT(concurrency-mt-unsafe)
  if (update != nullptr && std::string(update) == "1") {
    std::ofstream(GoldenPath(name)) << text;
    return;
  }
  std::ifstream in(GoldenPath(name));
  ASSERT_TRUE(in) << "no golden " << GoldenPath(name) << " (SBX_UPDATE_GOLDENS=1 writes it)";
  std::stringstream golden;
  golden << in.rdbuf();
  EXPECT_EQ(text, golden.str()) << "the plan of " << name << " changed";
}

void ExpectGolden(const std::string& name, const DispatchPlan& plan) {
  ExpectGoldenText(name, Render(plan));
}

// A resolved request as Resolve would leave it, from fixed facts instead of the host's.
ResolvedRequest Resolved(bool root, const DispatchRequest& request) {
  ResolvedRequest r;
  r.host = root ? runtime::fixtures::RootHost() : runtime::fixtures::UserHost();
  r.host.cwd = "/home/user/project";
  r.request = request;
  auto routes = ParseDispatchRoutes(r.request);
  EXPECT_TRUE(routes) << routes.error().Render();
  if (routes) r.routes = *routes;
  if (root) r.run_as = runtime::SandboxSpec::HostIds{1500, 1500};
  r.host_env = {"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/home/user", "TERM=xterm-256color",
                "LANG=C.UTF-8", "SECRET_TOKEN=not-passed"};
  auto limits = ResolveLimits(r.request);
  EXPECT_TRUE(limits) << limits.error().Render();
  if (limits) r.limits = *limits;
  r.seccomp = {};  // the compiled policy's bytes are the seccomp tests' business
  r.sandbox_user = root ? "sandboxer" : "user";
  r.landlock_abi = 4;
  for (const std::string& value : r.request.credentials) {
    r.credentials.push_back({value.substr(value.find(':') + 1), "token"});
  }
  if (root) r.host.root_acts_unprivileged = false;
  return r;
}

PlanFacts Facts(const ResolvedRequest& r) {
  PlanFacts facts{.workspace = "/var/tmp/ateam-sandbox/dispatches/d1/workspace",
                  .out = "/var/tmp/ateam-sandbox/dispatches/d1/out",
                  .self_exe = "/usr/bin/ateam-sandbox",
                  .state_dir = "/run/ateam-sandbox-state",
                  .hosts_fd = 10,
                  .credentials = {},
                  .agent_state = {},
                  .resolv_conf_fd = 12,
                  .tty = r.request.tty == TtyMode::kOn};
  for (const CredentialsCopy& copy : r.credentials) facts.credentials.push_back({copy.dest, 11});
  auto env = SandboxEnvironment(r, facts.workspace, facts.out);
  EXPECT_TRUE(env) << env.error().Render();
  if (env) facts.env = *env;
  if (r.request.tty == TtyMode::kOn) facts.tty_size = "24x80";
  if (r.request.memory || r.request.pids || r.request.cpus) {
    facts.cgroup_procs_fds = {13};
    facts.cgroup_where = "v2 /sys/fs/cgroup/ateam-sandbox-d1";
  } else {
    facts.cgroup_missing = "no delegated cgroup";
  }
  return facts;
}

DispatchPlan Compiled(bool root, const DispatchRequest& request) {
  ResolvedRequest r = Resolved(root, request);
  auto plan = CompileDispatchPlan(r, Facts(r));
  EXPECT_TRUE(plan) << plan.error().Render();
  return plan ? std::move(*plan) : DispatchPlan{};
}

DispatchRequest Minimal() {
  DispatchRequest request;
  request.command = {"/bin/sh", "-c", "make test"};
  return request;
}

DispatchRequest Everything() {
  DispatchRequest request = Minimal();
  request.allow = {"api.example.test=192.0.2.10:443", "git.example.test:22=192.0.2.11:22,tcp"};
  request.env_names = {"TERM", "LANG"};
  request.set_env = {"MODE=ci"};
  request.credentials = {"/home/user/token:.config/tool/token"};
  request.tty = TtyMode::kOn;
  request.memory = "1G";
  request.pids = 256;
  request.cpus = 1.5;
  request.tmpfs_size = "256M";
  return request;
}

TEST(DispatchPlanGoldenTest, UnprivilegedMinimal) {
  ExpectGolden("user_minimal", Compiled(false, Minimal()));
}

TEST(DispatchPlanGoldenTest, UnprivilegedWithRoutesTtyLimitsCredentials) {
  ExpectGolden("user_everything", Compiled(false, Everything()));
}

TEST(DispatchPlanGoldenTest, RootMinimal) {
  ExpectGolden("root_minimal", Compiled(true, Minimal()));
}

TEST(DispatchPlanGoldenTest, RootWithRoutesTtyLimitsCredentials) {
  ExpectGolden("root_everything", Compiled(true, Everything()));
}

TEST(DispatchPlanGoldenTest, RootBwrapBackend) {
  DispatchRequest request = Everything();
  request.backend = DispatchBackend::kBwrap;
  request.tty = TtyMode::kOff;
  ExpectGolden("root_bwrap", Compiled(true, request));
}

// The harvest's scripts, as git's sandboxes run them (the same in every plan).
TEST(DispatchPlanGoldenTest, HarvestScripts) {
  const DispatchPlan plan = Compiled(false, Minimal());
  std::string text;
  for (const auto& [name, run] : HarvestRuns(plan)) {
    ASSERT_GT(run->argv.size(), 2U);
    text += fmt::format("harvest {} script:\n{}\nits arguments:", name, run->argv[2]);
    for (size_t i = 3; i < run->argv.size(); ++i) text += " " + run->argv[i];
    text += "\n";
  }
  ExpectGoldenText("harvest_scripts", text);
}

// The plan is a function of its inputs: compiled twice, it is the same.
TEST(DispatchPlanGoldenTest, SameInputsSamePlan) {
  EXPECT_EQ(Render(Compiled(true, Everything())), Render(Compiled(true, Everything())));
}

}  // namespace
}  // namespace sbx::dispatch
