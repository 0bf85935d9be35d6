#include "dispatch/plan/dry_run.h"

#include <sched.h>

#include <algorithm>
#include <cstdio>

#include <fmt/format.h>

#include "runtime/bwrap_render.h"
#include "runtime/plan_printer.h"
#include "security/seccomp.h"

namespace sbx::dispatch {
namespace {

constexpr std::string_view kTunnelDir = "/run/ateam-tunnel";

// The mount's destination, for the op kinds that have one.
std::string OpDest(const runtime::PlanOp& op) {
  return std::visit(
      [](const auto& o) -> std::string {
        if constexpr (requires { o.dest; }) {
          return o.dest;
        } else {
          return {};
        }
      },
      op);
}

// The supervisor's own places: its binary, the route sockets (unmounted before the agent
// starts) and the generated /etc/hosts, which comes from an fd of `run`.
bool SupervisorOnly(const runtime::PlanOp& op) {
  std::string dest = OpDest(op);
  if (dest == kTunnelDir || dest.starts_with(std::string(kTunnelDir) + "/")) return true;
  return std::holds_alternative<runtime::BindDataOp>(op) && dest == "/etc/hosts";
}

}  // namespace

runtime::Plan AgentViewPlan(const runtime::Plan& plan, const std::vector<std::string>& command) {
  runtime::Plan agent = plan;
  std::erase_if(agent.ops, SupervisorOnly);
  // The supervisor makes the network namespace (loopback and the route addresses) and
  // drops every capability before the agent runs.
  agent.clone_flags |= CLONE_NEWNET;
  agent.configure_loopback = true;
  agent.caps.bounding = security::CapBits{0};
  agent.caps.skip_capset = false;
  agent.caps.permitted = agent.caps.effective = agent.caps.inheritable = 0;
  agent.caps.ambient = 0;
  agent.seccomp_programs.clear();
  // Under the supervisor the agent is pid 2; bwrap alone puts its own reaper at pid 1.
  agent.as_pid_1 = false;
  agent.reaper = true;
  if (!command.empty()) {
    agent.exec_file = command.front();
    agent.argv = command;
  }
  return agent;
}

std::string RunnableBwrapLine(const runtime::Plan& agent_plan, const std::string& bwrap_path,
                              const std::optional<runtime::SandboxSpec::HostIds>& run_as) {
  // The generated files (/etc/resolv.conf, the credentials' copies, the agent's state) come
  // from fds of `run` that a shell running this line does not have: left out, as /etc/hosts
  // is.
  runtime::Plan runnable = agent_plan;
  std::erase_if(runnable.ops, [](const runtime::PlanOp& op) {
    return std::holds_alternative<runtime::BindDataOp>(op) ||
           std::holds_alternative<runtime::FileOp>(op);
  });
  std::string line = runtime::RenderBwrapCommandLine(runnable, bwrap_path);
  if (!run_as) return line;
  // bwrap cannot hand the sandbox to another host uid: root runs it as the sandbox's ids,
  // as the bwrap backend does.
  return fmt::format("setpriv --reuid={} --regid={} --clear-groups -- {}", run_as->uid, run_as->gid,
                     line);
}

void PrintDryRun(const DryRunFacts& f) {
  const DispatchRequest& request = *f.request;
  fmt::print("dry run: nothing was created (no dispatch directory, no clone, no cgroup)\n");
  fmt::print("workspace: {} (read-write{})\n", f.result->workspace,
             request.repo ? fmt::format(", a fresh clone of {}", *request.repo) : "");
  fmt::print("out: {} (read-write)\n", f.result->out);
  fmt::print("workspace git metadata: .git/config and hooks read-only inside, checked after\n");
  const runtime::Plan agent = AgentViewPlan(*f.plan, request.command);
  fmt::print(
      "# the agent's sandbox (the supervisor, pid 1, sets up the network and drops "
      "every capability first)\n");
  fmt::print("{}", runtime::PrintPlan(agent));
  for (const std::string& entry : agent.env) fmt::print("env: {}\n", entry);
  for (const DispatchRoute& route : f.result->routes) {
    fmt::print("route: {}:{} {} at {} -> {}\n", route.host, route.port, route.kind,
               route.sandbox_address, route.upstream);
  }
  // The groups were checked when the policy was compiled.
  auto seccomp_lines = security::DescribeSeccompPolicy({.relaxed_groups = f.seccomp_groups});
  if (seccomp_lines) {
    for (const std::string& line : *seccomp_lines) fmt::print("{}\n", line);
  }
  for (const std::string& line : security::DescribeLandlock(*f.landlock)) {
    fmt::print("{}\n", line);
  }
  for (const auto& line : f.limits->enforced) fmt::print("limit: {}\n", line);
  for (const auto& line : f.limits->not_enforced) fmt::print("limit not enforced: {}\n", line);
  for (const auto& [limit, mechanism] : f.limits->by) {
    fmt::print("limit {}: {}\n", limit, mechanism);
  }
  fmt::print(
      "# the same sandbox with bwrap alone: no tunnel (the routes are unreachable), no seccomp "
      "filter, no Landlock{}\n",
      f.workspace_exists ? "" : "; the workspace and out directories must exist first");
  fmt::print("bwrap: {}\n", RunnableBwrapLine(agent, request.bwrap_path, f.run_as));
}

}  // namespace sbx::dispatch
