// <root>/<id>/status.json: written by `run` through the dispatch directory's fd, read by `ls`;
// and what `run` does with <id> at the end (the record, or --rm).
#include "dispatch/record/record.h"
#include "dispatch/record/status_json.h"
#include "tests/dispatch/scratch_dir.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "base/safe_path.h"
#include "dispatch/host/lock.h"

namespace sbx::dispatch {
namespace {

class DispatchRecordTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fd_.reset(::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    ASSERT_TRUE(fd_);
  }
  static std::string Read(const std::string& path) { return ReadWholeFile(path); }
  [[nodiscard]] size_t Entries(const std::string& dir) const {
    size_t n = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++n;
    return n;
  }
  ScratchDir scratch_;
  const std::string& dir_ = scratch_.path();
  base::UniqueFd fd_;
};

DispatchResult FinishedResult() {
  DispatchResult r;
  r.id = "0123456789ab";
  r.workspace = "/var/tmp/root/0123456789ab/workspace";
  r.out = "/var/tmp/root/0123456789ab/out";
  r.exit_code = 3;
  r.reason = DispatchReason::kExited;
  r.started_at = "2026-12-01T10:00:00.000Z";
  return r;
}

TEST_F(DispatchRecordTest, LabelsComeBackFromTheRecord) {
  DispatchResult r = FinishedResult();
  r.labels = {{"team", "infra"}, {"job", "a/b:42"}, {"empty", ""}};
  std::string text = RenderStatusJson(r);
  EXPECT_NE(text.find(R"("labels": {"team": "infra", "job": "a/b:42", "empty": ""})"),
            std::string::npos)
      << text;
  auto record = ParseDispatchRecord(text);
  ASSERT_TRUE(record);
  EXPECT_EQ(record->labels, r.labels);
  EXPECT_EQ(record->reason, "exited");
  r.labels.clear();
  record = ParseDispatchRecord(RenderStatusJson(r));
  ASSERT_TRUE(record);
  EXPECT_TRUE(record->labels.empty());
  // A labels member that is not an object of strings is left out, the rest read as before.
  record = ParseDispatchRecord(R"({"labels": {"a": 1}, "reason": "exited", "exit_code": 2})");
  ASSERT_TRUE(record);
  EXPECT_TRUE(record->labels.empty());
  EXPECT_EQ(record->exit_code, 2);
}

TEST_F(DispatchRecordTest, WhatRunWritesLsReadsBack) {
  DispatchResult r = FinishedResult();
  auto record = ParseDispatchRecord(RenderStatusJson(r));
  ASSERT_TRUE(record);
  EXPECT_EQ(record->exit_code, 3);
  EXPECT_EQ(record->reason, "exited");
  EXPECT_EQ(record->error, "");
  EXPECT_EQ(record->started_at, r.started_at);
  EXPECT_EQ(record->workspace, r.workspace);
  EXPECT_EQ(record->out, r.out);
}

TEST_F(DispatchRecordTest, AnErrorIsReadBackUnescaped) {
  DispatchResult r = FinishedResult();
  r.exit_code = 125;
  r.reason = DispatchReason::kRuntimeError;
  r.error = "--ro \"/x\": no such \\ file\tor\ndirectory \x01";
  auto record = ParseDispatchRecord(RenderStatusJson(r));
  ASSERT_TRUE(record);
  EXPECT_EQ(record->exit_code, 125);
  EXPECT_EQ(record->reason, "runtime-error");
  EXPECT_EQ(record->error, r.error);
}

TEST_F(DispatchRecordTest, NestedFieldsAreNotTakenForTopLevelOnes) {
  DispatchResult r = FinishedResult();
  r.limits_json = "{\n    \"reason\": \"nested\",\n    \"exit_code\": 9\n  }";
  auto record = ParseDispatchRecord(RenderStatusJson(r));
  ASSERT_TRUE(record);
  EXPECT_EQ(record->reason, "exited");
  EXPECT_EQ(record->exit_code, 3);
}

TEST_F(DispatchRecordTest, ATruncatedOrForeignFileIsNoRecord) {
  std::string text = RenderStatusJson(FinishedResult());
  EXPECT_FALSE(ParseDispatchRecord(text.substr(0, text.find("\"reason\""))));
  EXPECT_FALSE(ParseDispatchRecord(""));
  EXPECT_FALSE(ParseDispatchRecord("not json at all\n"));
}

TEST_F(DispatchRecordTest, WrittenAsANewPrivateFileRenamedIntoPlace) {
  ASSERT_TRUE(WriteDispatchRecord(fd_.get(), "first\n"));
  ASSERT_TRUE(WriteDispatchRecord(fd_.get(), "second\n"));
  std::string path = dir_ + "/" + kDispatchRecordName;
  EXPECT_EQ(Read(path), "second\n");
  struct stat st {};
  ASSERT_EQ(::lstat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(Entries(dir_), 1u) << "a temporary file was left";
}

TEST_F(DispatchRecordTest, ALinkAtTheNameIsReplacedNotFollowed) {
  std::string victim = dir_ + "/victim";
  { std::ofstream(victim) << "victim\n"; }
  std::string path = dir_ + "/" + kDispatchRecordName;
  ASSERT_EQ(::symlink(victim.c_str(), path.c_str()), 0);
  ASSERT_TRUE(WriteDispatchRecord(fd_.get(), "record\n"));
  EXPECT_EQ(Read(victim), "victim\n");
  struct stat st {};
  ASSERT_EQ(::lstat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
}

// DispatchDirs as PrepareDispatchDirs leaves them for <root>/<id>.
DispatchDirs MadeDirs(const std::string& root, const std::string& id) {
  DispatchDirs dirs;
  auto root_fd = base::OpenTrustedDir(root, ::geteuid());
  if (!root_fd) std::abort();
  auto made = MakeLockedDispatchDir(root_fd->get(), id, 0700, root + "/" + id);
  if (!made) std::abort();
  dirs.root_fd = std::move(*root_fd);
  dirs.dir_fd = std::move(*made);
  dirs.made_dir = id;
  dirs.made_path = root + "/" + id;
  dirs.workspace = dirs.made_path + "/workspace";
  dirs.out = dirs.made_path + "/out";
  for (const auto& sub : {dirs.workspace, dirs.out}) ::mkdir(sub.c_str(), 0755);
  return dirs;
}

TEST_F(DispatchRecordTest, EndWritesTheRecordInTheDispatchDirectory) {
  ::chmod(dir_.c_str(), 0700);
  DispatchDirEnd end;
  {
    DispatchDirs dirs = MadeDirs(dir_, "0123456789ab");
    ASSERT_TRUE(end.Hold(dirs, std::nullopt, /*remove=*/false));
  }
  end.Finish(FinishedResult());
  auto record = ParseDispatchRecord(Read(dir_ + "/0123456789ab/" + kDispatchRecordName));
  ASSERT_TRUE(record);
  EXPECT_EQ(record->exit_code, 3);
}

TEST_F(DispatchRecordTest, EndWithRmRemovesTheDispatchDirectory) {
  ::chmod(dir_.c_str(), 0700);
  DispatchDirEnd end;
  {
    DispatchDirs dirs = MadeDirs(dir_, "0123456789ab");
    { std::ofstream(dirs.workspace + "/file") << "work\n"; }
    ASSERT_TRUE(end.Hold(dirs, std::nullopt, /*remove=*/true));
  }
  end.Finish(FinishedResult());
  EXPECT_EQ(Entries(dir_), 0u);
}

TEST_F(DispatchRecordTest, EndAfterTheRunRemovedItsDirectoryWritesNothing) {
  ::chmod(dir_.c_str(), 0700);
  DispatchDirEnd end;
  {
    DispatchDirs dirs = MadeDirs(dir_, "0123456789ab");
    ASSERT_TRUE(end.Hold(dirs, std::nullopt, /*remove=*/false));
  }
  std::filesystem::remove_all(dir_ + "/0123456789ab");
  end.Finish(FinishedResult());
  EXPECT_EQ(Entries(dir_), 0u);
}

TEST_F(DispatchRecordTest, EndWithoutADispatchDirectoryDoesNothing) {
  DispatchDirs dirs;  // --workspace and --out given: no <id>
  DispatchDirEnd end;
  ASSERT_TRUE(end.Hold(dirs, std::nullopt, /*remove=*/true));
  end.Finish(FinishedResult());
  EXPECT_EQ(Entries(dir_), 0u);
}

}  // namespace
}  // namespace sbx::dispatch
