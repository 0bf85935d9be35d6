// Removing a dispatch directory: everything below it goes, nothing it points at, and a
// root caller empties the sandbox user's directories as that user.
#include "dispatch/host/dir.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "base/unique_fd.h"
#include "tests/dispatch/scratch_dir.h"

namespace sbx::dispatch {
namespace {

constexpr uid_t kNobody = 65534;

void Write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

std::string Read(const std::string& path) { return ReadWholeFile(path); }

bool Exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

// <root>/<id>/{workspace,out} with files, a nested directory and symlinks out to `target`
// (a file) and `target_dir` (a directory with a file).
void MakeDispatch(const ScratchDir& s, const std::string& id) {
  ASSERT_EQ(::mkdir(s.Sub(id).c_str(), 0711), 0);
  for (const char* sub : {"workspace", "out"}) {
    std::string dir = s.Sub(id + "/" + sub);
    ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
    ASSERT_EQ(::mkdir((dir + "/a").c_str(), 0755), 0);
    ASSERT_EQ(::mkdir((dir + "/a/b").c_str(), 0755), 0);
    Write(dir + "/a/b/file", "x");
    ASSERT_EQ(::symlink(s.Sub("target").c_str(), (dir + "/link").c_str()), 0);
    ASSERT_EQ(::symlink(s.Sub("target_dir").c_str(), (dir + "/a/dirlink").c_str()), 0);
  }
}

class DispatchDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Write(scratch_.Sub("target"), "keep");
    ASSERT_EQ(::mkdir(scratch_.Sub("target_dir").c_str(), 0755), 0);
    Write(scratch_.Sub("target_dir/inside"), "keep");
    root_.reset(::open(scratch_.path().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    ASSERT_TRUE(root_);
  }
  void ExpectTargetsKept() {
    EXPECT_EQ(Read(scratch_.Sub("target")), "keep");
    EXPECT_EQ(Read(scratch_.Sub("target_dir/inside")), "keep");
  }
  ScratchDir scratch_;
  base::UniqueFd root_;
};

TEST_F(DispatchDirTest, RemovesEverythingBelowButNothingALinkPointsAt) {
  MakeDispatch(scratch_, "d1");
  ASSERT_TRUE(RemoveDispatchDir(root_.get(), "d1", std::nullopt));
  EXPECT_FALSE(Exists(scratch_.Sub("d1")));
  ExpectTargetsKept();
}

TEST_F(DispatchDirTest, AMissingDirectoryIsAlreadyRemoved) {
  EXPECT_TRUE(RemoveDispatchDir(root_.get(), "never-made", std::nullopt));
}

TEST_F(DispatchDirTest, ASymlinkInPlaceOfTheDispatchDirectoryIsRefusedNotFollowed) {
  ASSERT_EQ(::symlink(scratch_.Sub("target_dir").c_str(), scratch_.Sub("d2").c_str()), 0);
  EXPECT_FALSE(RemoveDispatchDir(root_.get(), "d2", std::nullopt));
  ExpectTargetsKept();
}

// Root empties the sandbox user's directories through a child that became that user: the
// removal works, and a file of root's that the user's directory holds a link to survives.
TEST_F(DispatchDirTest, RootEmptiesTheSandboxUsersDirectoriesAsThatUser) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to hand directories to another uid";
  MakeDispatch(scratch_, "d3");
  ::chmod(scratch_.Sub("target").c_str(), 0600);
  for (const char* sub : {"workspace", "out"}) {
    std::string dir = scratch_.Sub(std::string("d3/") + sub);
    for (const std::string& p : {dir, dir + "/a", dir + "/a/b", dir + "/a/b/file"}) {
      ASSERT_EQ(::lchown(p.c_str(), kNobody, kNobody), 0);
    }
  }
  // A file of root's inside the user's directory: the user cannot remove a file from a
  // directory of root's, but this one sits in the user's own, so it goes.
  Write(scratch_.Sub("d3/workspace/a/rootfile"), "r");
  ASSERT_TRUE(
      RemoveDispatchDir(root_.get(), "d3", runtime::SandboxSpec::HostIds{kNobody, kNobody}));
  EXPECT_FALSE(Exists(scratch_.Sub("d3")));
  ExpectTargetsKept();
}

// What the sandbox user cannot remove stays, and the error says so: root never removes it
// on the user's behalf.
TEST_F(DispatchDirTest, WhatTheSandboxUserCannotRemoveIsNotRemovedByRoot) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to hand directories to another uid";
  MakeDispatch(scratch_, "d4");
  std::string ws = scratch_.Sub("d4/workspace");
  ASSERT_EQ(::lchown(ws.c_str(), kNobody, kNobody), 0);
  // a/ stays root's, 0755: the user cannot empty it.
  EXPECT_FALSE(
      RemoveDispatchDir(root_.get(), "d4", runtime::SandboxSpec::HostIds{kNobody, kNobody}));
  EXPECT_TRUE(Exists(ws + "/a/b/file"));
  ExpectTargetsKept();
}

}  // namespace
}  // namespace sbx::dispatch

namespace sbx::dispatch {
namespace {

// Deeper than any descriptor budget or recursion would allow: 400 levels, each with a
// file, and wide directories on the way; all of it goes, nothing it links to does.
TEST_F(DispatchDirTest, RemovesATreeOfAnyDepth) {
  ASSERT_EQ(::mkdir(scratch_.Sub("0123456789ab").c_str(), 0711), 0);
  base::UniqueFd dir(::open(scratch_.Sub("0123456789ab").c_str(), O_RDONLY | O_DIRECTORY));
  ASSERT_TRUE(dir);
  for (int level = 0; level < 400; ++level) {
    ASSERT_EQ(::mkdirat(dir.get(), "d", 0755), 0);
    for (const char* side : {"e", "f"}) ASSERT_EQ(::mkdirat(dir.get(), side, 0755), 0);
    base::UniqueFd file(::openat(dir.get(), "file", O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
    ASSERT_TRUE(file);
    ASSERT_EQ(::symlinkat(scratch_.Sub("target").c_str(), dir.get(), "link"), 0);
    dir.reset(::openat(dir.get(), "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    ASSERT_TRUE(dir);
  }
  dir.reset();
  ASSERT_TRUE(RemoveDispatchDir(root_.get(), "0123456789ab", std::nullopt));
  EXPECT_FALSE(Exists(scratch_.Sub("0123456789ab")));
  ExpectTargetsKept();
}

}  // namespace
}  // namespace sbx::dispatch
