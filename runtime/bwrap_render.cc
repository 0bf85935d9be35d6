#include "runtime/bwrap_render.h"

#include <sched.h>
#include <sys/capability.h>
#include <algorithm>

#include <cctype>
#include <initializer_list>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "base/c_handle.h"

namespace sbx::runtime {
namespace {

using Args = std::vector<std::string>;

// bwrap parses --perms and --chmod with strtoul(..., 8).
std::string Octal(mode_t mode) { return fmt::format("{:04o}", mode); }

void Add(Args* out, std::initializer_list<std::string_view> words) {
  for (std::string_view word : words) out->emplace_back(word);
}

void AddPerms(Args* out, const std::optional<mode_t>& perms) {
  if (perms) Add(out, {"--perms", Octal(*perms)});
}

// One visitor call per op, in plan order: bwrap queues its setup ops in command-line order
// and runs them in that order, so the queue it builds equals plan.ops.
struct OpRenderer {
  Args* out;

  void operator()(const BindOp& op) const {
    // bwrap has no read-only device bind; read_only wins if a plan ever asks for both.
    std::string option = op.read_only ? "--ro-bind" : op.allow_devices ? "--dev-bind" : "--bind";
    if (op.skip_missing) option += "-try";
    Add(out, {option, op.source, op.dest});
  }
  void operator()(const BindFdOp& op) const {
    Add(out, {op.read_only ? "--ro-bind-fd" : "--bind-fd", std::to_string(op.fd), op.dest});
  }
  void operator()(const RemountRoOp& op) const { Add(out, {"--remount-ro", op.dest}); }
  void operator()(const ProcOp& op) const { Add(out, {"--proc", op.dest}); }
  void operator()(const DevOp& op) const { Add(out, {"--dev", op.dest}); }
  void operator()(const TmpfsOp& op) const {
    AddPerms(out, op.perms);
    if (op.size) Add(out, {"--size", std::to_string(*op.size)});
    Add(out, {"--tmpfs", op.dest});
  }
  void operator()(const MqueueOp& op) const { Add(out, {"--mqueue", op.dest}); }
  void operator()(const DirOp& op) const {
    AddPerms(out, op.perms);
    Add(out, {"--dir", op.dest});
  }
  void operator()(const FileOp& op) const {
    AddPerms(out, op.perms);
    Add(out, {"--file", std::to_string(op.fd), op.dest});
  }
  void operator()(const BindDataOp& op) const {
    AddPerms(out, op.perms);
    Add(out, {op.read_only ? "--ro-bind-data" : "--bind-data", std::to_string(op.fd), op.dest});
  }
  void operator()(const SymlinkOp& op) const { Add(out, {"--symlink", op.target, op.dest}); }
  void operator()(const ChmodOp& op) const { Add(out, {"--chmod", Octal(op.mode), op.path}); }
  void operator()(const SetHostnameOp& op) const { Add(out, {"--hostname", op.hostname}); }
  void operator()(const OverlayOp& op) const {
    // The layers are queued before the overlay op that consumes them, bottom layer first.
    for (const auto& src : op.lower_sources) Add(out, {"--overlay-src", src});
    switch (op.mode) {
      case OverlayOp::Mode::kReadWrite:
        Add(out, {"--overlay", op.upper, op.work, op.dest});
        break;
      case OverlayOp::Mode::kTemporary:
        Add(out, {"--tmp-overlay", op.dest});
        break;
      case OverlayOp::Mode::kReadOnly:
        Add(out, {"--ro-overlay", op.dest});
        break;
    }
  }
};

void RenderNamespaces(const Plan& plan, Args* out) {
  struct Flag {
    uint64_t bit;
    const char* option;
  };
  // CLONE_NEWNS is always set and has no option: bwrap always makes a mount namespace.
  static constexpr Flag kFlags[] = {
      {CLONE_NEWUSER, "--unshare-user"}, {CLONE_NEWIPC, "--unshare-ipc"},
      {CLONE_NEWPID, "--unshare-pid"},   {CLONE_NEWNET, "--unshare-net"},
      {CLONE_NEWUTS, "--unshare-uts"},   {CLONE_NEWCGROUP, "--unshare-cgroup"},
  };
  // --pidns with --unshare-pid: the new pid namespace is made below the joined one by
  // the child, not by the clone, so clone_flags does not carry it.
  const uint64_t flags = plan.clone_flags | (plan.joined.new_pidns_below ? CLONE_NEWPID : 0);
  for (const Flag& flag : kFlags) {
    if ((flags & flag.bit) != 0) out->emplace_back(flag.option);
  }
  // The caller's own fds, inherited by bwrap like every fd the caller passes.
  const std::pair<const std::optional<int>*, const char*> joined[] = {
      {&plan.joined.userns_fd, "--userns"},
      {&plan.joined.userns2_fd, "--userns2"},
      {&plan.joined.pidns_fd, "--pidns"},
  };
  for (const auto& [fd, option] : joined) {
    if (fd->has_value()) Add(out, {option, std::to_string(**fd)});
  }
  if (plan.userns && plan.userns->limit_nested_userns) {
    out->emplace_back("--disable-userns");  // implies bwrap's own userns assertion
  } else if (plan.assert_userns_disabled) {
    out->emplace_back("--assert-userns-disabled");
  }
}

void RenderIds(const Plan& plan, Args* out) {
  if (plan.joined.userns_fd) {
    // In a joined user namespace the plan records exactly the ids that differ.
    if (plan.joined.switch_uid) Add(out, {"--uid", std::to_string(*plan.joined.switch_uid)});
    if (plan.joined.switch_gid) Add(out, {"--gid", std::to_string(*plan.joined.switch_gid)});
    return;
  }
  // Both first-level mappings have the caller's ids outside (plan_compiler.cc); without a
  // user namespace the sandbox runs with the caller's own ids.
  const uid_t caller_uid = plan.userns ? plan.userns->uid.outside : plan.sandbox_uid;
  const gid_t caller_gid = plan.userns ? plan.userns->gid.outside : plan.sandbox_gid;
  if (plan.sandbox_uid != caller_uid) Add(out, {"--uid", std::to_string(plan.sandbox_uid)});
  if (plan.sandbox_gid != caller_gid) Add(out, {"--gid", std::to_string(plan.sandbox_gid)});
}

void RenderCaps(const Plan& plan, Args* out) {
  const security::CapPlan& caps = plan.caps;
  if (caps.skip_capset) return;
  const security::CapBits all = security::AllCaps(caps.last_cap);
  const security::CapBits keep = caps.permitted & all;
  if (plan.mode == PrivilegeMode::kUnprivileged && keep == 0) return;
  if (keep == all) {
    // From any starting set, adding ALL gives every capability up to cap_last_cap.
    Add(out, {"--cap-add", "ALL"});
    return;
  }
  Add(out, {"--cap-drop", "ALL"});
  for (int cap = 0; cap <= caps.last_cap && cap < 64; ++cap) {
    if ((keep & (security::CapBits{1} << cap)) != 0) Add(out, {"--cap-add", BwrapCapName(cap)});
  }
}

void RenderSeccomp(const Plan& plan, const BwrapFdNumbers& fds, Args* out) {
  for (size_t i = 0; i < plan.seccomp_programs.size(); ++i) {
    std::string fd = i < fds.seccomp_programs.size() ? std::to_string(fds.seccomp_programs[i])
                                                     : fmt::format("<seccomp-program-{}>", i);
    Add(out, {"--add-seccomp-fd", fd});
  }
  if (plan.seccomp_fd) Add(out, {"--seccomp", std::to_string(*plan.seccomp_fd)});
}

void RenderProcess(const Plan& plan, Args* out) {
  if (plan.new_session) out->emplace_back("--new-session");
  if (plan.die_with_parent) out->emplace_back("--die-with-parent");
  if (plan.as_pid_1) out->emplace_back("--as-pid-1");
  struct FdOption {
    const std::optional<int>* fd;
    const char* option;
  };
  const FdOption fd_options[] = {
      {&plan.info_fd, "--info-fd"},
      {&plan.json_status_fd, "--json-status-fd"},
      {&plan.sync_fd, "--sync-fd"},
      {&plan.block_fd, "--block-fd"},
      {&plan.userns_block_fd, "--userns-block-fd"},
  };
  for (const FdOption& entry : fd_options) {
    if (entry.fd->has_value()) Add(out, {entry.option, std::to_string(**entry.fd)});
  }
  for (const auto& path : plan.lock_files) Add(out, {"--lock-file", path});
}

void RenderCommandSetup(const Plan& plan, Args* out) {
  if (plan.chdir_is_explicit && !plan.cwd_candidates.empty()) {
    Add(out, {"--chdir", plan.cwd_candidates.front()});
  }
  out->emplace_back("--clearenv");
  for (const auto& entry : plan.env) {
    const size_t eq = entry.find('=');
    // setenv() refuses an empty name; the native child could not express it either.
    if (eq == std::string::npos || eq == 0) continue;
    Add(out, {"--setenv", std::string_view(entry).substr(0, eq),
              std::string_view(entry).substr(eq + 1)});
  }
  if (!plan.argv.empty() && plan.argv.front() != plan.exec_file) {
    Add(out, {"--argv0", plan.argv.front()});
  }
}

bool IsShellSafe(char c) {
  if (std::isalnum(static_cast<unsigned char>(c)) != 0) return true;
  return std::string_view("_@%+:,./-").find(c) != std::string_view::npos;
}

}  // namespace

std::vector<std::string> RenderBwrapOptions(const Plan& plan, const BwrapFdNumbers& fds) {
  Args out;
  RenderNamespaces(plan, &out);
  RenderIds(plan, &out);
  // Every --hostname sets it again and only the last one shows; rendering only that one
  // keeps real bwrap from repeating the "Only the last --hostname" warning we printed.
  auto is_hostname = [](const PlanOp& op) { return std::holds_alternative<SetHostnameOp>(op); };
  auto last_hostname = std::find_if(plan.ops.rbegin(), plan.ops.rend(), is_hostname);
  for (auto it = plan.ops.begin(); it != plan.ops.end(); ++it) {
    if (is_hostname(*it) && it != last_hostname.base() - 1) continue;
    std::visit(OpRenderer{&out}, *it);
  }
  RenderCaps(plan, &out);
  RenderSeccomp(plan, fds, &out);
  RenderProcess(plan, &out);
  RenderCommandSetup(plan, &out);
  return out;
}

std::vector<std::string> RenderBwrapArgs(const Plan& plan, const BwrapFdNumbers& fds) {
  Args out = RenderBwrapOptions(plan, fds);
  // "--" so a command whose name starts with '-' is not taken for an option.
  out.emplace_back("--");
  out.push_back(plan.exec_file);
  if (!plan.argv.empty()) out.insert(out.end(), plan.argv.begin() + 1, plan.argv.end());
  return out;
}

std::string RenderBwrapCommandLine(const Plan& plan, std::string_view bwrap_path,
                                   const BwrapFdNumbers& fds) {
  std::string line = ShellQuote(bwrap_path);
  for (const auto& word : RenderBwrapArgs(plan, fds)) {
    line += ' ';
    line += ShellQuote(word);
  }
  return line;
}

std::string ShellQuote(std::string_view word) {
  bool safe = !word.empty();
  for (char c : word) safe = safe && IsShellSafe(c);
  if (safe) return std::string(word);
  std::string quoted = "'";
  for (char c : word) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  quoted += '\'';
  return quoted;
}

std::string BwrapCapName(int cap) {
  // cap_to_name allocates; the renderer runs in the parent only.
  base::CHandle<char, cap_free> name(cap_to_name(cap));
  if (!name) return std::to_string(cap);
  std::string upper(name.get());
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return upper;
}

}  // namespace sbx::runtime
