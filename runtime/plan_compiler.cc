// How the two privilege modes differ (bwrap 0.11.1 without setuid, which we refuse):
//
//  * kUnprivileged (caller uid != 0): a user namespace is always created, unless the
//    caller joins one with --userns. The child writes its own maps, one line each,
//    "sandbox-id caller-id 1", after writing "deny" to setgroups. With --dev the first
//    level maps the caller to 0 instead (devpts needs a mapped root while it is mounted)
//    and a nested namespace maps the sandbox id onto 0 after the pivot. The command gets
//    only the capabilities named with --cap-add.
//  * kRoot (caller uid 0): no user namespace unless asked (--unshare-user, or -try when
//    the kernel has them). The command keeps the caller's capabilities unless
//    --cap-add/--cap-drop say otherwise.
//
// Everything else (namespace flags, ops, fds, environment) is the same for both.
#include "runtime/plan_compiler.h"

#include <sched.h>

#include <algorithm>
#include <string_view>

namespace sbx::runtime {
namespace {

std::string MakeAbsolute(const std::string& path, const std::string& cwd) {
  if (path.starts_with('/') || cwd.empty()) return path;
  return cwd + (cwd.ends_with('/') ? "" : "/") + path;
}

bool WantsUserNamespace(const SandboxSpec& spec, const HostFacts& host) {
  if (spec.run_as) return true;
  if (spec.userns_fd) return false;
  if (spec.unshare_user) return true;
  if (spec.unshare_user_try && host.user_namespaces) return true;
  return !host.IsRoot();  // implied for unprivileged callers
}

uint64_t CloneFlags(const SandboxSpec& spec, const HostFacts& host, bool userns) {
  uint64_t flags = CLONE_NEWNS;
  if (userns) flags |= CLONE_NEWUSER;
  if (spec.unshare_pid && !spec.pidns_fd) flags |= CLONE_NEWPID;
  if (spec.unshare_net) flags |= CLONE_NEWNET;
  if (spec.unshare_ipc) flags |= CLONE_NEWIPC;
  if (spec.unshare_uts) flags |= CLONE_NEWUTS;
  if (spec.unshare_cgroup || (spec.unshare_cgroup_try && host.cgroup_namespaces)) {
    flags |= CLONE_NEWCGROUP;
  }
  return flags;
}

std::optional<std::string> FindEnv(const std::vector<std::string>& env, std::string_view name) {
  for (const auto& entry : env) {
    if (entry.size() > name.size() && entry.starts_with(name) && entry[name.size()] == '=') {
      return entry.substr(name.size() + 1);
    }
  }
  return std::nullopt;
}

UserNamespacePlan PlanUserNamespace(const SandboxSpec& spec, const HostFacts& host,
                                    uid_t sandbox_uid, gid_t sandbox_gid) {
  bool needs_devpts = std::any_of(spec.ops.begin(), spec.ops.end(), [](const SpecOp& op) {
    return std::holds_alternative<DevOp>(op);
  });
  UserNamespacePlan ns;
  uid_t first_uid = needs_devpts ? 0 : sandbox_uid;
  gid_t first_gid = needs_devpts ? 0 : sandbox_gid;
  ns.uid = {first_uid, host.uid};
  ns.gid = {first_gid, host.gid};
  if (first_uid != sandbox_uid || first_gid != sandbox_gid || spec.disable_userns) {
    ns.second_uid = IdMapping{sandbox_uid, first_uid};
    ns.second_gid = IdMapping{sandbox_gid, first_gid};
  }
  ns.limit_nested_userns = spec.disable_userns;
  if (spec.run_as) {
    // Written by the monitor, one line each: the sandbox ids are the run-as host ids.
    ns.uid = {sandbox_uid, spec.run_as->uid};
    ns.gid = {sandbox_gid, spec.run_as->gid};
    ns.second_uid.reset();
    ns.second_gid.reset();
    ns.written_by_parent = true;
  }
  return ns;
}

std::vector<PlanOp> NormalizeOps(const SandboxSpec& spec, const HostFacts& host) {
  std::vector<PlanOp> ops = spec.ops;
  for (auto& op : ops) {
    if (auto* bind = std::get_if<BindOp>(&op)) bind->source = MakeAbsolute(bind->source, host.cwd);
    if (auto* overlay = std::get_if<OverlayOp>(&op)) {
      for (auto& src : overlay->lower_sources) src = MakeAbsolute(src, host.cwd);
      if (!overlay->upper.empty()) overlay->upper = MakeAbsolute(overlay->upper, host.cwd);
      if (!overlay->work.empty()) overlay->work = MakeAbsolute(overlay->work, host.cwd);
    }
  }
  return ops;
}

// --userns/--userns2/--pidns: the fds as given; the ids to switch to inside a joined user
// namespace are only those the caller asked to differ from its own (bwrap compares with
// its real ids and calls setuid/setgid only then).
JoinedNamespaces PlanJoinedNamespaces(const SandboxSpec& spec, const HostFacts& host,
                                      uid_t sandbox_uid, gid_t sandbox_gid) {
  JoinedNamespaces joined;
  joined.userns_fd = spec.userns_fd;
  joined.userns2_fd = spec.userns2_fd;
  joined.pidns_fd = spec.pidns_fd;
  joined.new_pidns_below = spec.pidns_fd.has_value() && spec.unshare_pid;
  if (spec.userns_fd) {
    if (sandbox_uid != host.uid) joined.switch_uid = sandbox_uid;
    if (sandbox_gid != host.gid) joined.switch_gid = sandbox_gid;
  }
  return joined;
}

void PlanCommand(const SandboxSpec& spec, const HostFacts& host, Plan* plan) {
  if (spec.chdir) {
    plan->cwd_candidates = {*spec.chdir};
    plan->chdir_is_explicit = true;
  } else {
    if (!host.cwd.empty()) plan->cwd_candidates.push_back(host.cwd);
    if (auto home = FindEnv(spec.env, "HOME")) plan->cwd_candidates.push_back(*home);
    plan->cwd_candidates.emplace_back("/");
  }
  plan->exec_file = spec.command.front();
  plan->argv = spec.command;
  if (spec.argv0) plan->argv.front() = *spec.argv0;
  for (const auto& entry : spec.env) {
    if (!entry.starts_with("PWD=")) plan->env.push_back(entry);
  }
}

}  // namespace

base::Result<Plan> CompilePlan(const SandboxSpec& spec, const HostFacts& host) {
  if (spec.command.empty()) return base::Error::Usage();
  if (spec.unshare_cgroup && !host.cgroup_namespaces) {
    return base::Error::Message(
        "Cannot create new cgroup namespace because the kernel does not support it");
  }
  Plan plan;
  plan.mode = host.IsRoot() ? PrivilegeMode::kRoot : PrivilegeMode::kUnprivileged;
  bool userns = WantsUserNamespace(spec, host);
  plan.clone_flags = CloneFlags(spec, host, userns);
  if (spec.run_as && !host.IsRoot()) {
    return base::Error::Message("running a sandbox as another user needs a root caller");
  }
  uid_t default_uid = spec.run_as ? spec.run_as->uid : host.uid;
  gid_t default_gid = spec.run_as ? spec.run_as->gid : host.gid;
  plan.sandbox_uid = spec.uid.value_or(default_uid);
  plan.sandbox_gid = spec.gid.value_or(default_gid);
  // Written in the initial user namespace, the sysctls would be the host's own.
  if (!spec.self_limits.sysctls.empty() && !userns) {
    return base::Error::Message("the sandbox's own sysctls need a user namespace of its own");
  }
  if (userns) plan.userns = PlanUserNamespace(spec, host, plan.sandbox_uid, plan.sandbox_gid);
  plan.joined = PlanJoinedNamespaces(spec, host, plan.sandbox_uid, plan.sandbox_gid);
  for (const auto& op : spec.ops) {
    if (const auto* h = std::get_if<SetHostnameOp>(&op)) plan.hostname = h->hostname;
  }
  plan.ops = NormalizeOps(spec, host);
  plan.fresh_proc = spec.unshare_pid || spec.pidns_fd.has_value();
  plan.configure_loopback = spec.unshare_net;
  plan.assert_userns_disabled = spec.disable_userns || spec.assert_userns_disabled;

  security::CapBits initial = host.IsRoot() ? host.effective_caps : 0;
  auto resolved = security::ResolveCapabilities(initial, spec.cap_changes, host.cap_last_cap);
  if (!resolved) return resolved.error();
  plan.caps =
      security::DecideCapabilities({.caller_is_root = host.IsRoot(),
                                    // A joined user namespace also comes with a full
                                    // bounding set, which bwrap trims the same way.
                                    .new_user_namespace = userns || spec.userns_fd.has_value(),
                                    .cap_options_used = !spec.cap_changes.empty(),
                                    .resolved = *resolved,
                                    .last_cap = host.cap_last_cap});
  plan.seccomp_programs = spec.seccomp_programs;
  plan.seccomp_fd = spec.seccomp_fd;

  plan.new_session = spec.new_session;
  plan.die_with_parent = spec.die_with_parent;
  plan.launcher_outlives_parent = spec.launcher_outlives_parent;
  plan.as_pid_1 = spec.as_pid_1;
  plan.reaper =
      !spec.as_pid_1 && (spec.unshare_pid || !spec.lock_files.empty() || spec.sync_fd.has_value());
  plan.info_fd = spec.info_fd;
  plan.json_status_fd = spec.json_status_fd;
  plan.sync_fd = spec.sync_fd;
  plan.block_fd = spec.block_fd;
  plan.userns_block_fd = spec.userns_block_fd;
  plan.lock_files = spec.lock_files;
  plan.stdout_tty = host.stdout_tty;
  plan.close_inherited_fds = spec.close_inherited_fds;
  plan.self_limits = spec.self_limits;
  plan.cgroup_procs_fds = spec.cgroup_procs_fds;
  PlanCommand(spec, host, &plan);
  return plan;
}

}  // namespace sbx::runtime
