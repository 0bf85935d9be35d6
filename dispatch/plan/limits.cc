#include "dispatch/plan/limits.h"

#include <sys/resource.h>

#include <fmt/format.h>

#include "base/json.h"
#include "dispatch/plan/layout.h"

namespace sbx::dispatch {
namespace {

constexpr uint64_t kKiB = uint64_t{1} << 10;
constexpr uint64_t kTinySize = 64 * kKiB;  // /dev and the tunnel dir: mount points only
constexpr uint64_t kDevInodes = 64;        // about 16 used: nodes, links, shm, pts
constexpr uint64_t kMinTmpfsSize = kMiB;
constexpr uint64_t kMinMemory = 32 * kMiB;
constexpr uint64_t kMinDisk = kMiB;
constexpr uint64_t kMinInodes = 100;
constexpr uint64_t kMaxInodes = uint64_t{1} << 32;

// With nested user namespaces denied, only the supervisor creates a namespace (its network
// one) in the sandbox's user namespace; the other counts start at the ones the clone made.
constexpr uint64_t kNamespacesNoNesting = 8;
constexpr uint64_t kNamespacesNesting = 64;  // a few per nested sandbox (mnt, pid, net, ...)
constexpr const char* kOtherNamespaces[] = {"mnt", "pid", "net", "ipc", "uts", "cgroup", "time"};
constexpr uint64_t kFanotifyGroups = 16;
constexpr uint64_t kFanotifyMarks = 8192;

std::string Bytes(uint64_t n) {
  if (n % kGiB == 0) return fmt::format("{} GiB", n / kGiB);
  if (n % kMiB == 0) return fmt::format("{} MiB", n / kMiB);
  if (n % kKiB == 0) return fmt::format("{} KiB", n / kKiB);
  return fmt::format("{} bytes", n);
}

std::string JsonList(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += ", ";
    out += base::JsonQuote(item);
  }
  return "[" + out + "]";
}

}  // namespace

base::Result<DispatchLimits> ResolveLimits(const DispatchRequest& request) {
  DispatchLimits limits;
  if (request.tmpfs_size) {
    auto size = ParseSize(*request.tmpfs_size, "--tmpfs-size", kMinTmpfsSize);
    if (!size) return size.error();
    limits.tmpfs_size = *size;
  }
  if (request.memory) {
    auto size = ParseSize(*request.memory, "--memory", kMinMemory);
    if (!size) return size.error();
    limits.memory = *size;
  }
  if (request.pids) {
    auto pids = ParseCount(std::to_string(*request.pids), "--pids", kMinPids, kMaxPids);
    if (!pids) return pids.error();
    limits.pids = *pids;
  }
  if (request.cpus) {
    if (!(*request.cpus > 0)) return base::Error::Message("--cpus must be above 0");
    limits.cpus = request.cpus;
  }
  if (request.disk) {
    auto size = ParseSize(*request.disk, "--disk", kMinDisk);
    if (!size) return size.error();
    limits.disk = *size;
  }
  if (request.inodes) {
    auto count = ParseCount(*request.inodes, "--inodes", kMinInodes, kMaxInodes);
    if (!count) return count.error();
    limits.inodes = *count;
  }
  limits.nested_userns = request.allow_nested_userns;
  return limits;
}

uint64_t InodesForSize(uint64_t size) { return std::max<uint64_t>(size / (16 * kKiB), 1024); }

void ApplyLimitsToSpec(const DispatchLimits& limits, runtime::SandboxSpec* spec) {
  const std::string tunnel_prefix = std::string(kTunnelDir) + "/";
  uint64_t tunnel_entries = 0;
  for (const auto& op : spec->ops) {
    std::visit(
        [&](const auto& o) {
          if constexpr (requires { o.dest; }) {
            if (o.dest.starts_with(tunnel_prefix)) ++tunnel_entries;
          }
        },
        op);
  }
  for (auto& op : spec->ops) {
    if (auto* dev = std::get_if<runtime::DevOp>(&op)) {
      dev->size = kTinySize;
      dev->nr_inodes = kDevInodes;
    }
    auto* tmpfs = std::get_if<runtime::TmpfsOp>(&op);
    if (tmpfs == nullptr) continue;
    if (tmpfs->dest == kSandboxHome || tmpfs->dest == "/tmp") {
      tmpfs->size = limits.tmpfs_size;
      tmpfs->nr_inodes = InodesForSize(limits.tmpfs_size);
    } else if (tmpfs->dest == kShmDir) {
      tmpfs->size = kShmSize;
      tmpfs->nr_inodes = InodesForSize(kShmSize);
    } else if (tmpfs->dest == kTunnelDir) {
      tmpfs->size = kTinySize;
      tmpfs->nr_inodes = 16 + tunnel_entries;  // the supervisor and one socket per route
    }
  }
  spec->self_limits = SelfLimitsFor(limits);
}

runtime::SelfLimits SelfLimitsFor(const DispatchLimits& limits) {
  runtime::SelfLimits self;
  self.sysctls.push_back(
      {"user/max_user_namespaces", limits.nested_userns ? kNestedUserNamespaces : 0});
  for (const char* kind : kOtherNamespaces) {
    self.sysctls.push_back({fmt::format("user/max_{}_namespaces", kind),
                            limits.nested_userns ? kNamespacesNesting : kNamespacesNoNesting});
  }
  self.sysctls.push_back({"user/max_inotify_instances", kInotifyInstances});
  self.sysctls.push_back({"user/max_inotify_watches", kInotifyWatches});
  self.sysctls.push_back({"user/max_fanotify_groups", kFanotifyGroups});
  self.sysctls.push_back({"user/max_fanotify_marks", kFanotifyMarks});
  self.rlimits.push_back({RLIMIT_NPROC, limits.pids});
  self.rlimits.push_back({RLIMIT_NOFILE, kOpenFiles});
  self.rlimits.push_back({RLIMIT_CORE, 0});
  // No single file the sandbox writes grows past --disk, wherever it is: the disk watcher
  // (dispatch/host/disk_watch.h) sees totals only between its passes.
  self.rlimits.push_back({RLIMIT_FSIZE, limits.disk});
  return self;
}

LimitsReport ReportLimits(const DispatchLimits& limits, bool backend_bwrap,
                          const std::string& cgroup, const std::string& cgroup_missing) {
  LimitsReport r;
  std::string tmpfs = fmt::format("tmpfs: home and /tmp {} each", Bytes(limits.tmpfs_size));
  if (backend_bwrap) {
    r.enforced.push_back(tmpfs + fmt::format(", /dev/shm {}", Bytes(kShmSize)));
    r.not_enforced.emplace_back(
        "tmpfs inode counts and the /dev and tunnel sizes: bwrap has no option for them");
    r.not_enforced.emplace_back(
        "the sandbox's own sysctls (inotify, fanotify, namespace counts): bwrap cannot set "
        "them");
  } else {
    r.enforced.push_back(tmpfs + fmt::format(" ({} inodes), /dev/shm {}, /dev and {} {}",
                                             InodesForSize(limits.tmpfs_size), Bytes(kShmSize),
                                             kTunnelDir, Bytes(kTinySize)));
    r.enforced.push_back(fmt::format(
        "sysctls in the sandbox's user namespace: max_user_namespaces={}, other namespaces {} "
        "each, inotify {} instances and {} watches",
        limits.nested_userns ? kNestedUserNamespaces : 0,
        limits.nested_userns ? kNamespacesNesting : kNamespacesNoNesting, kInotifyInstances,
        kInotifyWatches));
  }
  if (backend_bwrap) {
    r.enforced.push_back(
        fmt::format("rlimits: nofile {}, core 0, fsize {}", kOpenFiles, Bytes(limits.disk)));
  } else {
    r.enforced.push_back(fmt::format("rlimits: nproc {}, nofile {}, core 0, fsize {}", limits.pids,
                                     kOpenFiles, Bytes(limits.disk)));
  }
  r.enforced.push_back(
      fmt::format("disk: the workspace and out dir grow by at most {} and {} names (disk "
                  "watcher; no file past {}: rlimit fsize)",
                  Bytes(limits.disk), limits.inodes, Bytes(limits.disk)));
  if (limits.nested_userns) {
    r.enforced.push_back(
        fmt::format("nested user namespaces: allowed, at most {}",
                    backend_bwrap ? "the host's limit" : fmt::format("{}", kNestedUserNamespaces)));
  } else {
    r.enforced.emplace_back(
        backend_bwrap ? "nested user namespaces: denied (seccomp, bwrap --disable-userns)"
                      : "nested user namespaces: denied (seccomp, max_user_namespaces=0)");
  }
  std::string cpus = limits.cpus ? fmt::format(", cpus {}", *limits.cpus) : "";
  std::string wanted = fmt::format("memory {}, pids {}{}", Bytes(limits.memory), limits.pids, cpus);
  if (!cgroup.empty()) {
    r.enforced.push_back(fmt::format("cgroup {}: {}", cgroup, wanted));
  } else {
    r.not_enforced.push_back(fmt::format("cgroup ({}): {}", wanted, cgroup_missing));
  }
  return r;
}

std::string RenderLimitsJson(const DispatchLimits& limits, const LimitsReport& report) {
  std::string by;
  for (const auto& [limit, mechanism] : report.by) {
    if (!by.empty()) by += ", ";
    by += base::JsonQuote(limit) + ": " + base::JsonQuote(mechanism);
  }
  return fmt::format(
      R"({{"tmpfs_size": {}, "memory": {}, "pids": {}, "cpus": {}, "nested_userns": {}, )"
      R"("disk": {}, "inodes": {}, "enforced": {}, "not_enforced": {}, "by": {{{}}}}})",
      limits.tmpfs_size, limits.memory, limits.pids,
      limits.cpus ? fmt::format("{}", *limits.cpus) : "null",
      limits.nested_userns ? "true" : "false", limits.disk, limits.inodes,
      JsonList(report.enforced), JsonList(report.not_enforced), by);
}

}  // namespace sbx::dispatch
