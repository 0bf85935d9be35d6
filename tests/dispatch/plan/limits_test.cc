// The dispatch's limits as data: flag parsing and defaults, the sizes every tmpfs of the
// layout gets, the sandbox's own sysctls and rlimits, and the report.
#include "dispatch/plan/limits.h"

#include <sys/resource.h>

#include <gtest/gtest.h>

#include "dispatch/plan/layout.h"

namespace sbx::dispatch {
namespace {

TEST(LimitsTest, DefaultsAndFlags) {
  auto defaults = ResolveLimits({});
  ASSERT_TRUE(defaults);
  EXPECT_EQ(defaults->tmpfs_size, kDefaultTmpfsSize);
  EXPECT_EQ(defaults->memory, kDefaultMemory);
  EXPECT_EQ(defaults->pids, kDefaultPids);
  EXPECT_FALSE(defaults->cpus);
  EXPECT_FALSE(defaults->nested_userns);

  DispatchRequest request;
  request.tmpfs_size = "256m";
  request.memory = "1g";
  request.pids = 100;
  request.cpus = 1.5;
  request.allow_nested_userns = true;
  auto limits = ResolveLimits(request);
  ASSERT_TRUE(limits) << limits.error().Render();
  EXPECT_EQ(limits->tmpfs_size, 256 * kMiB);
  EXPECT_EQ(limits->memory, kGiB);
  EXPECT_EQ(limits->pids, 100U);
  EXPECT_EQ(limits->cpus, 1.5);
  EXPECT_TRUE(limits->nested_userns);
}

TEST(LimitsTest, RefusesTooSmallLimits) {
  DispatchRequest tiny_tmpfs;
  tiny_tmpfs.tmpfs_size = "4k";
  EXPECT_FALSE(ResolveLimits(tiny_tmpfs));
  DispatchRequest tiny_memory;
  tiny_memory.memory = "1m";
  EXPECT_FALSE(ResolveLimits(tiny_memory));
  DispatchRequest few_pids;
  few_pids.pids = 3;
  EXPECT_FALSE(ResolveLimits(few_pids));
  DispatchRequest no_cpu;
  no_cpu.cpus = 0;
  EXPECT_FALSE(ResolveLimits(no_cpu));
}

TEST(LimitsTest, DiskAndInodes) {
  auto defaults = ResolveLimits({});
  ASSERT_TRUE(defaults);
  EXPECT_EQ(defaults->disk, kDefaultDisk);
  EXPECT_EQ(defaults->inodes, kDefaultInodes);
  DispatchRequest request;
  request.disk = "512m";
  request.inodes = "20000";
  auto limits = ResolveLimits(request);
  ASSERT_TRUE(limits) << limits.error().Render();
  EXPECT_EQ(limits->disk, 512 * kMiB);
  EXPECT_EQ(limits->inodes, 20000U);
  for (const char* bad : {"0", "5X", "", "100k"}) {
    DispatchRequest disk;
    disk.disk = bad;
    if (std::string(bad) == "100k") continue;  // a size, but below the floor of 1m: below
    auto refused = ResolveLimits(disk);
    ASSERT_FALSE(refused) << bad;
    EXPECT_NE(refused.error().Render().find("--disk"), std::string::npos);
  }
  DispatchRequest small_disk;
  small_disk.disk = "100k";
  EXPECT_FALSE(ResolveLimits(small_disk));
  for (const char* bad : {"0", "12x", "", "-5", "99"}) {
    DispatchRequest inodes;
    inodes.inodes = bad;
    auto refused = ResolveLimits(inodes);
    ASSERT_FALSE(refused) << bad;
    EXPECT_NE(refused.error().Render().find("--inodes"), std::string::npos);
  }
}

// Every tmpfs of the real layout gets a size and an inode count.
TEST(LimitsTest, EveryTmpfsOfTheLayoutIsSized) {
  DispatchRequest request;
  request.command = {"true"};
  DispatchHostPaths paths;
  paths.workspace = paths.out = "/work/ws";
  paths.supervisor_binary = "/usr/bin/ateam-sandbox";
  paths.route_sockets = {"/run/sock0", "/run/sock1"};
  paths.route_listen = {"127.77.0.1:443", "127.77.0.2:443"};
  auto spec = BuildDispatchSpec(request, paths);
  ASSERT_TRUE(spec) << spec.error().Render();
  DispatchLimits limits;
  limits.tmpfs_size = 64 * kMiB;
  ApplyLimitsToSpec(limits, &*spec);
  int tmpfs_count = 0;
  bool dev_sized = false;
  for (const auto& op : spec->ops) {
    if (const auto* dev = std::get_if<runtime::DevOp>(&op)) {
      dev_sized = dev->size == 65536U && dev->nr_inodes == 64U;
    }
    const auto* tmpfs = std::get_if<runtime::TmpfsOp>(&op);
    if (tmpfs == nullptr) continue;
    ++tmpfs_count;
    ASSERT_TRUE(tmpfs->size && tmpfs->nr_inodes) << tmpfs->dest;
    if (tmpfs->dest == "/tmp" || tmpfs->dest == kSandboxHome) {
      EXPECT_EQ(*tmpfs->size, 64 * kMiB);
      EXPECT_EQ(*tmpfs->nr_inodes, 4096U);
    } else if (tmpfs->dest == kShmDir) {
      EXPECT_EQ(*tmpfs->size, kShmSize);
    } else {
      EXPECT_EQ(tmpfs->dest, kTunnelDir);
      EXPECT_EQ(*tmpfs->size, 65536U);
      EXPECT_EQ(*tmpfs->nr_inodes, 16U + 3U);  // the supervisor and two sockets
    }
  }
  EXPECT_EQ(tmpfs_count, 4);
  EXPECT_TRUE(dev_sized);
  EXPECT_FALSE(spec->self_limits.empty());
}

TEST(LimitsTest, InodesFollowTheSize) {
  EXPECT_EQ(InodesForSize(2 * kGiB), 131072U);
  EXPECT_EQ(InodesForSize(kMiB), 1024U);  // the floor
}

uint64_t Sysctl(const runtime::SelfLimits& self, const std::string& name) {
  for (const auto& s : self.sysctls) {
    if (s.name == name) return s.value;
  }
  ADD_FAILURE() << name << " missing";
  return ~0ULL;
}

TEST(LimitsTest, SelfLimitsDenyNestingByDefault) {
  DispatchLimits limits;
  runtime::SelfLimits self = SelfLimitsFor(limits);
  EXPECT_EQ(Sysctl(self, "user/max_user_namespaces"), 0U);
  // The supervisor makes one network namespace; the clone made the others already.
  EXPECT_GE(Sysctl(self, "user/max_net_namespaces"), 1U);
  for (const char* kind : {"mnt", "pid", "ipc", "uts", "cgroup", "time"}) {
    EXPECT_EQ(Sysctl(self, std::string("user/max_") + kind + "_namespaces"), 8U) << kind;
  }
  EXPECT_EQ(Sysctl(self, "user/max_inotify_instances"), kInotifyInstances);
  EXPECT_EQ(Sysctl(self, "user/max_inotify_watches"), kInotifyWatches);
  Sysctl(self, "user/max_fanotify_groups");
  Sysctl(self, "user/max_fanotify_marks");
  ASSERT_EQ(self.rlimits.size(), 4U);
  EXPECT_EQ(self.rlimits[0].resource, RLIMIT_NPROC);
  EXPECT_EQ(self.rlimits[0].value, kDefaultPids);
  EXPECT_EQ(self.rlimits[1].resource, RLIMIT_NOFILE);
  EXPECT_EQ(self.rlimits[2].resource, RLIMIT_CORE);
  EXPECT_EQ(self.rlimits[2].value, 0U);
  EXPECT_EQ(self.rlimits[3].resource, RLIMIT_FSIZE);
  EXPECT_EQ(self.rlimits[3].value, kDefaultDisk);
}

TEST(LimitsTest, NestingAllowedIsBounded) {
  DispatchLimits limits;
  limits.nested_userns = true;
  runtime::SelfLimits self = SelfLimitsFor(limits);
  EXPECT_EQ(Sysctl(self, "user/max_user_namespaces"), kNestedUserNamespaces);
  EXPECT_GT(Sysctl(self, "user/max_mnt_namespaces"), 8U);
}

TEST(LimitsTest, ReportSaysWhatIsAndIsNotEnforced) {
  DispatchLimits limits;
  LimitsReport native = ReportLimits(limits, false, "", "no cgroup here");
  std::string json = RenderLimitsJson(limits, native);
  EXPECT_NE(json.find("\"pids\": 4096"), std::string::npos) << json;
  EXPECT_NE(json.find("\"nested_userns\": false"), std::string::npos) << json;
  EXPECT_NE(json.find("max_user_namespaces=0"), std::string::npos) << json;
  EXPECT_NE(json.find("no cgroup here"), std::string::npos) << json;
  LimitsReport bwrap = ReportLimits(limits, true, "v1 /sys/fs/cgroup/memory/x", "");
  json = RenderLimitsJson(limits, bwrap);
  EXPECT_NE(json.find("bwrap cannot set them"), std::string::npos) << json;
  EXPECT_NE(json.find("cgroup v1 /sys/fs/cgroup/memory/x"), std::string::npos) << json;
}

}  // namespace
}  // namespace sbx::dispatch
