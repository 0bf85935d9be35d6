// What people who run many dispatches need around them: an --out that does not exist yet
// is made and handed back; `harvest --base` takes any revision; labels on a dispatch,
// listed and selected by `ls` and `gc`; `rm ID` removes one dispatch; one run at a time
// per --workspace. Each step is checked by what it leaves on the host.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <set>
#include <string>

#include "integration/run/run_support.h"

namespace sbx::integration::run {
namespace {

using std::chrono::milliseconds;

class RunDispatchAdminTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string missing = MissingPrerequisite({"sh", "git"});
    if (!missing.empty()) GTEST_SKIP() << missing;
    ASSERT_EQ(MakeOneCommitRepository(repo_.path()), 0);
    root_ = roots_.Sub("dispatches");
  }

  [[nodiscard]] std::set<std::string> Listing() const {
    std::vector<std::string> names = DirectoryEntries(root_);
    return {names.begin(), names.end()};
  }

  RunResult Dispatch(const Args& extra, const Args& command) {
    Args options = {"--repo", repo_.path(), "--workspace-root", root_};
    options.insert(options.end(), extra.begin(), extra.end());
    return RunAteam(options, command);
  }

  // The id of the one dispatch made by `extra` (ASSERTs in the caller see "" on failure).
  std::string DispatchId(const Args& extra) {
    std::set<std::string> before = Listing();
    RunResult r = Dispatch(extra, {"true"});
    EXPECT_EQ(r.exit_code, 0) << Describe(r);
    std::string id;
    for (const auto& name : Listing()) {
      if (!before.contains(name)) id = name;
    }
    return id;
  }

  // ateam-sandbox ls|gc|rm ... --workspace-root <root>
  RunResult Tool(const Args& args) {
    Args argv = {AteamPath()};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.insert(argv.end(), {"--workspace-root", root_});
    return RunCommand(argv);
  }

  TempDir repo_;
  RootTempDir roots_;  // never below a directory another uid owns
  std::string root_;
};

// The out dir is made where it was named (its parent is the caller's), written by the
// agent, and afterwards the caller's with all that is in it, like a given one. A missing
// parent is not made: one line, 125, nothing created; neither is one that a failed run
// made.
TEST_F(RunDispatchAdminTest, AMissingOutDirIsMadeAndHandedBack) {
  std::string out = roots_.Sub("new-out");
  RunResult r = Dispatch({"--out", out}, {"sh", "-c", "echo report > \"$ATEAM_OUT/report.txt\""});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(ReadFile(out + "/report.txt").value_or(""), "report\n");
  struct stat dir {};
  struct stat file {};
  ASSERT_EQ(stat(out.c_str(), &dir), 0);
  ASSERT_EQ(stat((out + "/report.txt").c_str(), &file), 0);
  EXPECT_TRUE(S_ISDIR(dir.st_mode));
  EXPECT_EQ(dir.st_uid, getuid());
  EXPECT_EQ(file.st_uid, getuid());
  EXPECT_EQ(dir.st_mode & 07022, 0u) << std::oct << dir.st_mode;

  // A run that fails after making it, before the agent starts, takes it away again.
  std::string unused = roots_.Sub("unused-out");
  RunResult failed = Dispatch({"--out", unused, "--ledger", unused + "/ledger.jsonl"}, {"true"});
  EXPECT_EQ(failed.exit_code, 125) << Describe(failed);
  EXPECT_NE(failed.err.find("must not be inside"), std::string::npos) << Describe(failed);
  EXPECT_EQ(access(unused.c_str(), F_OK), -1) << "the --out this run made stayed";

  std::string deep = roots_.Sub("no-such-parent/out");
  RunResult refused = Dispatch({"--out", deep}, {"true"});
  EXPECT_EQ(refused.exit_code, 125) << Describe(refused);
  EXPECT_NE(refused.err.find("--out"), std::string::npos) << Describe(refused);
  EXPECT_EQ(access(roots_.Sub("no-such-parent").c_str(), F_OK), -1);
}

// harvest --base names the start by any revision: HEAD~1, a tag (annotated or not) and an
// abbreviated id each give the last commit; what names no commit, or could be read as an
// option, is refused with one line and no file.
TEST_F(RunDispatchAdminTest, HarvestBaseTakesAnyRevision) {
  std::string script = "set -e; cd " + repo_.path() +
                       "; export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=t"
                       " GIT_COMMITTER_EMAIL=t@t; git tag -a -m start v1; git tag light;"
                       " echo second > second.txt; git add second.txt;"
                       " git commit -q -m 'the second commit'";
  RunResult made = RunCommand({"sh", "-c", script});
  ASSERT_EQ(made.exit_code, 0) << Describe(made);
  RunResult short_id = RunCommand({"git", "-C", repo_.path(), "rev-parse", "--short", "HEAD~1"});
  ASSERT_EQ(short_id.exit_code, 0) << Describe(short_id);
  std::string abbreviated = Words(short_id.out).front();
  TempDir patches;
  for (const std::string& base :
       {std::string("HEAD~1"), std::string("v1"), std::string("light"), abbreviated}) {
    std::string patch = patches.Sub("work.patch");
    RunResult r = RunCommand({AteamPath(), "harvest", repo_.path(), "--base", base, "-o", patch});
    ASSERT_EQ(r.exit_code, 0) << base << ": " << Describe(r);
    std::string text = ReadFile(patch).value_or("");
    EXPECT_NE(text.find("Subject: [PATCH] the second commit"), std::string::npos) << base << text;
    EXPECT_NE(text.find("+second"), std::string::npos) << base << text;
  }
  for (const char* bad : {"no-such-branch", "--output=/tmp/x", "HEAD\nHEAD"}) {
    RunResult r = RunCommand(
        {AteamPath(), "harvest", repo_.path(), "--base", bad, "-o", patches.Sub("bad.patch")});
    EXPECT_EQ(r.exit_code, 125) << bad << ": " << Describe(r);
    EXPECT_NE(r.err.find("--base"), std::string::npos) << Describe(r);
    EXPECT_EQ(access(patches.Sub("bad.patch").c_str(), F_OK), -1) << bad;
  }
}

// Labels go into the record; ls shows them and selects by them, gc removes only what its
// labels select; a bad label is refused before anything is made.
TEST_F(RunDispatchAdminTest, LabelsAreListedAndSelectWhatLsAndGcTouch) {
  std::string a = DispatchId({"--label", "team=infra", "--label", "job=1"});
  std::string b = DispatchId({"--label", "team=web"});
  std::string c = DispatchId({});
  ASSERT_FALSE(a.empty() || b.empty() || c.empty());
  EXPECT_NE(ReadFile(root_ + "/" + a + "/status.json")
                .value_or("")
                .find(R"("labels": {"team": "infra", "job": "1"})"),
            std::string::npos);

  RunResult all = Tool({"ls"});
  ASSERT_EQ(all.exit_code, 0) << Describe(all);
  EXPECT_NE(all.out.find("LABELS"), std::string::npos) << all.out;
  EXPECT_NE(all.out.find("team=infra,job=1"), std::string::npos) << all.out;
  RunResult infra = Tool({"ls", "--label", "team=infra"});
  ASSERT_EQ(infra.exit_code, 0) << Describe(infra);
  EXPECT_NE(infra.out.find(a), std::string::npos) << infra.out;
  EXPECT_EQ(infra.out.find(b), std::string::npos) << infra.out;
  EXPECT_EQ(infra.out.find(c), std::string::npos) << infra.out;
  RunResult both = Tool({"ls", "--json", "--label", "team=infra", "--label", "job=2"});
  EXPECT_EQ(both.out, "[]\n") << Describe(both);
  RunResult json = Tool({"ls", "--json", "--label", "team=web"});
  EXPECT_NE(json.out.find(R"("labels": {"team": "web"})"), std::string::npos) << json.out;

  RunResult gc = Tool({"gc", "--label", "team=web"});
  ASSERT_EQ(gc.exit_code, 0) << Describe(gc);
  EXPECT_NE(gc.out.find("removed " + b), std::string::npos) << gc.out;
  EXPECT_EQ(Listing(), (std::set<std::string>{a, c})) << gc.out;

  std::set<std::string> before = Listing();
  RunResult bad = Dispatch({"--label", "team=a b"}, {"true"});
  EXPECT_EQ(bad.exit_code, 125) << Describe(bad);
  EXPECT_NE(bad.err.find("--label"), std::string::npos) << Describe(bad);
  EXPECT_EQ(Listing(), before);
  RunResult bad_filter = Tool({"gc", "--label", "team"});
  EXPECT_EQ(bad_filter.exit_code, 125) << Describe(bad_filter);
  EXPECT_EQ(Listing(), before);
}

// rm ID removes that dispatch and no other; a running one is refused and stays.
TEST_F(RunDispatchAdminTest, RmRemovesExactlyOneAndNeverARunningOne) {
  std::string x = DispatchId({});
  std::string y = DispatchId({});
  ASSERT_FALSE(x.empty() || y.empty());
  RunResult rm = Tool({"rm", x});
  ASSERT_EQ(rm.exit_code, 0) << Describe(rm);
  EXPECT_NE(rm.out.find("removed " + x), std::string::npos) << rm.out;
  EXPECT_EQ(Listing(), std::set<std::string>{y});
  RunResult again = Tool({"rm", x});
  EXPECT_EQ(again.exit_code, 125) << Describe(again);
  EXPECT_NE(again.err.find("no dispatch " + x), std::string::npos) << Describe(again);

  std::set<std::string> before = Listing();
  Process run = Process::Start(RunArgv({"--repo", repo_.path(), "--workspace-root", root_},
                                       {ProbeHostPath(), "sleep", "60"}));
  ASSERT_TRUE(run.WaitForOutput("sleeping", milliseconds(20000))) << run.out();
  std::string running;
  for (const auto& name : Listing()) {
    if (!before.contains(name)) running = name;
  }
  ASSERT_FALSE(running.empty());
  RunResult refused = Tool({"rm", running});
  EXPECT_EQ(refused.exit_code, 125) << Describe(refused);
  EXPECT_NE(refused.err.find("still going"), std::string::npos) << Describe(refused);
  EXPECT_TRUE(Listing().contains(running));
  ASSERT_EQ(kill(run.pid(), SIGTERM), 0);
  run.Wait(milliseconds(20000));
  RunResult after = Tool({"rm", running});
  EXPECT_EQ(after.exit_code, 0) << Describe(after);
  EXPECT_EQ(Listing(), std::set<std::string>{y});
}

// A second run on a --workspace that a running dispatch uses is refused with one line and
// 125, and changes nothing: not the workspace, its owner or mode, nor the dispatch root.
// Once the first run has ended, the workspace is free again.
TEST_F(RunDispatchAdminTest, ASecondRunOnAWorkspaceInUseIsRefused) {
  TempDir ws;
  WriteFile(ws.Sub("file.txt"), "as it was\n");
  HandToSandboxUser(ws.path());
  Process first =
      Process::Start(RunArgv({"--workspace", ws.path(), "--workspace-root", root_, "--no-tty"},
                             {ProbeHostPath(), "sleep", "60"}));
  ASSERT_TRUE(first.WaitForOutput("sleeping", milliseconds(20000))) << first.out();
  struct stat during {};
  ASSERT_EQ(stat(ws.path().c_str(), &during), 0);
  std::vector<std::string> names = DirectoryEntries(ws.path());
  std::set<std::string> dispatches = Listing();

  RunResult second = RunAteam({"--workspace", ws.path(), "--workspace-root", root_},
                              {"sh", "-c", "echo second > file.txt; touch marker"});
  EXPECT_EQ(second.exit_code, 125) << Describe(second);
  EXPECT_NE(second.err.find("another dispatch is running in it"), std::string::npos)
      << Describe(second);
  EXPECT_EQ(second.err.find('\n'), second.err.size() - 1) << Describe(second);
  struct stat after {};
  ASSERT_EQ(stat(ws.path().c_str(), &after), 0);
  EXPECT_EQ(after.st_uid, during.st_uid);
  EXPECT_EQ(after.st_gid, during.st_gid);
  EXPECT_EQ(after.st_mode, during.st_mode);
  EXPECT_EQ(DirectoryEntries(ws.path()), names);
  EXPECT_EQ(ReadFile(ws.Sub("file.txt")).value_or(""), "as it was\n");
  EXPECT_EQ(Listing(), dispatches);

  ASSERT_EQ(kill(first.pid(), SIGTERM), 0);
  first.Wait(milliseconds(20000));
  RunResult third = RunAteam({"--workspace", ws.path(), "--workspace-root", root_},
                             {"sh", "-c", "echo third > file.txt"});
  EXPECT_EQ(third.exit_code, 0) << Describe(third);
  EXPECT_EQ(ReadFile(ws.Sub("file.txt")).value_or(""), "third\n");
}

}  // namespace
}  // namespace sbx::integration::run
