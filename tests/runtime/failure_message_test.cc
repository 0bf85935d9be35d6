#include "runtime/failure_message.h"

#include <gtest/gtest.h>

#include <cerrno>

namespace sbx::runtime {
namespace {

Plan PlanWith(std::vector<PlanOp> ops) {
  Plan plan;
  plan.ops = std::move(ops);
  plan.exec_file = "nosuchcmd";
  plan.cwd_candidates = {"/nonexistent"};
  plan.lock_files = {"/lock"};
  return plan;
}

std::string Render(const Plan& plan, uint32_t step, Stage stage, int err, uint32_t detail = 0,
                   const std::string& text = "") {
  return RenderFailure(plan, SetupFailure{step, static_cast<uint32_t>(stage), err, detail}, text);
}

TEST(FailureMessageTest, OpMessagesAreBwraps) {
  Plan plan =
      PlanWith({BindOp{.source = "/nonexistent", .dest = "/x"}, DirOp{.dest = "/usr/newdir"},
                RemountRoOp{.dest = "/usr/bin"}, SymlinkOp{.target = "/b", .dest = "/tmp/l"},
                ChmodOp{.path = "/nope", .mode = 0755}, FileOp{.fd = 77, .dest = "/tmp/x"},
                TmpfsOp{.dest = "/t"}});
  EXPECT_EQ(Render(plan, 0, Stage::kOpenSource, ENOENT),
            "Can't find source path /nonexistent: No such file or directory");
  EXPECT_EQ(Render(plan, 1, Stage::kMakeDir, EROFS),
            "Can't mkdir /usr/newdir: Read-only file system");
  EXPECT_EQ(Render(plan, 2, Stage::kNotMountPoint, EINVAL),
            "Can't remount readonly on /newroot/usr/bin: Unable to find \"/newroot/usr/bin\" in "
            "mount table");
  EXPECT_EQ(Render(plan, 2, Stage::kOpenDest, ENOENT),
            "Can't remount readonly on /newroot/usr/bin: realpath(destination): No such file or "
            "directory");
  EXPECT_EQ(Render(plan, 3, Stage::kSymlinkExists, EEXIST, 2, "/a"),
            "Can't make symlink at /tmp/l: existing destination is /a");
  EXPECT_EQ(Render(plan, 3, Stage::kNotSymlink, EEXIST),
            "Can't make symlink at /tmp/l: destination exists and is not a symlink");
  EXPECT_EQ(Render(plan, 4, Stage::kNone, ENOENT),
            "Can't chmod 0755 /nope: No such file or directory");
  EXPECT_EQ(Render(plan, 5, Stage::kWriteData, EBADF),
            "Can't write data to file /tmp/x: Bad file descriptor");
  EXPECT_EQ(Render(plan, 6, Stage::kMount, ENOSPC),
            "Can't mount tmpfs on /newroot/t: Limit exceeded (ENOSPC). (Hint: Check that "
            "/proc/sys/fs/mount-max is sufficient, typically 100000)");
}

TEST(FailureMessageTest, PhaseMessagesAreBwraps) {
  Plan plan = PlanWith({});
  EXPECT_EQ(Render(plan, static_cast<uint32_t>(Phase::kExec), Stage::kNone, ENOENT),
            "execvp nosuchcmd: No such file or directory");
  EXPECT_EQ(Render(plan, static_cast<uint32_t>(Phase::kChdir), Stage::kNone, ENOENT),
            "Can't chdir to /nonexistent: No such file or directory");
  EXPECT_EQ(Render(plan, static_cast<uint32_t>(Phase::kLockFile), Stage::kOpenLockFile, ENOENT, 0),
            "Unable to open lock file /lock: No such file or directory");
  EXPECT_EQ(Render(plan, static_cast<uint32_t>(Phase::kLockFile), Stage::kLock, EAGAIN, 0),
            "Unable to lock file /lock: Resource temporarily unavailable");
  EXPECT_EQ(Render(plan, static_cast<uint32_t>(Phase::kSecondUserns), Stage::kNone, EPERM,
                   static_cast<uint32_t>(UsernsStep::kUnshare)),
            "unshare user ns: Operation not permitted");
  EXPECT_EQ(Render(plan, static_cast<uint32_t>(Phase::kUidMap), Stage::kNone, EPERM,
                   static_cast<uint32_t>(UsernsStep::kSetgroups)),
            "error writing to setgroups: Operation not permitted");
  EXPECT_EQ(Render(plan, static_cast<uint32_t>(Phase::kAssertUsernsDisabled), Stage::kNone, EEXIST),
            "creation of new user namespaces was not disabled as requested");
}

}  // namespace
}  // namespace sbx::runtime
