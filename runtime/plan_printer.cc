#include "runtime/plan_printer.h"

#include <sched.h>
#include <sys/resource.h>

#include <fmt/format.h>

namespace sbx::runtime {
namespace {

std::string Mode(const std::optional<mode_t>& perms, mode_t fallback) {
  return fmt::format("{:04o}", perms.value_or(fallback));
}

std::string Sizes(const std::optional<uint64_t>& size, const std::optional<uint64_t>& inodes) {
  std::string out = size ? fmt::format(" size={}", *size) : "";
  if (inodes) out += fmt::format(" nr_inodes={}", *inodes);
  return out;
}

std::string RlimitName(int resource) {
  switch (resource) {
    case RLIMIT_NPROC:
      return "nproc";
    case RLIMIT_NOFILE:
      return "nofile";
    case RLIMIT_CORE:
      return "core";
    case RLIMIT_FSIZE:
      return "fsize";
    default:
      return fmt::format("rlimit {}", resource);
  }
}

struct Describer {
  std::string operator()(const BindOp& op) const {
    std::string flags = op.read_only ? "ro" : "rw";
    if (op.allow_devices) flags += ",dev";
    if (op.skip_missing) flags += ",try";
    return fmt::format("bind {} -> {} ({})", op.source, op.dest, flags);
  }
  std::string operator()(const BindFdOp& op) const {
    return fmt::format("bind fd {} -> {} ({})", op.fd, op.dest, op.read_only ? "ro" : "rw");
  }
  std::string operator()(const RemountRoOp& op) const {
    return fmt::format("remount-ro {}", op.dest);
  }
  std::string operator()(const ProcOp& op) const { return fmt::format("proc {}", op.dest); }
  std::string operator()(const DevOp& op) const {
    return fmt::format("dev {}{}", op.dest, Sizes(op.size, op.nr_inodes));
  }
  std::string operator()(const TmpfsOp& op) const {
    return fmt::format("tmpfs {} mode={}{}", op.dest, Mode(op.perms, 0755),
                       Sizes(op.size, op.nr_inodes));
  }
  std::string operator()(const MqueueOp& op) const { return fmt::format("mqueue {}", op.dest); }
  std::string operator()(const DirOp& op) const {
    return fmt::format("dir {} mode={}", op.dest, Mode(op.perms, 0755));
  }
  std::string operator()(const FileOp& op) const {
    return fmt::format("file fd {} -> {} mode={}", op.fd, op.dest, Mode(op.perms, 0666));
  }
  std::string operator()(const BindDataOp& op) const {
    return fmt::format("bind-data fd {} -> {} ({}) mode={}", op.fd, op.dest,
                       op.read_only ? "ro" : "rw", Mode(op.perms, 0600));
  }
  std::string operator()(const SymlinkOp& op) const {
    return fmt::format("symlink {} -> {}", op.dest, op.target);
  }
  std::string operator()(const ChmodOp& op) const {
    return fmt::format("chmod {:04o} {}", op.mode, op.path);
  }
  std::string operator()(const SetHostnameOp& op) const {
    return fmt::format("hostname {}", op.hostname);
  }
  std::string operator()(const OverlayOp& op) const {
    const char* kind = op.mode == OverlayOp::Mode::kReadOnly    ? "ro-overlay"
                       : op.mode == OverlayOp::Mode::kTemporary ? "tmp-overlay"
                                                                : "overlay";
    std::string lowers = fmt::format("{}", fmt::join(op.lower_sources, ":"));
    std::string upper = op.upper.empty() ? "" : fmt::format(" upper={} work={}", op.upper, op.work);
    return fmt::format("{} {} lower={}{}", kind, op.dest, lowers, upper);
  }
};

std::string Namespaces(uint64_t flags) {
  static constexpr std::pair<uint64_t, const char*> kNames[] = {
      {CLONE_NEWUSER, "user"},    {CLONE_NEWNS, "mnt"},  {CLONE_NEWPID, "pid"},
      {CLONE_NEWNET, "net"},      {CLONE_NEWIPC, "ipc"}, {CLONE_NEWUTS, "uts"},
      {CLONE_NEWCGROUP, "cgroup"}};
  std::vector<std::string> names;
  for (const auto& [flag, name] : kNames) {
    if ((flags & flag) != 0) names.emplace_back(name);
  }
  return fmt::format("{}", fmt::join(names, " "));
}

// Nothing for a plan without --userns/--userns2/--pidns (the golden plans stay as they
// were).
template <typename Line>
void PrintJoined(const JoinedNamespaces& joined, const Line& line) {
  if (joined.userns_fd) {
    std::string ids;
    if (joined.switch_uid) ids += fmt::format(" then uid {}", *joined.switch_uid);
    if (joined.switch_gid) ids += fmt::format(" then gid {}", *joined.switch_gid);
    line(fmt::format("join user namespace: fd {} before clone{}", *joined.userns_fd, ids));
  }
  if (joined.pidns_fd) {
    line(fmt::format("join pid namespace: fd {}{}", *joined.pidns_fd,
                     joined.new_pidns_below ? ", then a new pid namespace below it" : ""));
  }
  if (joined.userns2_fd) {
    line(fmt::format("join user namespace after setup: fd {}", *joined.userns2_fd));
  }
}

}  // namespace

std::string Describe(const PlanOp& op) { return std::visit(Describer{}, op); }

std::string PrintPlan(const Plan& plan) {
  std::string out;
  auto line = [&out](const std::string& text) {
    out += text;
    out += '\n';
  };
  line(fmt::format("mode: {}", plan.mode == PrivilegeMode::kRoot ? "root" : "unprivileged"));
  line(fmt::format("namespaces: {}", Namespaces(plan.clone_flags)));
  if (plan.userns) {
    const auto& ns = *plan.userns;
    line(fmt::format("uid map: {} {} 1", ns.uid.inside, ns.uid.outside));
    line(fmt::format("gid map: {} {} 1", ns.gid.inside, ns.gid.outside));
    if (ns.second_uid) {
      line(fmt::format("nested uid map: {} {} 1", ns.second_uid->inside, ns.second_uid->outside));
      line(fmt::format("nested gid map: {} {} 1", ns.second_gid->inside, ns.second_gid->outside));
    }
  }
  PrintJoined(plan.joined, line);
  line(fmt::format("sandbox ids: {}:{}", plan.sandbox_uid, plan.sandbox_gid));
  for (size_t i = 0; i < plan.ops.size(); ++i)
    line(fmt::format("op {}: {}", i, Describe(plan.ops[i])));
  if (plan.configure_loopback) line("loopback: up");
  for (const auto& sysctl : plan.self_limits.sysctls) {
    line(fmt::format("sysctl in the sandbox's user namespace: {} = {}", sysctl.name, sysctl.value));
  }
  if (!plan.cgroup_procs_fds.empty()) {
    line(fmt::format("cgroups: the monitor moves the sandbox into {} before releasing it",
                     plan.cgroup_procs_fds.size()));
  }
  for (const auto& limit : plan.self_limits.rlimits) {
    line(fmt::format("rlimit: {} at most {}", RlimitName(limit.resource), limit.value));
  }
  for (const auto& text : security::DescribeCapPlan(plan.caps)) line(fmt::format("caps: {}", text));
  line(fmt::format("seccomp programs: {}{}", plan.seccomp_programs.size(),
                   plan.seccomp_fd ? " + one from --seccomp" : ""));
  line(fmt::format("no_new_privs: yes; new session: {}; die with parent: {}",
                   plan.new_session ? "yes" : "no", plan.die_with_parent ? "yes" : "no"));
  line(fmt::format("pid 1: {}", plan.as_pid_1 ? "the command" : plan.reaper ? "reaper" : "none"));
  line(fmt::format("cwd: {}", fmt::join(plan.cwd_candidates, " | ")));
  line(fmt::format("exec: {} argv: {}", plan.exec_file, fmt::join(plan.argv, " ")));
  line(fmt::format("env: {} variables", plan.env.size()));
  return out;
}

}  // namespace sbx::runtime
