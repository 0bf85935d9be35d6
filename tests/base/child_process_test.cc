// The pieces every fork and clone site shares: the child's report, the clone with a pidfd,
// the rlimit lowering and the cgroup entry (the id switch needs root: dispatch's tests).
#include "base/child_process.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <vector>

namespace sbx::base {
namespace {

int Reap(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

// Waits for `child` through its pidfd: the pid and exit status the kernel reports there.
void ExpectExitThroughPidfd(const ClonedChild& child, int code) {
  ASSERT_TRUE(child.pidfd);
  siginfo_t info{};
  ASSERT_EQ(::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(child.pidfd.get()), &info,
                     WEXITED),
            0);
  EXPECT_EQ(info.si_pid, child.pid);
  EXPECT_EQ(info.si_status, code);
}

TEST(ChildReportTest, AFailedStepComesBackWithItsErrnoAndText) {
  auto report = ChildReport::Open();
  ASSERT_TRUE(report) << report.error().Render();
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    report->CloseReadEnd();
    const char text[] = "the target";
    report->Fail({7, 3, EACCES, 0}, text, sizeof(text) - 1, 42);
  }
  report->CloseWriteEnd();
  auto failure = report->Read();
  ASSERT_TRUE(failure) << failure.error().Render();
  ASSERT_TRUE(failure->has_value());
  EXPECT_EQ((*failure)->step, 7U);
  EXPECT_EQ((*failure)->stage, 3U);
  EXPECT_EQ((*failure)->err, EACCES);
  EXPECT_EQ((*failure)->detail, 10U) << "the text's length";
  EXPECT_EQ(report->ReadText((*failure)->detail), "the target");
  const int status = Reap(pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 42);
}

TEST(ChildReportTest, ExecIsEndOfFileWithoutAFailure) {
  auto report = ChildReport::Open();
  ASSERT_TRUE(report);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    report->CloseReadEnd();
    ::execl("/bin/true", "true", nullptr);
    report->Fail(1, errno);
  }
  report->CloseWriteEnd();
  auto failure = report->Read();
  ASSERT_TRUE(failure) << failure.error().Render();
  EXPECT_FALSE(failure->has_value());
  EXPECT_EQ(Reap(pid), 0);
}

TEST(CloneWithPidfdTest, TheParentGetsAPidfdOfTheChild) {
  auto child = CloneWithPidfd(0, "a test child");
  ASSERT_TRUE(child) << child.error().Render();
  if (child->pid == 0) ::_exit(3);
  ExpectExitThroughPidfd(*child, 3);
}

TEST(ForkWithPidfdTest, AForkedChildRunsOrdinaryCodeAndTheParentGetsItsPidfd) {
  auto child = ForkWithPidfd("a test child");
  ASSERT_TRUE(child) << child.error().Render();
  if (child->pid == 0) {
    // What a raw clone's child must not do: allocate and format.
    const std::string text = std::to_string(40 + 2);
    ::_exit(text == "42" ? 4 : 1);
  }
  ExpectExitThroughPidfd(*child, 4);
}

TEST(LowerRlimitTest, LowersAndNeverRaises) {
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    rlimit before{};
    ::getrlimit(RLIMIT_NOFILE, &before);
    if (LowerRlimit(RLIMIT_NOFILE, 64) != 0) ::_exit(1);
    rlimit after{};
    ::getrlimit(RLIMIT_NOFILE, &after);
    if (after.rlim_cur != std::min<rlim_t>(before.rlim_cur, 64) || after.rlim_max > 64) ::_exit(2);
    // A higher ceiling leaves the lower limit as it is.
    if (LowerRlimit(RLIMIT_NOFILE, 4096) != 0) ::_exit(3);
    rlimit again{};
    ::getrlimit(RLIMIT_NOFILE, &again);
    ::_exit(again.rlim_max == after.rlim_max && again.rlim_cur == after.rlim_cur ? 0 : 4);
  }
  const int status = Reap(pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(EnterCgroupsTest, WritesThePidInDecimalToEachFile) {
  auto first = MakePipe();
  auto second = MakePipe();
  ASSERT_TRUE(first && second);
  EXPECT_EQ(EnterCgroups({first->write_end.get(), second->write_end.get()}, 40213), 0);
  EXPECT_EQ(EnterCgroups({first->write_end.get()}, 0), 0);
  first->write_end.reset();
  second->write_end.reset();
  auto read_all = [](int fd) {
    std::string text;
    char buf[64];
    for (ssize_t n; (n = ::read(fd, buf, sizeof(buf))) > 0;)
      text.append(buf, static_cast<size_t>(n));
    return text;
  };
  EXPECT_EQ(read_all(first->read_end.get()), "402130");
  EXPECT_EQ(read_all(second->read_end.get()), "40213");
}

TEST(ErrorWithContextTest, KeepsTheErrnoAndTheSubject) {
  const Error inner(ENOENT, "Can't open", "/x");
  const Error outer = inner.WithContext("--out");
  EXPECT_EQ(outer.err(), ENOENT);
  EXPECT_EQ(outer.subject(), "/x");
  EXPECT_EQ(outer.Render(), "--out: Can't open /x: No such file or directory");
  EXPECT_EQ(Error::Message("bad").WithContext("--allow a").Render(), "--allow a: bad");
}

Result<int> Doubled(Result<int> given) {
  SBX_ASSIGN_OR_RETURN(const int value, std::move(given));
  return value * 2;
}

Status Checked(Status given) {
  SBX_RETURN_IF_ERROR(std::move(given));
  return {};
}

TEST(AssignOrReturnTest, BindsTheValueOrReturnsTheError) {
  auto ok = Doubled(21);
  ASSERT_TRUE(ok);
  EXPECT_EQ(*ok, 42);
  auto failed = Doubled(Error(EPERM, "Can't"));
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().err(), EPERM);
  EXPECT_TRUE(Checked({}));
  EXPECT_EQ(Checked(Error(EIO, "x")).error().err(), EIO);
}

}  // namespace
}  // namespace sbx::base
