// The pack index reader the object cache's repack checks the new pack with: what git wrote
// reads back whole, and an index that is cut short, of another version or whose names are
// out of order is refused.
#include "dispatch/git/pack_index.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "base/unique_fd.h"
#include "tests/dispatch/scratch_dir.h"

namespace sbx::dispatch {
namespace {

int Sh(const std::string& script) { return std::system(("set -e; " + script).c_str()); }

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void Spit(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

std::string Unhex(const std::string& hex) {
  std::string bytes;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    bytes.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return bytes;
}

// A repository of three commits packed into one pack; `idx_` its index, `names_` the object
// names `git show-index` lists, one a line.
class PackIndexTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string repo = dir_.Sub("repo");
    ASSERT_EQ(Sh("git init -q " + repo + " && cd " + repo +
                 " && for i in 1 2 3; do echo $i > f; git add f;"
                 " git -c user.name=t -c user.email=t@t commit -qm $i; done"
                 " && git repack -adq && cp .git/objects/pack/*.idx " +
                 dir_.Sub("good.idx") + " && git show-index < " + dir_.Sub("good.idx") +
                 " | cut -d' ' -f2 > " + dir_.Sub("names")),
              0);
    idx_ = Slurp(dir_.Sub("good.idx"));
    std::istringstream lines(Slurp(dir_.Sub("names")));
    for (std::string line; std::getline(lines, line);) names_.push_back(Unhex(line));
  }

  base::Result<PackIndex> Read(const std::string& bytes) {
    Spit(dir_.Sub("test.idx"), bytes);
    base::UniqueFd fd(::open(dir_.Sub("test.idx").c_str(), O_RDONLY | O_CLOEXEC));
    return ReadPackIndex(fd.get(), "test.idx");
  }

  ScratchDir dir_;
  std::string idx_;
  std::vector<std::string> names_;
};

TEST_F(PackIndexTest, WhatGitWroteReadsBackWhole) {
  auto index = Read(idx_);
  ASSERT_TRUE(index) << index.error().Render();
  ASSERT_EQ(names_.size(), 9U);  // three commits, trees and blobs
  EXPECT_EQ(index->count, names_.size());
  for (const auto& name : names_) EXPECT_TRUE(PackIndexHasName(index->names, name));
  EXPECT_FALSE(PackIndexHasName(index->names, std::string(kPackIndexNameBytes, '\0')));
  EXPECT_EQ(index->pack_checksum,
            idx_.substr(idx_.size() - kPackIndexTrailerBytes, kPackIndexNameBytes));
}

TEST_F(PackIndexTest, ABadIndexIsRefused) {
  EXPECT_FALSE(Read(idx_.substr(0, idx_.size() - 1)));  // cut short
  EXPECT_FALSE(Read(idx_ + std::string(4, '\0')));      // no whole large offset
  EXPECT_FALSE(Read(idx_.substr(0, 100)));
  std::string version = idx_;
  version[7] = 3;
  EXPECT_FALSE(Read(version));
  // The first two names swapped: out of order (and maybe out of their fanout slot).
  std::string swapped = idx_;
  const size_t first = kPackIndexHeaderBytes;
  std::swap_ranges(swapped.begin() + first, swapped.begin() + first + kPackIndexNameBytes,
                   swapped.begin() + first + kPackIndexNameBytes);
  EXPECT_FALSE(Read(swapped));
  // A fanout that claims one object more than the file has room for.
  std::string more = idx_;
  more[kPackIndexHeaderBytes - 1] = static_cast<char>(more[kPackIndexHeaderBytes - 1] + 1);
  EXPECT_FALSE(Read(more));
  EXPECT_EQ(PackIndexCount(idx_, idx_.size()), names_.size());
  // Room for a large offset per object, not one more.
  EXPECT_EQ(PackIndexCount(idx_, idx_.size() + 8 * names_.size()), names_.size());
  EXPECT_EQ(PackIndexCount(idx_, idx_.size() + 8 * (names_.size() + 1)), std::nullopt);
}

}  // namespace
}  // namespace sbx::dispatch
