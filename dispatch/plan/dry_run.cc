#include "dispatch/plan/dry_run.h"

#include <sched.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "contract/supervisor_contract.h"
#include "runtime/bwrap_render.h"
#include "runtime/plan_printer.h"
#include "security/seccomp.h"

namespace sbx::dispatch {
namespace {

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
  const std::string tunnel = contract::kTunnelDir;
  if (dest == tunnel || dest.starts_with(tunnel + "/")) return true;
  return std::holds_alternative<runtime::BindDataOp>(op) && dest == "/etc/hosts";
}

// The printed plan with the id maps' host side named LEASED_UID and LEASED_GID: the plan
// was compiled with the ids the agent sees on both sides, as the lease is not taken yet.
std::string ShowLeasedIds(std::string printed, const runtime::SandboxSpec::HostIds& inside) {
  const auto swap = [&printed](const std::string& from, const std::string& to) {
    for (size_t at = printed.find(from); at != std::string::npos; at = printed.find(from, at)) {
      printed.replace(at, from.size(), to);
      at += to.size();
    }
  };
  swap(fmt::format("uid map: {} {} 1\n", inside.uid, inside.uid),
       fmt::format("uid map: {} LEASED_UID 1\n", inside.uid));
  swap(fmt::format("gid map: {} {} 1\n", inside.gid, inside.gid),
       fmt::format("gid map: {} LEASED_GID 1\n", inside.gid));
  return printed;
}

// Names whose values are secrets: the presets' API key variables and whatever --env or
// --setenv names like one (*KEY*, *TOKEN*, *SECRET*, *PASSWORD*, *PASSWD*, *CREDENTIAL*,
// case-insensitive).
bool LooksSecret(std::string_view name) {
  std::string upper(name);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const char* word : {"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"}) {
    if (upper.find(word) != std::string::npos) return true;
  }
  return false;
}

// The dry run prints no secret: such a variable's value is shown as *** (its length kept
// out too), in the env lines and in the bwrap line alike.
void MaskSecretValues(std::vector<std::string>* env) {
  for (std::string& entry : *env) {
    const size_t eq = entry.find('=');
    if (eq == std::string::npos || eq + 1 == entry.size()) continue;
    if (LooksSecret(std::string_view(entry).substr(0, eq))) entry = entry.substr(0, eq + 1) + "***";
  }
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
                              const std::optional<runtime::SandboxSpec::HostIds>& run_as,
                              bool leased) {
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
  if (leased) {
    return fmt::format(
        R"(setpriv --reuid="$LEASED_UID" --regid="$LEASED_GID" --clear-groups -- {})", line);
  }
  return fmt::format("setpriv --reuid={} --regid={} --clear-groups -- {}", run_as->uid, run_as->gid,
                     line);
}

void PrintDryRun(const DryRunFacts& f) {
  const DispatchRequest& request = *f.request;
  fmt::print("dry run: nothing was created (no dispatch directory, no clone, no cgroup)\n");
  fmt::print("workspace: {} (read-write{})\n", f.result->workspace,
             request.repo ? fmt::format(", a fresh clone of {}", *request.repo) : "");
  fmt::print("out: {} (read-write)\n", f.result->out);
  if (!f.object_cache.empty()) {
    fmt::print(
        "object cache: {}; the workspace borrows its objects (objects/info/alternates), "
        "bound read-only at the same path\n",
        f.object_cache);
  }
  if (f.leased_from && f.run_as) {
    fmt::print(
        "host ids: a uid and gid leased for this dispatch alone from {} when it starts "
        "(LEASED_UID, LEASED_GID below); inside, the agent is uid {}\n",
        *f.leased_from, f.run_as->uid);
  }
  fmt::print("workspace git metadata: .git/config and hooks read-only inside, checked after\n");
  runtime::Plan agent = AgentViewPlan(*f.plan, request.command);
  MaskSecretValues(&agent.env);
  fmt::print(
      "# the agent's sandbox (the supervisor, pid 1, sets up the network and drops "
      "every capability first)\n");
  fmt::print("{}", f.leased_from && f.run_as ? ShowLeasedIds(runtime::PrintPlan(agent), *f.run_as)
                                             : runtime::PrintPlan(agent));
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
  fmt::print("bwrap: {}\n",
             RunnableBwrapLine(agent, request.bwrap_path, f.run_as, f.leased_from.has_value()));
}

}  // namespace sbx::dispatch
