#include "dispatch/plan/layout.h"

#include "dispatch/plan/broker_setup.h"

#include <sys/stat.h>
#include <unistd.h>

#include <climits>

#include <fmt/format.h>

#include "dispatch/request/checks.h"

namespace sbx::dispatch {
namespace {

constexpr int kCapSetpcap = 8;          // drop the bounding set before the agent starts
constexpr int kCapNetBindService = 10;  // listen on 443 for the agent
constexpr int kCapNetAdmin = 12;        // bring lo up
constexpr int kCapSysAdmin = 21;        // unshare(CLONE_NEWNET)

// The host's system runtime, read-only. Merged-/usr hosts have /bin, /lib... as symlinks
// into /usr: the sandbox gets the same symlinks.
void AddSystemRuntime(runtime::SandboxSpec& spec) {
  spec.ops.emplace_back(runtime::BindOp{.source = "/usr", .dest = "/usr", .read_only = true});
  for (const char* dir : {"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}) {
    char target[PATH_MAX];
    ssize_t n = ::readlink(dir, target, sizeof(target) - 1);
    if (n > 0) {
      spec.ops.emplace_back(
          runtime::SymlinkOp{.target = std::string(target, static_cast<size_t>(n)), .dest = dir});
    } else {
      spec.ops.emplace_back(
          runtime::BindOp{.source = dir, .dest = dir, .read_only = true, .skip_missing = true});
    }
  }
  spec.ops.emplace_back(runtime::BindOp{.source = "/etc", .dest = "/etc", .read_only = true});
}

std::optional<std::string> HostValue(const std::vector<std::string>& env, const std::string& name) {
  for (const auto& entry : env) {
    if (entry.size() > name.size() && entry.compare(0, name.size(), name) == 0 &&
        entry[name.size()] == '=') {
      return entry;
    }
  }
  return std::nullopt;
}

// Sets `assignment` (NAME=VALUE, `eq` the index of its '=') in `env`, in place of any
// entry of the same name: each name is in the environment once.
void PutVariable(std::vector<std::string>& env, const std::string& assignment, size_t eq) {
  const std::string_view prefix(assignment.data(), eq + 1);
  std::erase_if(env, [&](const std::string& e) { return e.starts_with(prefix); });
  env.push_back(assignment);
}

}  // namespace

base::Result<std::vector<std::string>> BuildSandboxEnvironment(const DispatchRequest& request,
                                                               const DispatchHostPaths& paths) {
  const AgentProfile profile = ProfileFor(request.agent);
  // An agent installed outside /usr (npm with a prefix) is found first, by its own name.
  std::string path = "/usr/local/bin:/usr/bin:/bin";
  if (!paths.agent_bin_dir.empty()) path = paths.agent_bin_dir + ":" + path;
  // USER and LOGNAME name the uid the agent runs as, as the sandbox's /etc/passwd (the
  // host's) does, so that they agree with `id -un`.
  std::vector<std::string> env = {fmt::format("HOME={}", kSandboxHome),
                                  "PATH=" + path,
                                  "LANG=C.UTF-8",
                                  "USER=" + paths.sandbox_user,
                                  "LOGNAME=" + paths.sandbox_user,
                                  "ATEAM_OUT=" + paths.out,
                                  "ATEAM_WORKSPACE=" + paths.workspace};
  // Commits need an identity and .git/config is read-only inside: it comes from here.
  for (const char* who : {"AUTHOR", "COMMITTER"}) {
    env.push_back(fmt::format("GIT_{}_NAME={}", who, kAgentGitName));
    env.push_back(fmt::format("GIT_{}_EMAIL={}", who, kAgentGitEmail));
  }
  // The terminal's type and colour support and the caller's time zone, when set.
  std::vector<std::string> names = {"TERM", "COLORTERM", "TZ"};
  names.insert(names.end(), profile.env.begin(), profile.env.end());
  names.insert(names.end(), request.env_names.begin(), request.env_names.end());
  if (auto brokered = ApplyBrokerEnvironment(request, request.agent, names, env); !brokered) {
    return brokered.error();
  }
  // A host value passed on by name replaces whatever came before it (LANG's default, the
  // same name listed twice).
  for (const auto& name : names) {
    if (auto entry = HostValue(paths.host_env, name)) PutVariable(env, *entry, name.size());
  }
  // The preset keeps the agent from traffic that has no route out (update checks,
  // telemetry, error reports) unless --agent-telemetry allows the telemetry hosts.
  if (!request.agent_telemetry) {
    env.insert(env.end(), profile.quiet_env.begin(), profile.quiet_env.end());
  }
  for (const auto& assignment : request.set_env) {
    auto eq = assignment.find('=');
    if (eq == 0 || eq == std::string::npos) {
      return base::Error::Message(fmt::format("--setenv takes NAME=VALUE, not '{}'", assignment));
    }
    PutVariable(env, assignment, eq);
  }
  return env;
}

namespace {

void AddHome(runtime::SandboxSpec& spec, const DispatchHostPaths& paths,
             const AgentProfile& profile) {
  spec.ops.emplace_back(runtime::TmpfsOp{.dest = kSandboxHome, .perms = 0700});
  for (const auto& dir : profile.state_dirs) {
    spec.ops.emplace_back(
        runtime::DirOp{.dest = fmt::format("{}/{}", kSandboxHome, dir), .perms = 0700});
  }
  // The preset's state, the agent's to rewrite (dispatch/plan/agent_state.h).
  for (const HomeFd& file : paths.agent_state) {
    spec.ops.emplace_back(runtime::FileOp{
        .fd = file.fd, .dest = fmt::format("{}/{}", kSandboxHome, file.dest), .perms = 0600});
  }
  // CheckRequestPaths made sure each DEST stays inside the home. A copy, not the host's
  // file: the sandbox's uid owns it (mode 0400) whoever owns the original, and it is
  // read-only.
  for (const HomeFd& file : paths.credentials) {
    spec.ops.emplace_back(runtime::BindDataOp{.fd = file.fd,
                                              .dest = fmt::format("{}/{}", kSandboxHome, file.dest),
                                              .read_only = true,
                                              .perms = 0400});
  }
}

void AddTunnel(runtime::SandboxSpec& spec, const DispatchHostPaths& paths) {
  spec.ops.emplace_back(runtime::TmpfsOp{.dest = kTunnelDir, .perms = 0755});
  spec.ops.emplace_back(runtime::BindOp{.source = paths.supervisor_binary,
                                        .dest = contract::SupervisorBinaryInside(),
                                        .read_only = true});
  for (size_t i = 0; i < paths.route_sockets.size(); ++i) {
    spec.ops.emplace_back(runtime::BindOp{.source = paths.route_sockets[i],
                                          .dest = contract::RouteSocketInside(i),
                                          .read_only = true});
  }
  if (!paths.report_socket.empty()) {
    spec.ops.emplace_back(runtime::BindOp{
        .source = paths.report_socket, .dest = contract::ReportSocketInside(), .read_only = true});
  }
  if (!paths.tty_socket.empty()) {
    spec.ops.emplace_back(runtime::BindOp{
        .source = paths.tty_socket, .dest = contract::TtySocketInside(), .read_only = true});
  }
  spec.ops.emplace_back(runtime::BindDataOp{
      .fd = paths.hosts_fd, .dest = "/etc/hosts", .read_only = true, .perms = 0644});
  // No nameserver of the host's: none is reachable from the sandbox's network.
  if (paths.resolv_conf_fd >= 0) {
    spec.ops.emplace_back(runtime::BindDataOp{
        .fd = paths.resolv_conf_fd, .dest = "/etc/resolv.conf", .read_only = true, .perms = 0644});
  }
}

std::vector<std::string> SupervisorCommand(const DispatchRequest& request,
                                           const DispatchHostPaths& paths) {
  contract::SupervisorArgs args = paths.supervisor_args;
  for (size_t i = 0; i < paths.route_listen.size(); ++i) {
    args.routes.push_back({paths.route_listen[i], contract::RouteSocketInside(i)});
  }
  if (!paths.report_socket.empty()) args.report = contract::ReportSocketInside();
  if (!paths.tty_socket.empty()) {
    args.tty = contract::TtySocketInside();
    if (!paths.tty_size.empty()) args.tty_size = paths.tty_size;
  }
  args.command = request.command;
  return contract::SupervisorCommand(args);
}

}  // namespace

void AddReadOnlySystem(runtime::SandboxSpec& spec) { AddSystemRuntime(spec); }

base::Result<runtime::SandboxSpec> BuildDispatchSpec(const DispatchRequest& request,
                                                     const DispatchHostPaths& paths) {
  if (request.command.empty()) return base::Error::Message("no command given after --");
  if (request.credentials.size() != paths.credentials.size()) {
    return base::Error::Message("--credentials: no copy of the file was made");
  }
  AgentProfile profile = ProfileFor(request.agent);
  runtime::SandboxSpec spec;
  spec.unshare_user = spec.unshare_ipc = spec.unshare_pid = spec.unshare_uts = true;
  spec.unshare_cgroup_try = true;
  AddSystemRuntime(spec);
  spec.ops.emplace_back(runtime::ProcOp{.dest = "/proc"});
  spec.ops.emplace_back(runtime::DevOp{.dest = "/dev"});
  spec.ops.emplace_back(runtime::TmpfsOp{.dest = kShmDir, .perms = 01777});
  spec.ops.emplace_back(runtime::TmpfsOp{.dest = "/tmp", .perms = 01777});
  AddHome(spec, paths, profile);
  AddTunnel(spec, paths);
  for (const auto& path : request.ro_paths)
    spec.ops.emplace_back(runtime::BindOp{.source = path, .dest = path, .read_only = true});
  for (const auto& path : request.rw_paths)
    spec.ops.emplace_back(runtime::BindOp{.source = path, .dest = path});
  for (const auto& path : paths.agent_binds)
    spec.ops.emplace_back(runtime::BindOp{.source = path, .dest = path, .read_only = true});
  spec.ops.emplace_back(runtime::BindOp{.source = paths.workspace, .dest = paths.workspace});
  if (paths.out != paths.workspace) {
    spec.ops.emplace_back(runtime::BindOp{.source = paths.out, .dest = paths.out});
  }
  spec.ops.emplace_back(runtime::SetHostnameOp{.hostname = "ateam-sandbox"});
  spec.chdir = paths.workspace;
  spec.env = paths.env;
  // What the supervisor needs for the network namespace and its listeners; it drops every
  // capability, the bounding set included, before the agent starts.
  spec.cap_changes = {{security::CapChange::Kind::kDrop, std::nullopt},
                      {security::CapChange::Kind::kAdd, kCapSysAdmin},
                      {security::CapChange::Kind::kAdd, kCapNetAdmin},
                      {security::CapChange::Kind::kAdd, kCapNetBindService},
                      {security::CapChange::Kind::kAdd, kCapSetpcap}};
  spec.seccomp_programs.push_back(paths.seccomp_program);
  spec.new_session = spec.die_with_parent = spec.as_pid_1 = true;
  // `run` itself outlives its caller (its own --die-with-parent is a stop signal instead).
  spec.launcher_outlives_parent = true;
  spec.close_inherited_fds = true;
  spec.command = SupervisorCommand(request, paths);
  return spec;
}

AgentProfile ProfileFor(AgentPreset preset) {
  switch (preset) {
    case AgentPreset::kClaude:
      // platform.claude.com: the sign-in host, whose /v1/oauth/hello claude checks before
      // its first screen and where an OAuth login's token is refreshed.
      return {.binary = "claude",
              .state_dirs = {".claude"},
              .credentials_dest = ".claude/.credentials.json",
              .default_endpoint = "api.anthropic.com",
              .extra_endpoints = {"platform.claude.com"},
              .telemetry_endpoints = {"http-intake.logs.us5.datadoghq.com"},
              .quiet_env = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1",
                            "DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1"},
              .env = {"ANTHROPIC_API_KEY", "NODE_EXTRA_CA_CERTS"}};
    case AgentPreset::kOpencode:
      return {.binary = "opencode",
              .state_dirs = {".local/share/opencode", ".config/opencode"},
              .credentials_dest = ".local/share/opencode/auth.json",
              .default_endpoint = "api.openai.com",
              .extra_endpoints = {},
              .telemetry_endpoints = {},
              .quiet_env = {"OPENCODE_DISABLE_AUTOUPDATE=1"},
              .env = {"OPENAI_API_KEY", "NODE_EXTRA_CA_CERTS"}};
    case AgentPreset::kNone:
      break;
  }
  return {};
}

}  // namespace sbx::dispatch
