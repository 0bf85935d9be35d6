// --disk and --inodes (dispatch/host/disk_watch.h): what the agent adds to the workspace and
// out dir is bounded on a plain filesystem, for root and for a normal user. A writer of big
// files and a writer of many files each end with reason `disk` (exit 123) while they still
// write, and what they wrote stays for the caller; a dispatch under the bounds is untouched;
// a bad value is one line and 125.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <string>

#include "integration/run/run_support.h"

namespace sbx::integration::run {
namespace {

using std::chrono::milliseconds;

// Each writer ends in a long sleep: only the disk watcher can end it before --timeout.
constexpr const char* kBigFiles =
    "dd if=/dev/zero of=a bs=1M count=64 2>/dev/null; "
    "dd if=/dev/zero of=b bs=1M count=64 2>/dev/null; sleep 600";
constexpr const char* kManyFiles =
    "i=0; while [ $i -lt 20000 ]; do : > f$i || break; i=$((i+1)); done; sleep 600";

class RunDiskBoundsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string missing = MissingPrerequisite({"sh", "git", "dd", "sleep", "python3"});
    if (!missing.empty()) GTEST_SKIP() << missing;
    repo_ = scratch_.Sub("repo");
    ASSERT_EQ(MakeOneCommitRepository(repo_), 0);
  }
  RunResult Run(const Args& limits, const std::string& script) {
    Args options = {"--repo",
                    repo_,
                    "--workspace-root",
                    scratch_.Sub("dispatches"),
                    "--no-default-allow",
                    "--timeout",
                    "120",
                    "--grace",
                    "2",
                    "--status-json",
                    status_};
    options.insert(options.end(), limits.begin(), limits.end());
    return RunAteam(options, {"/bin/sh", "-c", script}, WithTimeout(milliseconds(180000)));
  }
  // reason, limits.disk, limits.inodes, limits.by.disk, limits.by.inodes and the workspace
  // of the status document, one a line, read with a strict JSON parser.
  [[nodiscard]] std::vector<std::string> StatusFields() const {
    RunResult parsed = RunCommand(
        {"python3", "-c",
         "import json, sys; d = json.loads(open(sys.argv[1], 'rb').read().decode('utf-8', "
         "'strict')); l = d['limits']; print('\\n'.join(map(str, [d['reason'], l['disk'], "
         "l['inodes'], l['by']['disk'], l['by']['inodes'], d['workspace']])))",
         status_});
    std::vector<std::string> fields;
    size_t at = 0;
    for (size_t end = parsed.out.find('\n'); end != std::string::npos;
         at = end + 1, end = parsed.out.find('\n', at)) {
      fields.push_back(parsed.out.substr(at, end - at));
    }
    fields.resize(6);
    return fields;
  }

  RootTempDir scratch_;
  std::string repo_;
  std::string status_ = scratch_.Sub("status.json");
};

TEST_F(RunDiskBoundsTest, AWriterOfBigFilesEndsWithReasonDisk) {
  RunResult res = Run({"--disk", "32m"}, kBigFiles);
  EXPECT_EQ(res.exit_code, 123) << Describe(res);
  EXPECT_NE(res.err.find("--disk 32 MiB"), std::string::npos) << res.err;
  auto fields = StatusFields();
  EXPECT_EQ(fields[0], "disk");
  EXPECT_EQ(fields[1], std::to_string(32 << 20));
  EXPECT_EQ(fields[3], "disk watcher, rlimit fsize");
  // No one file passed --disk (RLIMIT_FSIZE), and what was written stays for the caller.
  struct stat st {};
  ASSERT_EQ(stat((fields[5] + "/a").c_str(), &st), 0) << fields[5];
  EXPECT_LE(st.st_size, 32 << 20);
  EXPECT_GT(st.st_size, 0);
  EXPECT_EQ(stat((fields[5] + "/.git").c_str(), &st), 0);
  EXPECT_EQ(stat(repo_.c_str(), &st), 0);
}

TEST_F(RunDiskBoundsTest, AWriterOfManyFilesEndsWithReasonDisk) {
  RunResult res = Run({"--inodes", "300"}, kManyFiles);
  EXPECT_EQ(res.exit_code, 123) << Describe(res);
  EXPECT_NE(res.err.find("--inodes 300"), std::string::npos) << res.err;
  auto fields = StatusFields();
  EXPECT_EQ(fields[0], "disk");
  EXPECT_EQ(fields[2], "300");
  EXPECT_EQ(fields[4], "disk watcher");
  EXPECT_GT(DirectoryEntries(fields[5]).size(), 300U) << fields[5];
  EXPECT_LT(DirectoryEntries(fields[5]).size(), 20000U) << fields[5];
}

TEST_F(RunDiskBoundsTest, ADispatchUnderTheBoundsIsUntouched) {
  RunResult res = Run({"--disk", "64m", "--inodes", "1000"},
                      "dd if=/dev/zero of=a bs=1M count=8 2>/dev/null && "
                      "for i in 1 2 3 4 5 6 7 8 9 10; do echo $i > f$i; done");
  EXPECT_EQ(res.exit_code, 0) << Describe(res);
  auto fields = StatusFields();
  EXPECT_EQ(fields[0], "exited");
  struct stat st {};
  ASSERT_EQ(stat((fields[5] + "/a").c_str(), &st), 0) << fields[5];
  EXPECT_EQ(st.st_size, 8 << 20);
}

TEST_F(RunDiskBoundsTest, BadValuesAreOneLineAnd125) {
  for (const Args& bad : {Args{"--disk", "0"}, Args{"--disk", "5X"}, Args{"--inodes", "0"},
                          Args{"--inodes", "12x"}}) {
    RunResult res = Run(bad, "touch $ATEAM_OUT/ran");
    EXPECT_EQ(res.exit_code, 125) << Describe(res);
    EXPECT_NE(res.err.find(bad[0]), std::string::npos) << res.err;
    EXPECT_EQ(res.err.find('\n'), res.err.size() - 1) << res.err;
  }
  for (const auto& name : DirectoryEntries(scratch_.Sub("dispatches"))) {
    EXPECT_TRUE(name.starts_with(".")) << "left in the root: " << name;
  }
}

TEST_F(RunDiskBoundsTest, TheDryRunShowsTheDefaults) {
  RunResult res = RunAteam({"--repo", repo_, "--workspace-root", scratch_.Sub("dispatches"),
                            "--no-default-allow", "--dry-run"},
                           {"true"});
  ASSERT_EQ(res.exit_code, 0) << Describe(res);
  EXPECT_NE(res.out.find("limit disk: disk watcher, rlimit fsize"), std::string::npos) << res.out;
  EXPECT_NE(res.out.find("grow by at most 16 GiB and 500000 names"), std::string::npos) << res.out;
}

}  // namespace
}  // namespace sbx::integration::run
