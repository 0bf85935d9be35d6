// `run --repo SRC --object-cache`: the workspace borrows the objects of the caller's cache
// of SRC, bound read-only. Checked from both sides: what the agent can see and change
// (not the source, not the cache, not another dispatch's objects), what is left on the host
// (the cache and the source `git fsck` clean, a workspace plain git and --patch work on),
// a cache that fails its checks made anew, bad input refused with one line, and `ls`/`gc`.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "integration/run/run_support.h"

namespace sbx::integration::run {
namespace {

RunResult HostGit(const std::string& dir, const Args& args) {
  Args argv = {"git", "-C", dir, "-c", "user.name=host", "-c", "user.email=host@host"};
  if (IsRoot()) argv.insert(argv.end(), {"-c", "safe.directory=*"});
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, WithEnv({"GIT_TERMINAL_PROMPT=0"}));
}

class RunObjectCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string missing = MissingPrerequisite({"sh", "git"});
    if (!missing.empty()) GTEST_SKIP() << missing;
    src_ = src_dir_.Sub("src");
    ASSERT_EQ(RunCommand({"sh", "-c",
                          "set -e; mkdir " + src_ + "; cd " + src_ +
                              "; git init -q -b main; echo one > a.txt; git add a.txt;"
                              " git -c user.name=t -c user.email=t@t commit -q -m base;"
                              " chmod -R a+rX ."})
                  .exit_code,
              0);
    cache_root_ = root_.Sub("caches");
  }

  RunResult Run(const Args& options, const std::string& script) {
    Args all = {"--workspace-root", root_.path(), "--cache-root",  cache_root_,
                "--repo",           src_,         "--object-cache"};
    all.insert(all.end(), options.begin(), options.end());
    last_ = RunAteam(all, {"/bin/sh", "-c", script});
    return last_;
  }

  // The one cache below the cache root.
  std::string Cache() {
    for (const auto& name : DirectoryEntries(cache_root_)) {
      if (!name.ends_with(".lock") && name.find('.') == std::string::npos) {
        return cache_root_ + "/" + name;
      }
    }
    return "";
  }

  void ExpectFsckClean(const std::string& repo) {
    RunResult fsck = HostGit(repo, {"fsck", "--no-dangling", "--no-progress"});
    EXPECT_EQ(fsck.exit_code, 0) << repo << "\n" << Describe(fsck);
  }

  TempDir src_dir_;
  RootTempDir root_;
  std::string src_;
  std::string cache_root_;
  RunResult last_;
};

// Two dispatches from one cache: each sees the source's history, neither the source nor
// the other's commit, and cannot write the cache; the second commits, then corrupts every
// object it can reach (its own ones only: the cache's are read-only). The cache and the source stay
// fsck clean, and the first workspace works on the host and gives its patch.
TEST_F(RunObjectCacheTest, DispatchesBorrowReadOnlyAndNeverSeeEachOther) {
  TempDir patches;
  Run({"--patch", patches.Sub("first.patch")},
      "echo \"alternates: $(cat .git/objects/info/alternates)\"\n"
      "test -e '" +
          src_ +
          "' && echo src: visible || echo src: hidden\n"
          "echo \"log: $(git log --format=%s)\"\n"
          "echo agent > agent.txt && git add agent.txt && "
          "git -c user.name=a -c user.email=a@a commit -q -m agent && "
          "echo \"commit: $(git rev-parse HEAD)\"\n"
          "c=$(sed 's|/objects$||' .git/objects/info/alternates)\n"
          "touch \"$c/objects/x\" 2>/dev/null && echo cache: written || echo cache: read-only\n"
          "echo extra >> .git/objects/info/alternates 2>/dev/null && echo alt: written || "
          "echo alt: read-only\n");
  ASSERT_EQ(last_.exit_code, 0) << Describe(last_);
  Report first = ParseReport(last_.out);
  std::string cache = Cache();
  ASSERT_FALSE(cache.empty());
  EXPECT_EQ(Get(first, "alternates"), cache + "/objects") << Describe(last_);
  EXPECT_EQ(Get(first, "src"), "hidden");
  EXPECT_EQ(Get(first, "log"), "base");
  EXPECT_EQ(Get(first, "cache"), "read-only");
  EXPECT_EQ(Get(first, "alt"), "read-only");
  std::string commit = Get(first, "commit");
  ASSERT_EQ(commit.size(), 40U) << Describe(last_);

  Run({}, "git cat-file -e " + commit +
              " 2>/dev/null && echo other: seen || echo other: unseen\n"
              "echo second > second.txt && git add second.txt && "
              "git -c user.name=a -c user.email=a@a commit -q -m second\n"
              "c=$(sed 's|/objects$||' .git/objects/info/alternates)\n"
              "chmod -R u+w .git/objects 2>/dev/null\n"
              "n=0; for f in $(find .git/objects \"$c\" -type f); do "
              "printf garbage 2>/dev/null > \"$f\" && n=$((n+1)); done\n"
              "echo \"corrupted: $n\"\n"
              "git fsck >/dev/null 2>&1 && echo fsck: clean || echo fsck: broken\n");
  ASSERT_EQ(last_.exit_code, 0) << Describe(last_);
  Report second = ParseReport(last_.out);
  EXPECT_EQ(Get(second, "other"), "unseen");
  EXPECT_NE(Get(second, "corrupted"), "0");
  EXPECT_EQ(Get(second, "fsck"), "broken");  // its own store, not the cache
  ExpectFsckClean(cache);
  ExpectFsckClean(src_);

  // The first workspace on the host, with plain git, and its patch.
  std::string ws;
  for (const auto& id : DirectoryEntries(root_.path())) {
    if (HostGit(root_.path() + "/" + id + "/workspace", {"cat-file", "-e", commit}).exit_code ==
        0) {
      ws = root_.path() + "/" + id + "/workspace";
    }
  }
  ASSERT_FALSE(ws.empty());
  RunResult log = HostGit(ws, {"log", "--format=%s"});
  EXPECT_EQ(log.out, "agent\nbase\n") << Describe(log);
  ExpectFsckClean(ws);
  std::string patch = ReadFile(patches.Sub("first.patch")).value_or("");
  EXPECT_NE(patch.find("agent.txt"), std::string::npos) << patch;

  // ls shows the cache; gc keeps it while it was used lately.
  RunResult ls = RunCommand(
      {AteamPath(), "ls", "--workspace-root", root_.path(), "--cache-root", cache_root_});
  EXPECT_EQ(ls.exit_code, 0) << Describe(ls);
  EXPECT_EQ(CountLines(ls.out, src_), 1) << Describe(ls);
  EXPECT_EQ(CountLines(ls.out, "1 cache,"), 1) << Describe(ls);
  RunResult kept = RunCommand({AteamPath(), "gc", "--older-than", "1d", "--workspace-root",
                               root_.path(), "--cache-root", cache_root_});
  EXPECT_EQ(kept.exit_code, 0) << Describe(kept);
  EXPECT_EQ(access(cache.c_str(), F_OK), 0);
  // Unused for two days: `gc --older-than 1d` removes it.
  ASSERT_EQ(RunCommand({"touch", "-d", "2 days ago", cache + ".lock"}).exit_code, 0);
  RunResult gc = RunCommand({AteamPath(), "gc", "--older-than", "1d", "--workspace-root",
                             root_.path(), "--cache-root", cache_root_});
  EXPECT_EQ(gc.exit_code, 0) << Describe(gc);
  EXPECT_EQ(CountLines(gc.out, "removed cache"), 1) << Describe(gc);
  EXPECT_NE(access(cache.c_str(), F_OK), 0) << Describe(gc);
}

// A warm cache with nothing new is used as it is; a commit made in the source after it was
// filled is in the next dispatch's workspace all the same.
TEST_F(RunObjectCacheTest, ACommitAfterTheFillIsSeen) {
  Run({"--rm"}, "true");
  ASSERT_EQ(last_.exit_code, 0) << Describe(last_);
  ASSERT_EQ(RunCommand({"sh", "-c",
                        "cd " + src_ +
                            " && echo two > a.txt && git -c user.name=t -c user.email=t@t "
                            "commit -qam later"})
                .exit_code,
            0);
  Run({"--rm"},
      "echo \"last: $(git log -1 --format=%s)\"; echo \"count: $(git rev-list --count "
      "HEAD)\"; echo \"a: $(cat a.txt)\"");
  ASSERT_EQ(last_.exit_code, 0) << Describe(last_);
  Report seen = ParseReport(last_.out);
  EXPECT_EQ(Get(seen, "last"), "later") << Describe(last_);
  EXPECT_EQ(Get(seen, "count"), "2");
  EXPECT_EQ(Get(seen, "a"), "two");
  ExpectFsckClean(Cache());
}

// A pack cut short on the host: the next dispatch says so, makes the cache anew and works.
TEST_F(RunObjectCacheTest, ACacheThatFailsItsCheckIsMadeAnew) {
  Run({}, "true");
  ASSERT_EQ(last_.exit_code, 0) << Describe(last_);
  std::string cache = Cache();
  ASSERT_FALSE(cache.empty());
  ASSERT_EQ(RunCommand({"sh", "-c",
                        "cd " + cache +
                            "/objects/pack && p=$(ls *.pack) && chmod u+w $p && "
                            "truncate -s 64 $p"})
                .exit_code,
            0);
  Run({}, "echo \"a: $(cat a.txt)\"");
  ASSERT_EQ(last_.exit_code, 0) << Describe(last_);
  EXPECT_EQ(Get(ParseReport(last_.out), "a"), "one");
  EXPECT_EQ(CountLines(last_.err, "failed its check"), 1) << Describe(last_);
  ExpectFsckClean(cache);
}

// Bad input: one line, 125, nothing left.
TEST_F(RunObjectCacheTest, BadInputIsOneLine) {
  TempDir plain;
  last_ = RunAteam({"--workspace-root", root_.path(), "--cache-root", cache_root_, "--repo",
                    plain.path(), "--object-cache"},
                   {"true"});
  EXPECT_EQ(last_.exit_code, 125) << Describe(last_);
  EXPECT_EQ(CountLines(last_.err, "not a local git repository"), 1) << Describe(last_);
  // A cache root somebody else owns: the overflow uid's for root, root's for a normal user.
  std::string foreign = root_.Sub("foreign");
  ASSERT_EQ(mkdir(foreign.c_str(), 0755), 0);
  if (IsRoot()) {
    ASSERT_EQ(chown(foreign.c_str(), 65534, 65534), 0);
  }
  Args options = {
      "--workspace-root", root_.path(), "--cache-root",  IsRoot() ? foreign : std::string("/usr"),
      "--repo",           src_,         "--object-cache"};
  last_ = RunAteam(options, {"true"});
  EXPECT_EQ(last_.exit_code, 125) << Describe(last_);
  EXPECT_EQ(CountLines(last_.err, "--object-cache"), 1) << Describe(last_);
  EXPECT_TRUE(DirectoryEntries(foreign).empty());
}

}  // namespace
}  // namespace sbx::integration::run
