// GitGuard on hand-made git directories: what a fresh clone gets, what the check after the
// agent finds and undoes, and that it never follows the agent's symlinks out of the tree.
#include "dispatch/git/git_guard.h"
#include "dispatch/git/git_walk.h"
#include "dispatch/git/rw_git.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace sbx::dispatch {
namespace {

namespace fs = std::filesystem;

constexpr const char* kCommit = "0123456789abcdef0123456789abcdef01234567";

void Write(const fs::path& path, const std::string& content) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary | std::ios::trunc) << content;
}

std::string Read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

bool Exists(const fs::path& path) {
  std::error_code ec;
  return fs::symlink_status(path, ec).type() != fs::file_type::not_found;
}

class GitGuardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char templ[] = "/tmp/sbx-git-guard-XXXXXX";
    ASSERT_NE(::mkdtemp(templ), nullptr);
    dir_ = templ;
    ws_ = dir_ / "workspace";
    outside_ = dir_ / "outside";
    fs::create_directories(outside_);
    // What git clone leaves: a branch, a config, and hooks from the template directory.
    Write(ws_ / ".git/HEAD", "ref: refs/heads/main\n");
    Write(ws_ / ".git/refs/heads/main", std::string(kCommit) + "\n");
    fs::create_directories(ws_ / ".git/objects");
    Write(ws_ / ".git/config", "[core]\n\tbare = false\n[alias]\n\tx = !true\n");
    Write(ws_ / ".git/hooks/pre-commit.sample", "#!/bin/sh\n");
    Write(ws_ / "a.txt", "a\n");
  }
  void TearDown() override { fs::remove_all(dir_); }

  GitGuard PrepareClone() {
    auto guard = GitGuard::Prepare(ws_.string(), true, "/src/project");
    EXPECT_TRUE(guard.ok()) << (guard ? "" : guard.error().Render());
    return std::move(*guard);
  }

  fs::path dir_, ws_, outside_;
};

TEST_F(GitGuardTest, FreshCloneGetsAPlainConfigNoHooksAndItsHead) {
  GitGuard guard = PrepareClone();
  EXPECT_EQ(Read(ws_ / ".git/config"), CloneGitConfig("/src/project", "main", false));
  EXPECT_EQ(Read(ws_ / ".git/config").find("alias"), std::string::npos);
  EXPECT_TRUE(fs::is_directory(ws_ / ".git/hooks"));
  EXPECT_TRUE(fs::is_empty(ws_ / ".git/hooks"));
  EXPECT_EQ(guard.clone_head().value_or(""), kCommit);
  runtime::SandboxSpec spec;
  guard.AddBinds(spec);
  ASSERT_EQ(spec.ops.size(), 2u);
  auto config = std::get<runtime::BindOp>(spec.ops[0]);
  EXPECT_EQ(config.dest, (ws_ / ".git/config").string());
  EXPECT_TRUE(config.read_only);
  EXPECT_TRUE(std::get<runtime::BindOp>(spec.ops[1]).read_only);
  EXPECT_TRUE(guard.CheckAndRestore().empty());
}

// A clone from the object cache: its alternates file and the cache are bound read-only,
// and an alternates file the agent changed (or added) is put back (or removed) afterwards.
TEST_F(GitGuardTest, AlternatesAreBoundReadOnlyAndRestored) {
  Write(ws_ / ".git/objects/info/alternates", "/caches/k/objects\n");
  GitGuard guard = PrepareClone();
  guard.BorrowStore("/caches/k");
  runtime::SandboxSpec spec;
  guard.AddBinds(spec);
  ASSERT_EQ(spec.ops.size(), 4u);
  auto alternates = std::get<runtime::BindOp>(spec.ops[2]);
  EXPECT_EQ(alternates.dest, (ws_ / ".git/objects/info/alternates").string());
  EXPECT_TRUE(alternates.read_only);
  auto cache = std::get<runtime::BindOp>(spec.ops[3]);
  EXPECT_EQ(cache.source, "/caches/k");
  EXPECT_EQ(cache.dest, "/caches/k");
  EXPECT_TRUE(cache.read_only);
  EXPECT_TRUE(guard.CheckAndRestore().empty());
  Write(ws_ / ".git/objects/info/alternates", (outside_ / "objects").string() + "\n");
  auto report = guard.CheckAndRestore();
  ASSERT_EQ(report.size(), 1u);
  EXPECT_NE(report[0].find("alternates: changed; restored"), std::string::npos) << report[0];
  EXPECT_EQ(Read(ws_ / ".git/objects/info/alternates"), "/caches/k/objects\n");

  fs::remove(ws_ / ".git/objects/info/alternates");
  GitGuard plain = PrepareClone();
  Write(ws_ / ".git/objects/info/alternates", (outside_ / "objects").string() + "\n");
  report = plain.CheckAndRestore();
  ASSERT_EQ(report.size(), 1u);
  EXPECT_NE(report[0].find("alternates: added; removed"), std::string::npos) << report[0];
  EXPECT_FALSE(Exists(ws_ / ".git/objects/info/alternates"));
}

TEST_F(GitGuardTest, CloneConfigQuotesWhatItWrites) {
  std::string text = CloneGitConfig("/src/a \"b\"\\c", "feat\"x", false);
  EXPECT_NE(text.find("url = \"/src/a \\\"b\\\"\\\\c\""), std::string::npos) << text;
  EXPECT_NE(text.find("[branch \"feat\\\"x\"]"), std::string::npos) << text;
  EXPECT_EQ(CloneGitConfig("evil\n[core]\n", "main", false).find("evil"), std::string::npos);
  EXPECT_NE(CloneGitConfig("u", "main", true).find("objectformat = sha256"), std::string::npos);
}

TEST_F(GitGuardTest, HeadFromPackedRefs) {
  fs::remove(ws_ / ".git/refs/heads/main");
  Write(ws_ / ".git/packed-refs", std::string("# pack-refs\n") + kCommit + " refs/heads/main\n");
  EXPECT_EQ(PrepareClone().clone_head().value_or(""), kCommit);
}

TEST_F(GitGuardTest, EverythingTheAgentAddedIsUndone) {
  GitGuard guard = PrepareClone();
  std::string prepared = Read(ws_ / ".git/config");
  Write(ws_ / ".git/config", prepared + "[core]\n\tfsmonitor = evil\n");
  Write(ws_ / ".git/hooks/post-checkout", "evil\n");
  Write(ws_ / ".git/config.worktree", "[core]\n\tpager = evil\n");
  Write(ws_ / ".git/commondir", "/elsewhere\n");
  Write(ws_ / "sub/.git/config", "[core]\n\tfsmonitor = evil\n");
  Write(ws_ / "sub/.git/hooks/pre-commit", "evil\n");
  Write(ws_ / "pointer/.git", "gitdir: ../elsewhere\n");
  fs::create_directories(ws_ / "link");
  fs::create_directory_symlink(outside_, ws_ / "link/.git");
  Write(ws_ / "bare/HEAD", "ref: refs/heads/main\n");
  fs::create_directories(ws_ / "bare/objects");
  fs::create_directories(ws_ / "bare/refs");
  Write(ws_ / "bare/config", "[core]\n\tfsmonitor = evil\n");

  auto report = guard.CheckAndRestore();
  std::string all;
  for (const auto& line : report) all += line + "\n";
  EXPECT_EQ(Read(ws_ / ".git/config"), prepared);
  EXPECT_TRUE(fs::is_empty(ws_ / ".git/hooks"));
  EXPECT_FALSE(Exists(ws_ / ".git/config.worktree"));
  EXPECT_FALSE(Exists(ws_ / ".git/commondir"));
  EXPECT_EQ(Read(ws_ / "sub/.git/config").find("fsmonitor"), std::string::npos);
  EXPECT_FALSE(Exists(ws_ / "sub/.git/hooks"));
  EXPECT_FALSE(Exists(ws_ / "pointer/.git"));
  EXPECT_EQ(Read(ws_ / "pointer/.git.ateam-disabled"), "gitdir: ../elsewhere\n");
  EXPECT_FALSE(Exists(ws_ / "link/.git"));
  EXPECT_TRUE(fs::is_symlink(ws_ / "link/.git.ateam-disabled"));
  EXPECT_FALSE(Exists(ws_ / "bare/config"));
  EXPECT_TRUE(Exists(ws_ / "bare/config.ateam-disabled"));
  for (const char* what :
       {".git/config", ".git/hooks/post-checkout", ".git/config.worktree", ".git/commondir",
        "sub/.git", "pointer/.git", "link/.git", "bare/config"}) {
    EXPECT_NE(all.find(what), std::string::npos) << what << " not reported:\n" << all;
  }
  // A second look finds nothing left.
  EXPECT_TRUE(guard.CheckAndRestore().empty());
}

TEST_F(GitGuardTest, ReportHoldsNoControlCharacters) {
  GitGuard guard = PrepareClone();
  Write(ws_ / "\x1b]0;x\a/.git", "gitdir: x\n");
  auto report = guard.CheckAndRestore();
  ASSERT_EQ(report.size(), 1u);
  EXPECT_EQ(report[0].find('\x1b'), std::string::npos) << report[0];
  EXPECT_EQ(report[0].find('\a'), std::string::npos) << report[0];
}

TEST_F(GitGuardTest, SymlinksOutOfTheWorkspaceAreNeverFollowed) {
  GitGuard guard = PrepareClone();
  Write(outside_ / "config", "host file\n");
  Write(outside_ / "hook", "host hook\n");
  fs::remove(ws_ / ".git/config");
  fs::create_symlink(outside_ / "config", ws_ / ".git/config");
  fs::remove_all(ws_ / ".git/hooks");
  fs::create_directory_symlink(outside_, ws_ / ".git/hooks");
  auto report = guard.CheckAndRestore();
  EXPECT_FALSE(report.empty());
  EXPECT_EQ(Read(outside_ / "config"), "host file\n");
  EXPECT_EQ(Read(outside_ / "hook"), "host hook\n");
  EXPECT_FALSE(fs::is_symlink(ws_ / ".git/config"));
  EXPECT_EQ(Read(ws_ / ".git/config"), CloneGitConfig("/src/project", "main", false));
  EXPECT_FALSE(fs::is_symlink(ws_ / ".git/hooks"));
  EXPECT_TRUE(fs::is_empty(ws_ / ".git/hooks"));
}

TEST_F(GitGuardTest, AMovedGitDirectoryIsMovedBack) {
  GitGuard guard = PrepareClone();
  fs::rename(ws_ / ".git", ws_ / "stash");
  Write(ws_ / ".git", "gitdir: stash2\n");
  auto report = guard.CheckAndRestore();
  EXPECT_TRUE(fs::is_directory(ws_ / ".git"));
  EXPECT_EQ(Read(ws_ / ".git/config"), CloneGitConfig("/src/project", "main", false));
  EXPECT_TRUE(Exists(ws_ / ".git.ateam-disabled"));
  EXPECT_FALSE(Exists(ws_ / "stash"));
  EXPECT_GE(report.size(), 2u);
}

TEST_F(GitGuardTest, GivenWorkspaceKeepsWhatItHad) {
  Write(ws_ / ".git/hooks/pre-push", "owner's\n");
  Write(ws_ / "vendor/.git/config", "[core]\n\tbare = false\n");
  Write(ws_ / "module/.git", "gitdir: ../.git/modules/module\n");
  Write(ws_ / ".git/modules/module/config", "[core]\n\tworktree = ../../../module\n");
  auto guard = GitGuard::Prepare(ws_.string(), false, "");
  ASSERT_TRUE(guard.ok()) << guard.error().Render();
  EXPECT_EQ(guard->guarded().size(), 3u);
  EXPECT_FALSE(guard->clone_head().has_value());
  std::string config = Read(ws_ / ".git/config");
  EXPECT_TRUE(guard->CheckAndRestore().empty());
  Write(ws_ / ".git/modules/module/config", "[core]\n\tfsmonitor = evil\n");
  Write(ws_ / ".git/hooks/post-checkout", "evil\n");
  auto report = guard->CheckAndRestore();
  EXPECT_EQ(report.size(), 2u);
  EXPECT_EQ(Read(ws_ / ".git/modules/module/config"), "[core]\n\tworktree = ../../../module\n");
  EXPECT_EQ(Read(ws_ / ".git/hooks/pre-push"), "owner's\n");
  EXPECT_EQ(Read(ws_ / ".git/hooks/pre-commit.sample"), "#!/bin/sh\n");
  EXPECT_EQ(Read(ws_ / ".git/config"), config);
  EXPECT_TRUE(Exists(ws_ / "module/.git"));
}

TEST_F(GitGuardTest, AGitdirFileInsideTheWorkspaceHasItsTargetGuarded) {
  fs::rename(ws_ / ".git", ws_ / "gitdata");
  Write(ws_ / ".git", "gitdir: gitdata\n");
  Write(ws_ / "sub/.git", "gitdir: ../../outside\n");
  auto guard = GitGuard::Prepare(ws_.string(), false, "");
  ASSERT_TRUE(guard.ok()) << guard.error().Render();
  ASSERT_EQ(guard->guarded().size(), 1u);
  EXPECT_EQ(guard->guarded()[0].rel, "gitdata");
  runtime::SandboxSpec spec;
  guard->AddBinds(spec);
  ASSERT_EQ(spec.ops.size(), 2u);
  EXPECT_EQ(std::get<runtime::BindOp>(spec.ops[0]).dest, (ws_ / "gitdata/config").string());
  std::string config = Read(ws_ / "gitdata/config");
  Write(ws_ / "gitdata/config", "[core]\n\tfsmonitor = evil\n");
  auto report = guard->CheckAndRestore();
  EXPECT_EQ(Read(ws_ / "gitdata/config"), config);
  EXPECT_EQ(Read(ws_ / ".git"), "gitdir: gitdata\n");
}

// A bare repository found before the run is the user's: guarded, restored, never renamed;
// one laid out during the run is neutralised.
TEST_F(GitGuardTest, ABareRepositoryThereBeforeIsGuardedNotRenamed) {
  Write(ws_ / "try/bare.git/HEAD", "ref: refs/heads/main\n");
  fs::create_directories(ws_ / "try/bare.git/objects");
  fs::create_directories(ws_ / "try/bare.git/refs");
  Write(ws_ / "try/bare.git/config", "[core]\n\tbare = true\n");
  Write(ws_ / "try/bare.git/hooks/post-receive", "owner's\n");
  auto guard = GitGuard::Prepare(ws_.string(), false, "");
  ASSERT_TRUE(guard.ok()) << guard.error().Render();
  EXPECT_TRUE(guard->CheckAndRestore().empty());
  EXPECT_EQ(Read(ws_ / "try/bare.git/config"), "[core]\n\tbare = true\n");
  EXPECT_FALSE(Exists(ws_ / "try/bare.git/config.ateam-disabled"));
  Write(ws_ / "try/bare.git/hooks/post-update", "evil\n");
  Write(ws_ / "made.git/HEAD", "ref: refs/heads/main\n");
  fs::create_directories(ws_ / "made.git/objects");
  fs::create_directories(ws_ / "made.git/refs");
  Write(ws_ / "made.git/config", "[core]\n\tfsmonitor = evil\n");
  auto report = guard->CheckAndRestore();
  EXPECT_EQ(report.size(), 2u);
  EXPECT_FALSE(Exists(ws_ / "try/bare.git/hooks/post-update"));
  EXPECT_EQ(Read(ws_ / "try/bare.git/hooks/post-receive"), "owner's\n");
  EXPECT_TRUE(Exists(ws_ / "made.git/config.ateam-disabled"));
}

TEST_F(GitGuardTest, ALinkedWorktreeIsRefusedAsAWorkspace) {
  fs::remove_all(ws_ / ".git");
  Write(ws_ / ".git", "gitdir: " + (outside_ / "main/.git/worktrees/ws").string() + "\n");
  auto guard = GitGuard::Prepare(ws_.string(), false, "");
  ASSERT_FALSE(guard.ok());
  EXPECT_NE(guard.error().Render().find("linked worktree"), std::string::npos);
}

// Another writable directory is guarded like the workspace; its findings name it.
TEST_F(GitGuardTest, GuardAlsoCoversAnotherDirectory) {
  auto guard = GitGuard::Prepare(ws_.string(), false, "");
  ASSERT_TRUE(guard.ok()) << guard.error().Render();
  fs::path repo = outside_ / "project";
  Write(repo / ".git/HEAD", "ref: refs/heads/main\n");
  Write(repo / ".git/config", "[core]\n\tbare = false\n");
  fs::create_directories(repo / ".git/hooks");
  fs::create_directories(repo / ".git/objects");
  fs::create_directories(repo / ".git/refs");
  ASSERT_TRUE(guard->GuardAlso((repo / ".git").string()).ok());
  runtime::SandboxSpec spec;
  guard->AddBinds(spec);
  bool bound = false;
  for (const auto& op : spec.ops) {
    if (const auto* bind = std::get_if<runtime::BindOp>(&op)) {
      bound = bound || (bind->dest == (repo / ".git/hooks").string() && bind->read_only);
    }
  }
  EXPECT_TRUE(bound);
  Write(repo / ".git/hooks/post-checkout", "evil\n");
  auto report = guard->CheckAndRestore();
  ASSERT_EQ(report.size(), 1u);
  EXPECT_EQ(report[0].rfind((repo / ".git").string() + ": ", 0), 0u) << report[0];
  EXPECT_FALSE(Exists(repo / ".git/hooks/post-checkout"));
}

TEST_F(GitGuardTest, RwInsideAGitDirectoryIsRefused) {
  fs::create_directories(ws_ / ".git/hooks");
  EXPECT_FALSE(RefuseRwInsideGitDir((ws_ / ".git/hooks").string()).ok());
  Write(ws_ / "wt/.git", "gitdir: elsewhere\n");
  EXPECT_FALSE(RefuseRwInsideGitDir((ws_ / "wt/.git").string()).ok());
  EXPECT_TRUE(RefuseRwInsideGitDir((ws_ / ".git").string()).ok());
  EXPECT_TRUE(RefuseRwInsideGitDir(ws_.string()).ok());
}

// The walks are bounded: a stop signal (a readable stop fd) ends them, a tree of more
// names than the budget ends them, a tree deeper than they go leaves them unfinished; the
// check after the agent says so instead of reporting a clean workspace.
TEST_F(GitGuardTest, AStopSignalEndsTheCheckUnfinished) {
  int stop[2];
  ASSERT_EQ(::pipe(stop), 0);
  auto guard = GitGuard::Prepare(ws_.string(), false, "", {}, stop[0]);
  ASSERT_TRUE(guard.ok()) << guard.error().Render();
  EXPECT_TRUE(guard->CheckAndRestore().empty());
  EXPECT_EQ(guard->unchecked(), "");
  ASSERT_EQ(::write(stop[1], "x", 1), 1);
  (void)guard->CheckAndRestore();
  EXPECT_NE(guard->unchecked().find("stopped"), std::string::npos) << guard->unchecked();
  ::close(stop[0]);
  ::close(stop[1]);
}

TEST_F(GitGuardTest, TooManyNamesEndTheWalk) {
  for (int i = 0; i < 30; ++i) fs::create_directories(ws_ / ("d" + std::to_string(i)));
  Write(ws_ / "d29/.git/config", "[core]\n");
  struct stat top {};
  ASSERT_EQ(::stat(ws_.c_str(), &top), 0);
  int entries = 0;
  WalkCallbacks cb;
  cb.git_entry = [&](int, const std::string&, const struct stat&) { ++entries; };
  WalkBudget budget{.stop_fd = -1, .max_entries = 10};
  auto ws = ::open(ws_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  WalkGitMetadata(ws, "", top.st_dev, 0, cb, &budget);
  ::close(ws);
  EXPECT_EQ(budget.ended, WalkBudget::End::kTooMany);
  EXPECT_NE(budget.Unfinished().find("more than 10 names"), std::string::npos);
}

TEST_F(GitGuardTest, ATreeDeeperThanTheWalkLeavesTheCheckUnfinished) {
  auto guard = PrepareClone();
  fs::path deep = ws_;
  for (int i = 0; i <= kMaxGitWalkDepth; ++i) deep /= "d";
  fs::create_directories(deep / ".git");
  (void)guard.CheckAndRestore();
  EXPECT_NE(guard.unchecked().find("deeper than"), std::string::npos) << guard.unchecked();
}

}  // namespace
}  // namespace sbx::dispatch
