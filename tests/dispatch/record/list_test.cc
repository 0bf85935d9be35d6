// `ateam-sandbox ls` and `gc` below the API: which directories count as dispatches, their
// age, size, lock and record, and what removal takes.
#include "dispatch/record/list.h"
#include "dispatch/record/status_json.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>

#include "dispatch/host/lock.h"

namespace sbx::dispatch {
namespace {

constexpr uid_t kNobody = 65534;

class DispatchListTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // /var/tmp: /tmp may belong to another uid here, and a root below it is refused.
    std::string tmpl = "/var/tmp/dispatch-list-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    ASSERT_EQ(::chmod(dir_.c_str(), 0700), 0);
    auto root = OpenCallerDispatchRoot(dir_);
    ASSERT_TRUE(root) << root.error().Render();
    root_ = std::move(*root);
    ASSERT_TRUE(root_.fd);
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  // <root>/<id> as `run` makes it, locked while the returned fd is open; with workspace/.
  base::UniqueFd MakeDispatch(const std::string& id) {
    auto made = MakeLockedDispatchDir(root_.fd.get(), id, 0700, dir_ + "/" + id);
    if (!made) std::abort();
    ::mkdirat(made->get(), "workspace", 0700);
    return std::move(*made);
  }
  void Record(const std::string& id, int exit_code, DispatchReason reason) {
    DispatchResult r;
    r.id = id;
    r.exit_code = exit_code;
    r.reason = reason;
    std::ofstream(dir_ + "/" + id + "/status.json") << RenderStatusJson(r);
  }
  void SetAge(const std::string& id, int64_t now, int64_t age) {
    timespec times[2] = {{now - age, 0}, {now - age, 0}};
    ASSERT_EQ(::utimensat(AT_FDCWD, (dir_ + "/" + id).c_str(), times, AT_SYMLINK_NOFOLLOW), 0);
  }
  std::vector<DispatchEntry> List(int64_t now) {
    auto listed = ListDispatches(root_, now);
    EXPECT_TRUE(listed) << listed.error().Render();
    return listed ? std::move(*listed) : std::vector<DispatchEntry>{};
  }
  [[nodiscard]] bool Exists(const std::string& rel) const {
    struct stat st {};
    return ::lstat((dir_ + "/" + rel).c_str(), &st) == 0;
  }

  std::string dir_;
  DispatchRoot root_;
  int64_t now_ = static_cast<int64_t>(std::time(nullptr));
};

TEST_F(DispatchListTest, ARootThatDoesNotExistHasNoDispatchesAndIsNotMade) {
  auto root = OpenCallerDispatchRoot(dir_ + "/missing/dispatches");
  ASSERT_TRUE(root) << root.error().Render();
  EXPECT_FALSE(root->fd);
  auto listed = ListDispatches(*root, now_);
  ASSERT_TRUE(listed);
  EXPECT_TRUE(listed->empty());
  EXPECT_FALSE(Exists("missing"));
}

TEST_F(DispatchListTest, ARelativeRootIsTakenFromTheCurrentDirectory) {
  std::string cwd = std::filesystem::current_path();
  ASSERT_EQ(::chdir(dir_.c_str()), 0);
  auto root = OpenCallerDispatchRoot(std::string("sub/"));
  ASSERT_EQ(::chdir(cwd.c_str()), 0);
  ASSERT_TRUE(root) << root.error().Render();
  EXPECT_EQ(root->path, dir_ + "/sub");
}

TEST_F(DispatchListTest, OnlyDispatchDirectoriesAreListedOldestFirst) {
  MakeDispatch("00000000000a");
  MakeDispatch("00000000000b");
  Record("00000000000a", 0, DispatchReason::kExited);
  Record("00000000000b", 0, DispatchReason::kExited);
  SetAge("00000000000a", now_, 60);
  SetAge("00000000000b", now_, 3 * 86400);
  // Not dispatches: other names, a file, a link that looks like one.
  ASSERT_EQ(::mkdir((dir_ + "/notes").c_str(), 0700), 0);
  ASSERT_EQ(::mkdir((dir_ + "/00000000000G").c_str(), 0700), 0);
  { std::ofstream(dir_ + "/00000000000c") << "file"; }
  ASSERT_EQ(::symlink((dir_ + "/00000000000a").c_str(), (dir_ + "/00000000000d").c_str()), 0);
  auto entries = List(now_);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].id, "00000000000b");
  EXPECT_EQ(entries[0].age_seconds, 3 * 86400);
  EXPECT_EQ(entries[0].path, dir_ + "/00000000000b");
  EXPECT_EQ(entries[1].id, "00000000000a");
  EXPECT_EQ(entries[1].age_seconds, 60);
}

TEST_F(DispatchListTest, ShowsRunningFinishedAndKilledRuns) {
  base::UniqueFd running = MakeDispatch("0000000000aa");
  { MakeDispatch("0000000000bb"); }
  Record("0000000000bb", 3, DispatchReason::kExited);
  { MakeDispatch("0000000000cc"); }  // killed: unlocked, no record
  auto entries = List(now_);
  ASSERT_EQ(entries.size(), 3u);
  std::map<std::string, DispatchEntry> by_id;
  for (auto& e : entries) by_id[e.id] = e;
  EXPECT_TRUE(by_id["0000000000aa"].running);
  EXPECT_FALSE(by_id["0000000000aa"].record);
  EXPECT_FALSE(by_id["0000000000bb"].running);
  ASSERT_TRUE(by_id["0000000000bb"].record);
  EXPECT_EQ(by_id["0000000000bb"].record->exit_code, 3);
  EXPECT_EQ(by_id["0000000000bb"].record->reason, "exited");
  EXPECT_FALSE(by_id["0000000000cc"].running);
  EXPECT_FALSE(by_id["0000000000cc"].record);
  // The run ends: its lock goes with its descriptor.
  running.reset();
  entries = List(now_);
  for (const auto& e : entries) EXPECT_FALSE(e.running) << e.id;
}

TEST_F(DispatchListTest, SizeCountsBlocksBelowOnceForHardLinks) {
  { MakeDispatch("0000000000aa"); }
  std::string workspace = dir_ + "/0000000000aa/workspace";
  { std::ofstream(workspace + "/big") << std::string(256 * 1024, 'x'); }
  auto one = List(now_);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_GE(one[0].size_bytes, 256u * 1024);
  EXPECT_LT(one[0].size_bytes, 512u * 1024);
  // A second name for the same file adds nothing; a symlink to it adds only itself.
  ASSERT_EQ(::link((workspace + "/big").c_str(), (workspace + "/again").c_str()), 0);
  ASSERT_EQ(::symlink("/usr", (workspace + "/usr").c_str()), 0);
  auto two = List(now_);
  ASSERT_EQ(two.size(), 1u);
  EXPECT_LT(two[0].size_bytes, one[0].size_bytes + 16 * 1024);
}

TEST_F(DispatchListTest, RemovesAFinishedOneButNeverARunningOne) {
  base::UniqueFd running = MakeDispatch("0000000000aa");
  { MakeDispatch("0000000000bb"); }
  // The workspace links to a file outside: the link goes, the file stays.
  std::string outside = dir_ + "/outside";
  { std::ofstream(outside) << "keep"; }
  ASSERT_EQ(::symlink(outside.c_str(), (dir_ + "/0000000000bb/workspace/link").c_str()), 0);
  for (const auto& e : List(now_)) {
    auto removed = RemoveFinishedDispatch(root_, e);
    ASSERT_TRUE(removed) << removed.error().Render();
    EXPECT_EQ(*removed, e.id == "0000000000bb") << e.id;
  }
  EXPECT_TRUE(Exists("0000000000aa/workspace"));
  EXPECT_FALSE(Exists("0000000000bb"));
  EXPECT_TRUE(Exists("outside"));
}

TEST_F(DispatchListTest, RemovesWhatTheAgentMadeUnreadable) {
  { MakeDispatch("0000000000aa"); }
  std::string workspace = dir_ + "/0000000000aa/workspace";
  ASSERT_EQ(::mkdir((workspace + "/ro").c_str(), 0700), 0);
  { std::ofstream(workspace + "/ro/f") << "x"; }
  ASSERT_EQ(::chmod((workspace + "/ro").c_str(), 0500), 0);
  ASSERT_EQ(::mkdir((workspace + "/none").c_str(), 0000), 0);
  auto entries = List(now_);
  ASSERT_EQ(entries.size(), 1u);
  auto removed = RemoveFinishedDispatch(root_, entries[0]);
  ASSERT_TRUE(removed) << removed.error().Render();
  EXPECT_TRUE(*removed);
  EXPECT_FALSE(Exists("0000000000aa"));
}

// A root caller's workspace belongs to the sandbox's ids: measured and emptied by a child
// that became them, never by root.
TEST_F(DispatchListTest, RootCallersSandboxDirectoriesAreHandledAsTheirOwner) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to hand a directory to another uid";
  { MakeDispatch("0000000000aa"); }
  std::string workspace = dir_ + "/0000000000aa/workspace";
  ASSERT_EQ(::chmod((dir_ + "/0000000000aa").c_str(), 0711), 0);
  { std::ofstream(workspace + "/data") << std::string(64 * 1024, 'x'); }
  // Root's file, linked from their workspace: removing the link must not reach it.
  std::string victim = dir_ + "/victim";
  { std::ofstream(victim) << "root's"; }
  ASSERT_EQ(::symlink(victim.c_str(), (workspace + "/link").c_str()), 0);
  for (const auto& p : {workspace, workspace + "/data", workspace + "/link"}) {
    ASSERT_EQ(::lchown(p.c_str(), kNobody, kNobody), 0);
  }
  auto entries = List(now_);
  ASSERT_EQ(entries.size(), 1u);
  ASSERT_TRUE(entries[0].owner);
  EXPECT_EQ(entries[0].owner->uid, kNobody);
  EXPECT_EQ(entries[0].problem, "");
  EXPECT_GE(entries[0].size_bytes, 64u * 1024);
  auto removed = RemoveFinishedDispatch(root_, entries[0]);
  ASSERT_TRUE(removed) << removed.error().Render();
  EXPECT_TRUE(*removed);
  EXPECT_FALSE(Exists("0000000000aa"));
  EXPECT_TRUE(Exists("victim"));
}

TEST_F(DispatchListTest, RootLeavesADispatchWithDirectoriesOfTwoOtherUidsAlone) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to hand a directory to another uid";
  { MakeDispatch("0000000000aa"); }
  std::string id_dir = dir_ + "/0000000000aa";
  ASSERT_EQ(::mkdir((id_dir + "/out").c_str(), 0700), 0);
  ASSERT_EQ(::chown((id_dir + "/workspace").c_str(), kNobody, kNobody), 0);
  ASSERT_EQ(::chown((id_dir + "/out").c_str(), 12345, 12345), 0);
  auto entries = List(now_);
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_NE(entries[0].problem, "");
  EXPECT_FALSE(RemoveFinishedDispatch(root_, entries[0]));
  EXPECT_TRUE(Exists("0000000000aa/out"));
}

}  // namespace
}  // namespace sbx::dispatch
