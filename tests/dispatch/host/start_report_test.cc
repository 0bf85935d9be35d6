// The line `run` prints for a command the supervisor could not start: the shell's exit
// codes, and the --ro that would show a path the host has.
#include "dispatch/host/start_report.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>

namespace sbx::dispatch {
namespace {

TEST(StartFailureTest, MissingIs127NotExecutableIs126) {
  StartFailure missing = DescribeStartFailure(ENOENT, "nosuch", "/w", "/usr/bin:/bin", "");
  EXPECT_EQ(missing.exit_code, 127);
  EXPECT_TRUE(missing.missing);
  EXPECT_EQ(missing.message,
            "cannot run nosuch: command not found in the sandbox's PATH (/usr/bin:/bin)");
  EXPECT_EQ(DescribeStartFailure(ENOTDIR, "a/b", "/w", "", "").exit_code, 127);
  StartFailure denied = DescribeStartFailure(EACCES, "./tool", "/w", "", "");
  EXPECT_EQ(denied.exit_code, 126);
  EXPECT_FALSE(denied.missing);
  EXPECT_TRUE(denied.message.starts_with("cannot run ./tool: Permission denied")) << denied.message;
  EXPECT_EQ(DescribeStartFailure(ENOEXEC, "./tool", "/w", "", "").exit_code, 126);
}

TEST(StartFailureTest, AHostPathGetsItsRo) {
  const std::string dir = "/tmp/sbx-start-report-" + std::to_string(::getpid());
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
  std::ofstream(dir + "/tool") << "#!/bin/sh\n";
  StartFailure by_path = DescribeStartFailure(ENOENT, dir + "/tool", "/w", "/usr/bin", "");
  EXPECT_EQ(by_path.message, "cannot run " + dir +
                                 "/tool: no such file in the sandbox; the host has it, but its "
                                 "directory is not in the sandbox: add --ro " +
                                 dir);
  StartFailure by_name = DescribeStartFailure(ENOENT, "tool", "/w", "/usr/bin", "/nope:" + dir);
  EXPECT_EQ(by_name.message,
            "cannot run tool: command not found in the sandbox's PATH "
            "(/usr/bin); the host has " +
                dir + "/tool: add --ro " + dir + " and run it by that path");
  // Relative to the workspace (the sandbox's cwd).
  StartFailure relative = DescribeStartFailure(ENOENT, "./tool", dir, "/usr/bin", "");
  EXPECT_TRUE(relative.message.ends_with("add --ro " + dir)) << relative.message;
  // Already on the sandbox's PATH: no --ro would help, none is named.
  StartFailure on_path = DescribeStartFailure(ENOENT, "tool", "/w", dir, dir);
  EXPECT_EQ(on_path.message.find("--ro"), std::string::npos) << on_path.message;
  ::unlink((dir + "/tool").c_str());
  ::rmdir(dir.c_str());
}

}  // namespace
}  // namespace sbx::dispatch
