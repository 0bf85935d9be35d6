// `run --repo SRC --object-cache`: the workspace borrows the objects of the caller's cache
// of SRC, bound read-only. Checked from both sides: what the agent can see and change
// (not the source, not the cache, not another dispatch's objects), what is left on the host
// (the cache and the source `git fsck` clean, a workspace plain git and --patch work on),
// a cache that fails its checks made anew, bad input refused with one line, `ls`/`gc`, and
// a standalone `harvest` that verifies the cache a workspace borrows from.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include <fmt/format.h>

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

// `ls --json`: the dispatch, then the cache, each with its "kind" (parsed as JSON). A
// standalone `harvest` of the kept workspace finds the cache through its alternates alone
// (no --cache-root) and gives the agent's work only; a planted alternates line (a path
// through a symlink, a directory that is no cache, another user's cache root) is refused
// with one line, 125, and no patch.
TEST_F(RunObjectCacheTest, LsJsonListsTheCacheAndHarvestVerifiesWhatItBorrows) {
  std::string missing = MissingPrerequisite({"python3"});
  if (!missing.empty()) GTEST_SKIP() << missing;
  Run({}, "echo agent > agent.txt");
  ASSERT_EQ(last_.exit_code, 0) << Describe(last_);
  std::string cache = Cache();
  ASSERT_FALSE(cache.empty());
  TempDir out;
  RunResult ls = RunCommand(
      {AteamPath(), "ls", "--json", "--workspace-root", root_.path(), "--cache-root", cache_root_});
  ASSERT_EQ(ls.exit_code, 0) << Describe(ls);
  WriteFile(out.Sub("ls.json"), ls.out);
  RunResult parsed =
      RunCommand({"python3", "-c",
                  "import json, sys\n"
                  "for o in json.load(open(sys.argv[1])):\n"
                  "    print(o['kind'], o.get('state'), o.get('path'), o.get('source'),\n"
                  "          o['size_bytes'] > 0, o.get('in_use'), o.get('check_problem'))\n",
                  out.Sub("ls.json")});
  ASSERT_EQ(parsed.exit_code, 0) << Describe(parsed) << ls.out;
  EXPECT_EQ(CountLines(parsed.out, "dispatch finished "), 1) << parsed.out;
  EXPECT_EQ(CountLines(parsed.out, "cache None " + cache + " " + src_ + " True False None"), 1)
      << parsed.out;

  std::string ws;
  for (const auto& id : DirectoryEntries(root_.path())) {
    if (access((root_.path() + "/" + id + "/workspace").c_str(), F_OK) == 0) {
      ws = root_.path() + "/" + id + "/workspace";
    }
  }
  ASSERT_FALSE(ws.empty());
  auto harvest = [&](const std::string& patch) {
    return RunCommand({AteamPath(), "harvest", ws, "-o", out.Sub(patch)});
  };
  RunResult good = harvest("good.patch");
  ASSERT_EQ(good.exit_code, 0) << Describe(good);
  std::string patch = ReadFile(out.Sub("good.patch")).value_or("");
  EXPECT_EQ(CountLines(patch, "+++ b/agent.txt"), 1) << patch;
  EXPECT_EQ(CountLines(patch, "+++ b/a.txt"), 0) << "the cache's objects were not found\n" << patch;

  const std::string alternates = ws + "/.git/objects/info/alternates";
  const std::string name = cache.substr(cache.rfind('/') + 1);
  std::vector<std::string> planted = {root_.Sub("link") + "/" + name + "/objects",
                                      cache_root_ + "/fake/objects"};
  ASSERT_EQ(symlink(cache_root_.c_str(), root_.Sub("link").c_str()), 0);
  ASSERT_EQ(RunCommand({"mkdir", "-p", cache_root_ + "/fake/objects"}).exit_code, 0);
  if (IsRoot()) {
    // A copy of the cache in a root of the overflow uid's.
    std::string other = root_.Sub("other");
    ASSERT_EQ(RunCommand({"sh", "-c",
                          "mkdir -m 0711 " + other + " && cp -a " + cache + " " + other +
                              "/ && chown -R 65534:65534 " + other})
                  .exit_code,
              0);
    planted.push_back(other + "/" + name + "/objects");
  }
  for (size_t i = 0; i < planted.size(); ++i) {
    ASSERT_EQ(RunCommand({"sh", "-c",
                          fmt::format("chmod u+w {0} 2>/dev/null; echo '{1}' > {0}", alternates,
                                      planted[i])})
                  .exit_code,
              0);
    RunResult bad = harvest(fmt::format("bad{}.patch", i));
    EXPECT_EQ(bad.exit_code, 125) << planted[i] << "\n" << Describe(bad);
    EXPECT_EQ(CountLines(bad.err, "borrows objects from " + planted[i]), 1) << Describe(bad);
    EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 1) << Describe(bad);
    EXPECT_NE(access(out.Sub(fmt::format("bad{}.patch", i)).c_str(), F_OK), 0);
  }
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
