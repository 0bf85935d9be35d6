// The --status-json file: refused when it is not a regular file, never written through.
#include "dispatch/record/status_file.h"
#include "tests/dispatch/scratch_dir.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace sbx::dispatch {
namespace {

class StatusFileTest : public ::testing::Test {
 protected:
  static std::string Read(const std::string& path) { return ReadWholeFile(path); }
  ScratchDir scratch_;
  const std::string& dir_ = scratch_.path();
};

TEST_F(StatusFileTest, WritesANewFileRenamedIntoPlace) {
  std::string path = dir_ + "/status.json";
  auto file = StatusFile::Open(path);
  ASSERT_TRUE(file) << file.error().Render();
  ASSERT_TRUE(file->Write("{}\n", "", ""));
  EXPECT_EQ(Read(path), "{}\n");
  // Only the document: no temporary file left beside it.
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir_)) ++entries;
  EXPECT_EQ(entries, 1u);
}

TEST_F(StatusFileTest, ALinkPlantedAfterTheCheckIsReplacedNotFollowed) {
  std::string victim = dir_ + "/victim";
  std::ofstream(victim) << "precious\n";
  std::string path = dir_ + "/status.json";
  auto file = StatusFile::Open(path);
  ASSERT_TRUE(file);
  ASSERT_EQ(::symlink(victim.c_str(), path.c_str()), 0);
  ASSERT_TRUE(file->Write("{}\n", "", ""));
  EXPECT_EQ(Read(victim), "precious\n");
  struct stat st {};
  ASSERT_EQ(::lstat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
}

TEST_F(StatusFileTest, LinkAndFifoAreRefusedAtOpen) {
  std::string link = dir_ + "/link.json";
  ASSERT_EQ(::symlink("/etc/passwd", link.c_str()), 0);
  EXPECT_FALSE(StatusFile::Open(link));
  std::string fifo = dir_ + "/fifo.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_FALSE(StatusFile::Open(fifo));  // returns at once: O_NONBLOCK
}

TEST_F(StatusFileTest, NothingIsWrittenInsideTheWorkspace) {
  std::string ws = dir_ + "/ws";
  ASSERT_EQ(::mkdir(ws.c_str(), 0700), 0);
  auto file = StatusFile::Open(ws + "/status.json");
  ASSERT_TRUE(file);
  ASSERT_TRUE(file->Write("{}\n", ws, ""));
  EXPECT_NE(::access((ws + "/status.json").c_str(), F_OK), 0);
}

}  // namespace
}  // namespace sbx::dispatch
