// The id leases of root's dispatches: distinct while held, kept while their paths exist,
// never the overflow id or an id somebody has, and refused in a directory that is not the
// caller's alone. Run as any user: the caller owns its test lease directory.
#include "dispatch/identity/lease.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <vector>

#include "tests/dispatch/scratch_dir.h"

namespace sbx::dispatch {
namespace {

LeaseOptions TestOptions(const ScratchDir& s, uint32_t first, uint32_t count) {
  LeaseOptions options;
  options.range = {first, first + 1000, count, "test range"};
  options.dir = s.Sub("leases");
  options.owner = ::geteuid();
  options.taken = [](uid_t, gid_t) { return false; };
  return options;
}

size_t LeaseFiles(const ScratchDir& s) {
  std::error_code ec;
  size_t n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(s.Sub("leases"), ec)) {
    (void)entry;
    ++n;
  }
  return n;
}

TEST(IdLeaseTest, HeldLeasesAreDistinctAndFreedOnesComeBack) {
  ScratchDir s;
  auto options = TestOptions(s, 500000, 3);
  auto a = IdLease::Acquire(options, "a", {});
  ASSERT_TRUE(a) << a.error().Render();
  EXPECT_EQ(a->ids().uid, 500000U);
  EXPECT_EQ(a->ids().gid, 501000U);
  auto b = IdLease::Acquire(options, "b", {});
  ASSERT_TRUE(b);
  EXPECT_EQ(b->ids().uid, 500001U);
  a = IdLease::Acquire(options, "c", {});  // the old one is released after the new is taken
  ASSERT_TRUE(a);
  EXPECT_EQ(a->ids().uid, 500002U);
  auto d = IdLease::Acquire(options, "d", {});
  ASSERT_TRUE(d) << "500000 was released and held by no path";
  EXPECT_EQ(d->ids().uid, 500000U);
  auto e = IdLease::Acquire(options, "e", {});
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().Render().find("no free uid"), std::string::npos) << e.error().Render();
}

TEST(IdLeaseTest, AnExistingPathKeepsTheLeaseAfterTheRun) {
  ScratchDir s;
  auto options = TestOptions(s, 500000, 2);
  ASSERT_EQ(::mkdir(s.Sub("dispatch").c_str(), 0755), 0);
  {
    auto a = IdLease::Acquire(options, "a", {s.Sub("dispatch"), s.Sub("gone")});
    ASSERT_TRUE(a);
    EXPECT_EQ(a->ids().uid, 500000U);
  }
  auto b = IdLease::Acquire(options, "b", {});
  ASSERT_TRUE(b);
  EXPECT_EQ(b->ids().uid, 500001U) << "500000's dispatch directory still exists";
  auto listed = ListLeases(options.dir, options.owner);
  ASSERT_TRUE(listed) << listed.error().Render();
  ASSERT_EQ(listed->size(), 2U);
  EXPECT_EQ((*listed)[0].dispatch_id, "a");
  EXPECT_FALSE((*listed)[0].running);
  EXPECT_TRUE((*listed)[0].in_use);
  EXPECT_TRUE((*listed)[1].running);
  b = IdLease::Acquire(options, "c", {});
  EXPECT_FALSE(b) << "both held";
  ASSERT_EQ(::rmdir(s.Sub("dispatch").c_str()), 0);
  auto c = IdLease::Acquire(options, "d", {});
  ASSERT_TRUE(c) << "removing the directory releases it";
  EXPECT_EQ(c->ids().uid, 500000U);
}

// The scan starts above the highest id with a lease file: hundreds of kept dispatches
// holding the low ids are not walked past one by one. An id freed below is taken again
// once the scan has come round to it.
TEST(IdLeaseTest, TheScanStartsAboveTheHighestLeaseFile) {
  ScratchDir s;
  auto options = TestOptions(s, 500000, 4);
  ASSERT_EQ(::mkdir(s.Sub("kept").c_str(), 0755), 0);
  for (const char* id : {"a", "b"}) {
    auto held = IdLease::Acquire(options, id, {s.Sub("kept")});
    ASSERT_TRUE(held) << held.error().Render();
  }
  ASSERT_EQ(::rmdir(s.Sub("kept").c_str()), 0);  // 500000 and 500001 are free again
  auto c = IdLease::Acquire(options, "c", {});
  ASSERT_TRUE(c);
  EXPECT_EQ(c->ids().uid, 500002U);
  auto d = IdLease::Acquire(options, "d", {});
  ASSERT_TRUE(d);
  EXPECT_EQ(d->ids().uid, 500003U);
  auto e = IdLease::Acquire(options, "e", {});  // the top is reached: round from the start
  ASSERT_TRUE(e);
  EXPECT_EQ(e->ids().uid, 500000U);
}

// Past `fresh_ids_until` lease files, the scan starts at the range's start again: a free
// file is taken again before a new one is made.
TEST(IdLeaseTest, ManyLeaseFilesAreTakenAgainBeforeNewOnesAreMade) {
  ScratchDir s;
  auto options = TestOptions(s, 500000, 4);
  options.fresh_ids_until = 2;
  for (const char* id : {"a", "b"}) {
    auto released = IdLease::Acquire(options, id, {});  // released at once: its file stays
    ASSERT_TRUE(released) << released.error().Render();
  }
  EXPECT_EQ(LeaseFiles(s), 2U);
  auto c = IdLease::Acquire(options, "c", {});
  ASSERT_TRUE(c);
  EXPECT_EQ(c->ids().uid, 500000U) << "two files: the free one at the start is taken again";
  EXPECT_EQ(LeaseFiles(s), 2U);
}

TEST(IdLeaseTest, SkipsTheOverflowIdAndIdsSomebodyHas) {
  ScratchDir s;
  auto options = TestOptions(s, 65533, 4);
  options.range.first_gid = 65533;
  options.taken = [](uid_t uid, gid_t) { return uid == 65533; };
  auto a = IdLease::Acquire(options, "a", {});
  ASSERT_TRUE(a);
  EXPECT_EQ(a->ids().uid, 65535U);
  auto b = IdLease::Acquire(options, "b", {});
  ASSERT_TRUE(b);
  EXPECT_EQ(b->ids().uid, 65536U);
  EXPECT_EQ(LeaseFiles(s), 2U) << "no file for an id that was never a candidate";
}

// A free lease file left from an earlier dispatch: its id is still looked up before it is
// granted again (a held one is passed over before the look-up).
TEST(IdLeaseTest, AFreedLeaseOfAnIdSomebodyNowHasIsNotGranted) {
  ScratchDir s;
  auto options = TestOptions(s, 500000, 3);
  std::vector<IdLease> held;
  {
    auto first = IdLease::Acquire(options, "a", {});  // released at the end of the block
    ASSERT_TRUE(first) << first.error().Render();
    ASSERT_EQ(first->ids().uid, 500000U);
    for (const char* id : {"b", "c"}) {
      auto more = IdLease::Acquire(options, id, {});
      ASSERT_TRUE(more);
      held.push_back(std::move(*more));
    }
  }
  int looked_up = 0;
  options.taken = [&](uid_t uid, gid_t) {
    ++looked_up;
    return uid == 500000;
  };
  // The scan comes round to 500000 (500002 is the highest lease file): free, but taken.
  auto next = IdLease::Acquire(options, "d", {});
  ASSERT_FALSE(next);
  EXPECT_NE(next.error().Render().find("no free uid"), std::string::npos) << next.error().Render();
  EXPECT_EQ(looked_up, 1) << "500000 (free, taken); not 500001 and 500002 (held)";
}

TEST(IdLeaseTest, TheHostScanSkipsOurOwnIds) {
  ScratchDir s;
  auto options = TestOptions(s, ::geteuid() == 0 ? 1 : ::geteuid(), 1);
  options.range.first_gid = options.range.first_uid;
  options.taken = nullptr;  // the real passwd, group and /proc scan
  auto a = IdLease::Acquire(options, "a", {});
  EXPECT_FALSE(a) << "uid " << options.range.first_uid << " is a passwd entry or ours";
  EXPECT_EQ(LeaseFiles(s), 0U);
}

// `gc`'s pruning: the file of a released lease goes; a held one, and one whose path still
// exists, stay; a pruned id is leased again from a fresh file.
TEST(IdLeaseTest, PruningRemovesOnlyReleasedLeases) {
  ScratchDir s;
  auto options = TestOptions(s, 500000, 8);
  ASSERT_EQ(::mkdir(s.Sub("kept").c_str(), 0700), 0);
  auto held = IdLease::Acquire(options, "held", {});
  ASSERT_TRUE(held) << held.error().Render();
  ASSERT_TRUE(IdLease::Acquire(options, "kept", {s.Sub("kept")}));  // lock released, path there
  ASSERT_TRUE(IdLease::Acquire(options, "gone", {s.Sub("gone")}));  // released, no path
  ASSERT_EQ(LeaseFiles(s), 3U);
  auto dry = PruneFreeLeases(options.dir, options.owner, /*dry_run=*/true);
  ASSERT_TRUE(dry) << dry.error().Render();
  EXPECT_EQ(*dry, 1U);
  EXPECT_EQ(LeaseFiles(s), 3U) << "a dry run removes nothing";
  auto pruned = PruneFreeLeases(options.dir, options.owner, /*dry_run=*/false);
  ASSERT_TRUE(pruned) << pruned.error().Render();
  EXPECT_EQ(*pruned, 1U);
  EXPECT_EQ(LeaseFiles(s), 2U);
  struct stat st {};
  EXPECT_NE(::lstat(s.Sub("leases/500002").c_str(), &st), 0) << "the released lease's file";
  auto again = IdLease::Acquire(options, "again", {});
  ASSERT_TRUE(again) << again.error().Render();
  EXPECT_NE(again->ids().uid, held->ids().uid);
  EXPECT_NE(again->ids().uid, 500001U) << "the lease whose path exists";
  auto missing = PruneFreeLeases(s.Sub("none"), options.owner, false);
  ASSERT_TRUE(missing);
  EXPECT_EQ(*missing, 0U);
}

TEST(IdLeaseTest, ATamperedDirectoryIsRefusedWithNothingCreated) {
  auto expect_refused = [](const ScratchDir& s, const LeaseOptions& options, const char* what) {
    auto a = IdLease::Acquire(options, "a", {});
    ASSERT_FALSE(a) << what;
    const std::string message = a.error().Render();
    EXPECT_EQ(message.find('\n'), std::string::npos);
    struct stat st {};
    EXPECT_NE(::lstat(s.Sub("leases/500000").c_str(), &st), 0) << what << ": " << message;
  };
  {
    ScratchDir s;
    ASSERT_EQ(::mkdir(s.Sub("leases").c_str(), 0700), 0);
    std::ofstream(s.Sub("leases/notes.txt")) << "x";
    expect_refused(s, TestOptions(s, 500000, 2), "a foreign file");
  }
  {
    ScratchDir s;
    ASSERT_EQ(::mkdir(s.Sub("leases").c_str(), 0700), 0);
    ASSERT_EQ(::symlink("/etc/passwd", s.Sub("leases/500001").c_str()), 0);
    expect_refused(s, TestOptions(s, 500000, 2), "a symlink as a lease");
  }
  {
    ScratchDir s;
    ASSERT_EQ(::mkdir(s.Sub("leases").c_str(), 0700), 0);
    std::ofstream(s.Sub("leases/500001")) << "";
    ASSERT_EQ(::chmod(s.Sub("leases/500001").c_str(), 0666), 0);
    expect_refused(s, TestOptions(s, 500000, 2), "a lease others can write");
  }
  {
    ScratchDir s;
    ASSERT_EQ(::mkdir(s.Sub("leases").c_str(), 0777), 0);
    ASSERT_EQ(::chmod(s.Sub("leases").c_str(), 0777), 0);
    expect_refused(s, TestOptions(s, 500000, 2), "a directory others can write");
  }
  {
    ScratchDir s;
    ASSERT_EQ(::mkdir(s.Sub("real").c_str(), 0700), 0);
    ASSERT_EQ(::symlink(s.Sub("real").c_str(), s.Sub("leases").c_str()), 0);
    expect_refused(s, TestOptions(s, 500000, 2), "the directory a symlink");
  }
  {
    ScratchDir s;
    auto options = TestOptions(s, 500000, 2);
    options.range.count = 0;
    expect_refused(s, options, "an empty range");
    struct stat st {};
    EXPECT_NE(::lstat(s.Sub("leases").c_str(), &st), 0) << "not even the directory";
  }
}

// Many processes acquiring at once, each holding its lease until all have one: every
// uid is different.
TEST(IdLeaseTest, ParallelAcquisitionsAreAllDistinct) {
  ScratchDir s;
  const auto options = TestOptions(s, 600000, 64);
  constexpr int kRuns = 24;
  int report[2];
  int release[2];
  ASSERT_EQ(::pipe(report), 0);
  ASSERT_EQ(::pipe(release), 0);
  std::vector<pid_t> children;
  for (int i = 0; i < kRuns; ++i) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(report[0]);
      ::close(release[1]);
      auto lease = IdLease::Acquire(options, "run" + std::to_string(i), {});
      uint32_t uid = lease ? lease->ids().uid : 0;
      if (::write(report[1], &uid, sizeof uid) != sizeof uid) ::_exit(2);
      char c = 0;
      (void)::read(release[0], &c, 1);  // held until the parent lets go of all
      ::_exit(lease ? 0 : 1);
    }
    children.push_back(pid);
  }
  ::close(report[1]);
  ::close(release[0]);
  std::set<uint32_t> uids;
  for (int i = 0; i < kRuns; ++i) {
    uint32_t uid = 0;
    ASSERT_EQ(::read(report[0], &uid, sizeof uid), static_cast<ssize_t>(sizeof uid));
    EXPECT_NE(uid, 0U) << "an acquisition failed";
    uids.insert(uid);
  }
  ::close(release[1]);
  for (pid_t pid : children) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  ::close(report[0]);
  EXPECT_EQ(uids.size(), static_cast<size_t>(kRuns)) << "a uid was handed out twice";
}

TEST(IdLeaseTest, RecordRoundTrips) {
  const std::string text = RenderLeaseRecord("abc", {7, 8}, {"/a", "/b\nuid 0", "/c"});
  LeaseInfo info = ParseLeaseRecord(text);
  EXPECT_EQ(info.dispatch_id, "abc");
  EXPECT_EQ(info.uid, 7U);
  EXPECT_EQ(info.gid, 8U);
  EXPECT_EQ(info.paths, (std::vector<std::string>{"/a", "/c"}))
      << "a path with a newline is left out";
}

}  // namespace
}  // namespace sbx::dispatch
