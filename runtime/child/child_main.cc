#include "runtime/child/child_main.h"

#include <fcntl.h>
#include <linux/limits.h>
#include <poll.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#include "base/syscalls.h"
#include "runtime/child/child_steps.h"
#include "runtime/child/mount_api.h"
#include "runtime/child/netns_helper.h"
#include "security/capabilities.h"

namespace sbx::runtime::child {
namespace {

// Blocks until the parent closes its end of the go pipe (after it wrote maps or the
// --info-fd document). Any bytes are ignored; only EOF matters.
int WaitForParent(int go_fd) {
  char byte;
  for (;;) {
    ssize_t n = ::read(go_fd, &byte, 1);
    if (n == 0) break;
    if (n < 0 && errno != EINTR) return errno;
  }
  ::close(go_fd);
  return 0;
}

// PR_SET_PDEATHSIG alone loses the race where the monitor dies between clone and prctl;
// the monitor's pidfd turns readable once it has exited, so check it after arming.
int ArmDeathSignal(int parent_pidfd, bool close) {
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) return errno;
  pollfd pfd{parent_pidfd, POLLIN, 0};
  if (::poll(&pfd, 1, 0) > 0) ::_exit(1);
  if (close) ::close(parent_pidfd);
  return 0;
}

// Mounts the setup tmpfs on /tmp of this (private) mount namespace and prepares
// /tmp/newroot, a mount point of its own, as the future root. Files the sandbox must
// not see (bind-data sources) live in /tmp beside it.
StepResult PrepareSetupRoot(SetupContext* ctx) {
  int setup = -1;
  int err = NewMount("tmpfs", nullptr, 0, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, &setup);
  if (err == 0)
    err = ::move_mount(setup, "", AT_FDCWD, "/tmp", MOVE_MOUNT_F_EMPTY_PATH) == 0 ? 0 : errno;
  if (err != 0) {
    if (setup >= 0) ::close(setup);
    return {err, Stage::kMount};
  }
  if (::mkdirat(setup, "newroot", 0755) != 0) err = errno;
  int newroot_tree = -1;
  if (err == 0) err = CloneTree(setup, "newroot", &newroot_tree);
  if (err == 0) err = AttachAt(newroot_tree, setup, "newroot");
  if (newroot_tree >= 0) ::close(newroot_tree);
  if (err != 0) {
    ::close(setup);
    return {err, Stage::kMakeDir};  // "Creating newroot failed"
  }
  ctx->setup_fd = setup;
  ctx->root_fd = ::openat(setup, "newroot", O_PATH | O_DIRECTORY | O_CLOEXEC);
  return {ctx->root_fd < 0 ? errno : 0, Stage::kMakeDir};
}

// Enters the new root: pivot_root(".", ".") stacks the old root on top of the new one,
// which is then made private (so the unmount cannot propagate anywhere) and detached.
// The setup tmpfs goes with it and is unreachable from then on.
StepResult PivotIntoNewRoot(const SetupContext& ctx) {
  if (::fchdir(ctx.root_fd) != 0) return {errno, Stage::kNone};
  if (base::PivotRoot(".", ".") != 0) return {errno, Stage::kNone};
  if (::mount(nullptr, ".", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    return {errno, Stage::kNone};
  }
  if (::umount2(".", MNT_DETACH) != 0) return {errno, Stage::kMount};
  if (::chdir("/") != 0) return {errno, Stage::kNone};
  ::close(ctx.root_fd);
  ::close(ctx.setup_fd);
  return {};
}

// True when `op` mounts something on the root itself ("--bind / /", "--tmpfs /").
bool MountsOnRoot(const PlanOp& op) {
  const std::string* dest = std::visit(
      [](const auto& o) -> const std::string* {
        if constexpr (requires { o.dest; }) {
          return &o.dest;
        } else {
          return nullptr;
        }
      },
      op);
  return dest != nullptr && dest->find_first_not_of('/') == std::string::npos;
}

// A directory fd names one mount; a mount stacked on top of it later is only reached by
// a fresh lookup from the parent, so the root fd is re-opened after such an op.
int ReopenRoot(SetupContext* ctx) {
  int fd = ::openat(ctx->setup_fd, "newroot", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return errno;
  ::close(ctx->root_fd);
  ctx->root_fd = fd;
  return 0;
}

void BuildFilesystem(const ChildLaunch& launch) {
  const Plan& plan = *launch.plan;
  SetupContext ctx;
  ctx.plan = &plan;
  ctx.sources = launch.sources;
  ctx.failure_text = launch.failure_text;
  StepResult r = OpenSources(ctx);
  if (r.failed()) Fail(launch, r.detail, {r.err, Stage::kOpenSource});
  if (plan.userns && plan.userns->written_by_parent) {
    // Host sources were opened as the caller (root); from here on files are created as
    // the sandbox's own ids, which are the only ones mapped in its user namespace.
    Check(launch, Phase::kSwitchIds, SwitchToSandboxIds(plan));
    // A change of credentials clears the parent-death signal: arm it again.
    if (plan.die_with_parent) {
      Check(launch, Phase::kDeathSignal, ArmDeathSignal(launch.parent_pidfd, /*close=*/true));
    }
  }
  // Receive mount events from the host, never send any back.
  Check(launch, Phase::kMakeRootSlave,
        ::mount(nullptr, "/", nullptr, MS_REC | MS_SLAVE, nullptr) == 0 ? 0 : errno);
  Check(launch, Phase::kSetupRoot, PrepareSetupRoot(&ctx));
  for (size_t i = 0; i < plan.ops.size(); ++i) {
    r = ExecuteOp(ctx, i);
    if (!r.failed() && MountsOnRoot(plan.ops[i])) r = {ReopenRoot(&ctx), Stage::kMount};
    if (r.failed()) Fail(launch, static_cast<uint32_t>(i), r);
  }
  Check(launch, Phase::kPivotRoot, PivotIntoNewRoot(ctx));
}

// After the pivot: the network namespace from the helper, then the user namespaces that
// end this process's capabilities over everything set up so far.
void EnterLateNamespaces(const ChildLaunch& launch, int proc_fd) {
  const Plan& plan = *launch.plan;
  if (launch.netns_channel >= 0) {
    // The helper made the namespace (and lo) while the mounts were built. Joined while
    // this process still has every capability in its user namespace, before a nested one.
    Phase phase = Phase::kCreateNetns;
    StepResult r = JoinHelperNetns(launch.netns_channel, &phase);
    if (r.failed()) Fail(launch, static_cast<uint32_t>(phase), r);
  }
  if (plan.joined.userns2_fd) {
    // setns() gives full capabilities in --userns2; bwrap does not trim the bounding set
    // again here, the capability phase sets the rest.
    Check(launch, Phase::kJoinUserns2,
          ::setns(*plan.joined.userns2_fd, CLONE_NEWUSER) == 0 ? 0 : errno);
  }
  if (plan.userns && plan.userns->second_uid) {
    Check(launch, Phase::kSecondUserns, EnterSecondUserNamespace(plan, proc_fd));
  }
  if (plan.assert_userns_disabled) {
    // Must fail: --disable-userns limited the namespaces, or --assert-userns-disabled
    // says the caller did.
    Check(launch, Phase::kAssertUsernsDisabled, ::unshare(CLONE_NEWUSER) == 0 ? EEXIST : 0);
  }
}

}  // namespace

// After clone nothing can catch: if a library call (libnl, libcap) threw, terminate()
// would abort the child, which the monitor reports as the child's death. That is the
// intended outcome, so noexcept stays.
// NOLINTNEXTLINE(bugprone-exception-escape)
void ChildMain(const ChildLaunch& launch) noexcept {
  const Plan& plan = *launch.plan;
  // A monitor that waits for signals with a signalfd has them blocked; the sandbox
  // starts with none blocked.
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  // Host /proc stays reachable through this fd after the pivot (id maps of the nested
  // user namespace, max_user_namespaces, the helper's namespace).
  int proc_fd = ::open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
  pid_t netns_helper = -1;
  if (launch.netns_channel >= 0) {
    // First, so that the namespace is made while everything below runs; it never goes
    // together with the steps that wait for the monitor or change this process's pid
    // (NetnsFromHelper).
    netns_helper =
        StartNetnsHelper(launch.netns_helper_end, proc_fd, (plan.clone_flags & CLONE_NEWPID) != 0);
    Check(launch, Phase::kCreateNetns, netns_helper < 0 ? errno : 0);
    ::close(launch.netns_helper_end);
  }
  // Before anything else, as bwrap: from here on this is a different process (the one in
  // the joined pid namespace), whose pid the monitor waits for.
  if (plan.joined.pidns_fd) {
    Check(launch, Phase::kJoinPidns, JoinPidNamespace(plan.joined, launch.pid_socket));
  }
  // The monitor writes these; the sandbox must not inherit them.
  if (plan.info_fd) ::close(*plan.info_fd);
  if (plan.json_status_fd) ::close(*plan.json_status_fd);
  if (launch.go_fd >= 0) Check(launch, Phase::kWaitForParent, WaitForParent(launch.go_fd));
  if (plan.joined.userns_fd) {
    // The monitor joined --userns before clone, which gave it a full bounding set: trim it
    // while CAP_SETPCAP is still there, then take the requested ids in that namespace.
    // Both before the death signal is armed, since a change of ids clears it.
    Check(launch, Phase::kCapabilities, security::ApplyCapPlanBounding(plan.caps));
    Check(launch, Phase::kSwitchJoinedIds, SwitchToJoinedIds(plan.joined));
  }
  if (plan.die_with_parent) {
    // Kept open when the ids change later: that clears the signal, which is armed again.
    bool ids_change = plan.userns && plan.userns->written_by_parent;
    Check(launch, Phase::kDeathSignal, ArmDeathSignal(launch.parent_pidfd, !ids_change));
  }
  // With --userns-block-fd an outside tool (newuidmap) writes the maps while the monitor
  // waits; bwrap writes none itself then.
  if (plan.userns && !plan.userns->written_by_parent && !plan.userns_block_fd) {
    Check(launch, Phase::kUidMap,
          WriteIdMaps(proc_fd, plan.userns->uid, plan.userns->gid,
                      /*deny_setgroups=*/true));
  }
  // A new user namespace starts with a full bounding set. A nested one, entered below,
  // starts with a full set again and is trimmed there: trimming this one too would only
  // cost a system call per capability.
  if (!(plan.userns && plan.userns->second_uid)) {
    Check(launch, Phase::kCapabilities, security::ApplyCapPlanBounding(plan.caps));
  }
  // Without a helper the clone made the network namespace: lo is ours to bring up.
  if (plan.configure_loopback && launch.netns_channel < 0) {
    Check(launch, Phase::kLoopback, ConfigureLoopback());
  }
  ::umask(0);
  BuildFilesystem(launch);
  EnterLateNamespaces(launch, proc_fd);
  // In the user namespace the command runs in, while this process still holds
  // CAP_SYS_RESOURCE there.
  if (!plan.self_limits.empty()) {
    Check(launch, Phase::kSelfLimits, ApplySelfLimits(plan.self_limits, proc_fd));
  }
  ::close(proc_fd);
  // Before the command takes the next pid, and so that the helper never lingers as a child
  // of the command (which it would be under --as-pid-1).
  if (netns_helper > 0) ReapNetnsHelper(netns_helper);
  RunCommandPhases(launch);
}

}  // namespace sbx::runtime::child
