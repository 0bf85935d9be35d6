// The bwrap 0.11.1 option table and the handlers that apply each option to the spec.
// Within a handler the checks run in bwrap's order, because the first failing one decides
// the message (e.g. --seccomp: "cannot be combined", then the warning, then the fd).
#include <utility>

#include "cli/bwrap_parser.h"
#include "cli/bwrap_values.h"
#include "cli/bwrap_walker.h"

namespace sbx::cli::internal {

using runtime::SandboxSpec;
using Words = std::span<const std::string>;

using W = BwrapWalker;

const BwrapWalker::Option BwrapWalker::kOptions[] = {
    {.name = "--args", .arity = 1, .handler = &W::OnArgs, .flags = kNotInArgsFile},
    {.name = "--argv0", .arity = 1, .handler = &W::OnArgv0, .flags = kSaysOneArgument},
    {.name = "--level-prefix", .handler = &W::OnLevelPrefix},
    {.name = "--unshare-all", .handler = &W::OnUnshareAll},
    {.name = "--unshare-user", .handler = &W::OnSetFlag, .flag = &SandboxSpec::unshare_user},
    {.name = "--unshare-user-try",
     .handler = &W::OnSetFlag,
     .flag = &SandboxSpec::unshare_user_try},
    {.name = "--unshare-ipc", .handler = &W::OnSetFlag, .flag = &SandboxSpec::unshare_ipc},
    {.name = "--unshare-pid", .handler = &W::OnSetFlag, .flag = &SandboxSpec::unshare_pid},
    {.name = "--unshare-net", .handler = &W::OnSetFlag, .flag = &SandboxSpec::unshare_net},
    {.name = "--unshare-uts", .handler = &W::OnSetFlag, .flag = &SandboxSpec::unshare_uts},
    {.name = "--unshare-cgroup", .handler = &W::OnSetFlag, .flag = &SandboxSpec::unshare_cgroup},
    {.name = "--unshare-cgroup-try",
     .handler = &W::OnSetFlag,
     .flag = &SandboxSpec::unshare_cgroup_try},
    {.name = "--share-net", .handler = &W::OnShareNet},
    {.name = "--chdir", .arity = 1, .handler = &W::OnChdir, .flags = kSaysOneArgument},
    {.name = "--disable-userns", .handler = &W::OnSetFlag, .flag = &SandboxSpec::disable_userns},
    {.name = "--assert-userns-disabled",
     .handler = &W::OnSetFlag,
     .flag = &SandboxSpec::assert_userns_disabled},
    {.name = "--remount-ro", .arity = 1, .handler = &W::OnDestOp, .flags = kSaysOneArgument},
    {.name = "--bind", .arity = 2, .handler = &W::OnBind},
    {.name = "--bind-try", .arity = 2, .handler = &W::OnBind, .flags = kSkipMissing},
    {.name = "--ro-bind", .arity = 2, .handler = &W::OnBind, .flags = kReadOnly},
    {.name = "--ro-bind-try", .arity = 2, .handler = &W::OnBind, .flags = kReadOnly | kSkipMissing},
    {.name = "--dev-bind", .arity = 2, .handler = &W::OnBind, .flags = kAllowDevices},
    {.name = "--dev-bind-try",
     .arity = 2,
     .handler = &W::OnBind,
     .flags = kAllowDevices | kSkipMissing},
    {.name = "--bind-fd", .arity = 2, .handler = &W::OnBindFd},
    {.name = "--ro-bind-fd", .arity = 2, .handler = &W::OnBindFd, .flags = kReadOnly},
    {.name = "--overlay-src",
     .arity = 1,
     .handler = &W::OnOverlaySrc,
     .flags = kSetuidForbidden | kNoArityCheck},
    {.name = "--overlay", .arity = 3, .handler = &W::OnOverlay, .flags = kSetuidForbidden},
    {.name = "--tmp-overlay", .arity = 1, .handler = &W::OnOverlay, .flags = kSetuidForbidden},
    {.name = "--ro-overlay", .arity = 1, .handler = &W::OnOverlay, .flags = kSetuidForbidden},
    {.name = "--proc", .arity = 1, .handler = &W::OnDestOp},
    {.name = "--exec-label", .arity = 1, .handler = &W::OnLabel},
    {.name = "--file-label", .arity = 1, .handler = &W::OnLabel},
    {.name = "--dev", .arity = 1, .handler = &W::OnDestOp},
    {.name = "--tmpfs", .arity = 1, .handler = &W::OnTmpfs},
    {.name = "--mqueue", .arity = 1, .handler = &W::OnDestOp},
    {.name = "--dir", .arity = 1, .handler = &W::OnDir},
    {.name = "--file", .arity = 2, .handler = &W::OnFileFromFd},
    {.name = "--bind-data", .arity = 2, .handler = &W::OnFileFromFd},
    {.name = "--ro-bind-data", .arity = 2, .handler = &W::OnFileFromFd, .flags = kReadOnly},
    {.name = "--symlink", .arity = 2, .handler = &W::OnSymlink},
    {.name = "--lock-file", .arity = 1, .handler = &W::OnLockFile},
    {.name = "--sync-fd", .arity = 1, .handler = &W::OnFdOption, .fd = &SandboxSpec::sync_fd},
    {.name = "--block-fd", .arity = 1, .handler = &W::OnFdOption, .fd = &SandboxSpec::block_fd},
    {.name = "--userns-block-fd",
     .arity = 1,
     .handler = &W::OnFdOption,
     .fd = &SandboxSpec::userns_block_fd},
    {.name = "--info-fd", .arity = 1, .handler = &W::OnFdOption, .fd = &SandboxSpec::info_fd},
    {.name = "--json-status-fd",
     .arity = 1,
     .handler = &W::OnFdOption,
     .fd = &SandboxSpec::json_status_fd},
    {.name = "--seccomp", .arity = 1, .handler = &W::OnSeccomp},
    {.name = "--add-seccomp-fd", .arity = 1, .handler = &W::OnAddSeccompFd},
    {.name = "--userns", .arity = 1, .handler = &W::OnFdOption, .fd = &SandboxSpec::userns_fd},
    {.name = "--userns2", .arity = 1, .handler = &W::OnFdOption, .fd = &SandboxSpec::userns2_fd},
    {.name = "--pidns", .arity = 1, .handler = &W::OnFdOption, .fd = &SandboxSpec::pidns_fd},
    {.name = "--clearenv", .handler = &W::OnClearenv},
    {.name = "--setenv", .arity = 2, .handler = &W::OnSetenv},
    {.name = "--unsetenv", .arity = 1, .handler = &W::OnUnsetenv},
    {.name = "--uid", .arity = 1, .handler = &W::OnId},
    {.name = "--gid", .arity = 1, .handler = &W::OnId},
    {.name = "--hostname", .arity = 1, .handler = &W::OnHostname},
    {.name = "--new-session", .handler = &W::OnSetFlag, .flag = &SandboxSpec::new_session},
    {.name = "--die-with-parent", .handler = &W::OnSetFlag, .flag = &SandboxSpec::die_with_parent},
    {.name = "--as-pid-1", .handler = &W::OnSetFlag, .flag = &SandboxSpec::as_pid_1},
    {.name = "--cap-add", .arity = 1, .handler = &W::OnCap},
    {.name = "--cap-drop", .arity = 1, .handler = &W::OnCap},
    {.name = "--perms", .arity = 1, .handler = &W::OnPerms},
    {.name = "--size", .arity = 1, .handler = &W::OnSize, .flags = kSetuidForbidden},
    {.name = "--chmod", .arity = 2, .handler = &W::OnChmod},
};

const BwrapWalker::Option* BwrapWalker::FindOption(std::string_view name) {
  for (const Option& option : kOptions) {
    if (option.name == name) return &option;
  }
  return nullptr;
}

Stop BwrapWalker::OnArgs(const Option& /*option*/, Words words) {
  const std::optional<int> fd = ParseBwrapFd(words[0]);
  if (!fd) return Fail("Invalid fd: " + words[0]);
  base::Result<std::string> data = ReadFdToEndAndClose(*fd, "Can't read --args data");
  if (!data) return Fail(data.error().Render());
  const std::vector<std::string> data_args = SplitNulSeparated(*data);
  total_args_ += data_args.size();
  if (total_args_ > kBwrapMaxArgs) return FailTooManyArguments();
  // The data is parsed in place by the same walker. A COMMAND cannot come from it: at the
  // first non-option word (or "--") bwrap stops reading the data and ignores the rest.
  in_args_file_ = true;
  const WalkEnd end = Walk(data_args);
  in_args_file_ = false;
  return end.stop == Stop::kEnd ? Stop::kNone : end.stop;
}

Stop BwrapWalker::OnArgv0(const Option& /*option*/, Words words) {
  if (spec_.argv0) return Fail("--argv0 used multiple times");
  spec_.argv0 = words[0];
  return Stop::kNone;
}

Stop BwrapWalker::OnLevelPrefix(const Option& /*option*/, Words /*words*/) {
  level_prefix_ = true;
  return Stop::kNone;
}

// Plain assignments, so a later --share-net undoes the net part (and only that).
Stop BwrapWalker::OnUnshareAll(const Option& /*option*/, Words /*words*/) {
  spec_.unshare_user_try = spec_.unshare_ipc = spec_.unshare_pid = spec_.unshare_uts =
      spec_.unshare_cgroup_try = spec_.unshare_net = true;
  return Stop::kNone;
}

Stop BwrapWalker::OnSetFlag(const Option& option, Words /*words*/) {
  spec_.*option.flag = true;
  return Stop::kNone;
}

Stop BwrapWalker::OnShareNet(const Option& /*option*/, Words /*words*/) {
  spec_.unshare_net = false;
  return Stop::kNone;
}

Stop BwrapWalker::OnChdir(const Option& option, Words words) {
  if (spec_.chdir) WarnOnlyLast(option.name);
  spec_.chdir = words[0];
  return Stop::kNone;
}

Stop BwrapWalker::OnDestOp(const Option& option, Words words) {
  const std::string& dest = words[0];
  if (option.name == "--proc") {
    spec_.ops.emplace_back(runtime::ProcOp{.dest = dest});
  } else if (option.name == "--dev") {
    spec_.ops.emplace_back(runtime::DevOp{.dest = dest});
  } else if (option.name == "--mqueue") {
    spec_.ops.emplace_back(runtime::MqueueOp{.dest = dest});
  } else {
    spec_.ops.emplace_back(runtime::RemountRoOp{.dest = dest});
  }
  return Stop::kNone;
}

Stop BwrapWalker::OnBind(const Option& option, Words words) {
  spec_.ops.emplace_back(runtime::BindOp{.source = words[0],
                                         .dest = words[1],
                                         .read_only = (option.flags & kReadOnly) != 0,
                                         .allow_devices = (option.flags & kAllowDevices) != 0,
                                         .skip_missing = (option.flags & kSkipMissing) != 0});
  return Stop::kNone;
}

Stop BwrapWalker::OnBindFd(const Option& option, Words words) {
  const std::optional<int> fd = ParseBwrapFd(words[0]);
  if (!fd) return Fail("Invalid fd: " + words[0]);
  spec_.ops.emplace_back(
      runtime::BindFdOp{.fd = *fd, .dest = words[1], .read_only = (option.flags & kReadOnly) != 0});
  return Stop::kNone;
}

// bwrap does not check for the argument: a trailing --overlay-src is reported by the
// "must be followed by" check once the walk ends.
Stop BwrapWalker::OnOverlaySrc(const Option& /*option*/, Words words) {
  pending_overlay_sources_.push_back(words.empty() ? std::string() : words[0]);
  return Stop::kNone;
}

Stop BwrapWalker::OnOverlay(const Option& option, Words words) {
  using Mode = runtime::OverlayOp::Mode;
  const Mode mode = option.name == "--overlay"       ? Mode::kReadWrite
                    : option.name == "--tmp-overlay" ? Mode::kTemporary
                                                     : Mode::kReadOnly;
  const size_t needed = mode == Mode::kReadOnly ? 2 : 1;
  if (pending_overlay_sources_.size() < needed) {
    return Fail(std::string(option.name) + " requires at least " + (needed == 2 ? "two" : "one") +
                " --overlay-src");
  }
  runtime::OverlayOp op;
  op.mode = mode;
  op.lower_sources = std::move(pending_overlay_sources_);
  pending_overlay_sources_.clear();
  if (mode == Mode::kReadWrite) {
    op.upper = words[0];
    op.work = words[1];
  }
  op.dest = words.back();
  spec_.ops.emplace_back(std::move(op));
  return Stop::kNone;
}

// bwrap validates the label with SELinux at parse time; like Debian's bwrap on a system
// without SELinux, every label is refused (so the "Only the last" warning never shows).
Stop BwrapWalker::OnLabel(const Option& /*option*/, Words /*words*/) {
  return Fail("labeling not supported on this system");
}

Stop BwrapWalker::OnTmpfs(const Option& /*option*/, Words words) {
  spec_.ops.emplace_back(
      runtime::TmpfsOp{.dest = words[0], .perms = pending_perms_, .size = pending_size_});
  pending_perms_.reset();
  pending_size_.reset();
  return Stop::kNone;
}

Stop BwrapWalker::OnDir(const Option& /*option*/, Words words) {
  spec_.ops.emplace_back(runtime::DirOp{.dest = words[0], .perms = pending_perms_});
  pending_perms_.reset();
  return Stop::kNone;
}

// --file, --bind-data, --ro-bind-data FD DEST.
Stop BwrapWalker::OnFileFromFd(const Option& option, Words words) {
  const std::optional<int> fd = ParseBwrapFd(words[0]);
  if (!fd) return Fail("Invalid fd: " + words[0]);
  if (option.name == "--file") {
    spec_.ops.emplace_back(runtime::FileOp{.fd = *fd, .dest = words[1], .perms = pending_perms_});
  } else {
    spec_.ops.emplace_back(runtime::BindDataOp{.fd = *fd,
                                               .dest = words[1],
                                               .read_only = (option.flags & kReadOnly) != 0,
                                               .perms = pending_perms_});
  }
  pending_perms_.reset();
  return Stop::kNone;
}

Stop BwrapWalker::OnSymlink(const Option& /*option*/, Words words) {
  spec_.ops.emplace_back(runtime::SymlinkOp{.target = words[0], .dest = words[1]});
  return Stop::kNone;
}

Stop BwrapWalker::OnLockFile(const Option& /*option*/, Words words) {
  spec_.lock_files.push_back(words[0]);
  return Stop::kNone;
}

// --sync-fd --block-fd --userns-block-fd --info-fd --json-status-fd --userns --userns2
// --pidns: bwrap warns about the repetition before it parses the new value.
Stop BwrapWalker::OnFdOption(const Option& option, Words words) {
  std::optional<int>& field = spec_.*option.fd;
  if (field) WarnOnlyLast(option.name);
  const std::optional<int> fd = ParseBwrapFd(words[0]);
  if (!fd) return Fail("Invalid fd: " + words[0]);
  field = fd;
  return Stop::kNone;
}

Stop BwrapWalker::OnSeccomp(const Option& option, Words words) {
  if (!spec_.seccomp_programs.empty()) {
    return Fail("--seccomp cannot be combined with --add-seccomp-fd");
  }
  if (spec_.seccomp_fd) WarnOnlyLast(option.name);
  const std::optional<int> fd = ParseBwrapFd(words[0]);
  if (!fd) return Fail("Invalid fd: " + words[0]);
  spec_.seccomp_fd = fd;
  return Stop::kNone;
}

// The program is read now, at its position in the walk, and its fd closed.
Stop BwrapWalker::OnAddSeccompFd(const Option& /*option*/, Words words) {
  if (spec_.seccomp_fd) return Fail("--add-seccomp-fd cannot be combined with --seccomp");
  const std::optional<int> fd = ParseBwrapFd(words[0]);
  if (!fd) return Fail("Invalid fd: " + words[0]);
  base::Result<std::string> data = ReadFdToEndAndClose(*fd, "Can't read seccomp data");
  if (!data) return Fail(data.error().Render());
  // struct sock_filter is 8 bytes.
  if (data->size() % 8 != 0) return Fail("Invalid seccomp data, must be multiple of 8");
  spec_.seccomp_programs.emplace_back(data->begin(), data->end());
  return Stop::kNone;
}

Stop BwrapWalker::OnClearenv(const Option& /*option*/, Words /*words*/) {
  spec_.env.clear();
  return Stop::kNone;
}

Stop BwrapWalker::OnSetenv(const Option& /*option*/, Words words) {
  if (!SetEnv(spec_.env, words[0], words[1])) return Fail("setenv failed");
  return Stop::kNone;
}

Stop BwrapWalker::OnUnsetenv(const Option& /*option*/, Words words) {
  if (!UnsetEnv(spec_.env, words[0])) return Fail("unsetenv failed");
  return Stop::kNone;
}

Stop BwrapWalker::OnId(const Option& option, Words words) {
  const bool is_uid = option.name == "--uid";
  if (is_uid ? spec_.uid.has_value() : spec_.gid.has_value()) WarnOnlyLast(option.name);
  const std::optional<uint32_t> id = ParseBwrapId(words[0]);
  if (!id) return Fail((is_uid ? "Invalid uid: " : "Invalid gid: ") + words[0]);
  if (is_uid) {
    spec_.uid = *id;
  } else {
    spec_.gid = *id;
  }
  return Stop::kNone;
}

// Every --hostname queues its own op (so each one runs and the last wins), and every one
// after the first warns.
Stop BwrapWalker::OnHostname(const Option& option, Words words) {
  if (hostname_seen_) WarnOnlyLast(option.name);
  hostname_seen_ = true;
  spec_.ops.emplace_back(runtime::SetHostnameOp{.hostname = words[0]});
  return Stop::kNone;
}

Stop BwrapWalker::OnCap(const Option& option, Words words) {
  base::Result<std::optional<int>> cap = ParseBwrapCap(words[0]);
  if (!cap) return Fail(cap.error().Render());
  using Kind = security::CapChange::Kind;
  spec_.cap_changes.push_back(security::CapChange{
      .kind = option.name == "--cap-add" ? Kind::kAdd : Kind::kDrop, .cap = *cap});
  return Stop::kNone;
}

Stop BwrapWalker::OnPerms(const Option& /*option*/, Words words) {
  if (pending_perms_) return Fail("--perms given twice for the same action");
  const std::optional<mode_t> perms = ParseBwrapOctal(words[0]);
  if (!perms) return Fail("--perms takes an octal argument <= 07777");
  pending_perms_ = perms;
  return Stop::kNone;
}

Stop BwrapWalker::OnSize(const Option& /*option*/, Words words) {
  if (pending_size_) return Fail("--size given twice for the same action");
  base::Result<uint64_t> size = ParseBwrapSize(words[0]);
  if (!size) return Fail(size.error().Render());
  pending_size_ = *size;
  return Stop::kNone;
}

Stop BwrapWalker::OnChmod(const Option& /*option*/, Words words) {
  const std::optional<mode_t> mode = ParseBwrapOctal(words[0]);
  if (!mode) return Fail("--chmod takes an octal argument <= 07777");
  spec_.ops.emplace_back(runtime::ChmodOp{.path = words[1], .mode = *mode});
  return Stop::kNone;
}

}  // namespace sbx::cli::internal
