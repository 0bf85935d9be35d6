// What `run` leaves in its dispatch root and how `ls`, `gc` and `run --rm` deal with it: the
// root is listed before and after each step.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <set>
#include <string>

#include "integration/run/pty_terminal.h"
#include "integration/run/run_support.h"

namespace sbx::integration::run {
namespace {

using std::chrono::milliseconds;

class RunDispatchDirsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string missing = MissingPrerequisite({"sh", "git", "sleep"});
    if (!missing.empty()) GTEST_SKIP() << missing;
    std::string script = "set -e; cd " + repo_.path() +
                         "; git init -q; echo hello > file.txt; git add file.txt;"
                         " git -c user.name=t -c user.email=t@t commit -q -m one";
    RunResult r = RunCommand({"sh", "-c", script});
    ASSERT_EQ(r.exit_code, 0) << Describe(r);
    root_ = roots_.Sub("dispatches");
  }

  // The names in the dispatch root ("" entries when it does not exist).
  [[nodiscard]] std::set<std::string> Listing() const {
    std::set<std::string> names;
    if (DIR* d = opendir(root_.c_str())) {
      while (dirent* e = readdir(d)) {
        std::string name = e->d_name;
        if (name != "." && name != "..") names.insert(name);
      }
      closedir(d);
    }
    return names;
  }

  RunResult Dispatch(const Args& extra, const Args& command) {
    Args options = {"--repo", repo_.path(), "--workspace-root", root_};
    options.insert(options.end(), extra.begin(), extra.end());
    return RunAteam(options, command);
  }

  // ateam-sandbox ls|gc ... --workspace-root <root>
  RunResult Tool(const Args& args) {
    Args argv = {AteamPath()};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.insert(argv.end(), {"--workspace-root", root_});
    return RunCommand(argv);
  }

  // The one dispatch that appeared since `before`.
  std::string NewId(const std::set<std::string>& before) {
    std::string id;
    for (const auto& name : Listing()) {
      if (before.contains(name)) continue;
      EXPECT_TRUE(id.empty()) << "more than one new dispatch: " << id << " " << name;
      id = name;
    }
    return id;
  }

  void MakeOld(const std::string& id, int days) {
    timespec times[2];
    times[0].tv_sec = times[1].tv_sec = std::time(nullptr) - days * 86400;
    times[0].tv_nsec = times[1].tv_nsec = 0;
    ASSERT_EQ(utimensat(AT_FDCWD, (root_ + "/" + id).c_str(), times, AT_SYMLINK_NOFOLLOW), 0);
  }

  // The line of `ls` output that starts with `id`.
  static std::string LineOf(const std::string& text, const std::string& id) {
    size_t at = text.find(id);
    if (at == std::string::npos) return "";
    return text.substr(at, text.find('\n', at) - at);
  }

  TempDir repo_, out_, patches_;
  RootTempDir roots_;  // never below a directory another uid owns
  std::string root_;
};

TEST_F(RunDispatchDirsTest, RmLeavesNothingInTheRoot) {
  RunResult first = Dispatch({}, {"true"});  // makes the root; its dispatch stays
  ASSERT_EQ(first.exit_code, 0) << Describe(first);
  std::set<std::string> before = Listing();
  ASSERT_EQ(before.size(), 1u);
  RunResult r = Dispatch({"--rm"}, {"sh", "-c", "echo changed > file.txt; mkdir -p d; exit 4"});
  EXPECT_EQ(r.exit_code, 4) << Describe(r);
  EXPECT_EQ(Listing(), before);
}

TEST_F(RunDispatchDirsTest, RmKeepsAGivenOutDir) {
  std::set<std::string> before = Listing();
  RunResult r = Dispatch({"--rm", "--out", out_.path()},
                         {"sh", "-c", "echo report > " + out_.Sub("report.txt")});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(Listing(), before);
  EXPECT_EQ(ReadFile(out_.Sub("report.txt")).value_or(""), "report\n");
}

TEST_F(RunDispatchDirsTest, RmWritesThePatchAndTheStatusFirst) {
  std::set<std::string> before = Listing();
  std::string patch = patches_.Sub("work.patch");
  std::string status = patches_.Sub("status.json");
  RunResult r = Dispatch({"--rm", "--patch", patch, "--status-json", status},
                         {"sh", "-c", "echo changed > file.txt"});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(Listing(), before);
  EXPECT_NE(ReadFile(patch).value_or("").find("+changed"), std::string::npos)
      << ReadFile(patch).value_or("<no patch>");
  EXPECT_NE(ReadFile(status).value_or("").find("\"exit_code\": 0"), std::string::npos);
}

// A sandbox that never starts (here a bwrap that refuses its setup, as the real one does
// when a bind source is swapped under it) ran no agent: its exit status and words are
// passed on, no patch is read from the workspace, and the workspace stays.
TEST_F(RunDispatchDirsTest, SandboxThatNeverStartsWritesNoPatch) {
  std::string fake = patches_.Sub("bwrap");
  WriteFile(fake,
            "#!/bin/sh\necho 'bwrap: Can'\\''t mount tmpfs on /newroot: refused' >&2\nexit 1\n");
  ASSERT_EQ(::chmod(fake.c_str(), 0755), 0);
  std::set<std::string> before = Listing();
  std::string patch = patches_.Sub("work.patch");
  std::string status = patches_.Sub("status.json");
  RunResult r = RunCommand({AteamPath(), "run", "--backend", "bwrap", "--bwrap-path", fake,
                            "--repo", repo_.path(), "--workspace-root", root_, "--patch", patch,
                            "--status-json", status, "--", "sh", "-c", "echo changed > file.txt"});
  EXPECT_EQ(r.exit_code, 1) << Describe(r);
  EXPECT_TRUE(r.err.starts_with("bwrap: Can't mount tmpfs on /newroot: refused\n")) << Describe(r);
  EXPECT_NE(r.err.find("--patch: not written: the sandbox never started"), std::string::npos)
      << Describe(r);
  EXPECT_FALSE(ReadFile(patch).has_value()) << "a patch of a run that never started";
  EXPECT_NE(ReadFile(status).value_or("").find("\"patch_error\": \"not written: the sandbox "
                                               "never started\""),
            std::string::npos)
      << ReadFile(status).value_or("<no status>");
  const std::string id = NewId(before);
  ASSERT_FALSE(id.empty());
  EXPECT_EQ(ReadFile(root_ + "/" + id + "/workspace/file.txt").value_or(""), "hello\n");
}

TEST_F(RunDispatchDirsTest, LsShowsTheExitStatusAndReasonOfAFinishedRun) {
  std::set<std::string> before = Listing();
  RunResult r = Dispatch({}, {"sh", "-c", "exit 3"});
  ASSERT_EQ(r.exit_code, 3) << Describe(r);
  std::string id = NewId(before);
  ASSERT_FALSE(id.empty());
  EXPECT_TRUE(ReadFile(root_ + "/" + id + "/status.json").has_value())
      << "no record in the dispatch directory";
  RunResult ls = Tool({"ls"});
  ASSERT_EQ(ls.exit_code, 0) << Describe(ls);
  std::vector<std::string> words = Words(LineOf(ls.out, id));
  ASSERT_EQ(words.size(), 5u) << ls.out;
  EXPECT_EQ(words[3], "3") << ls.out;
  EXPECT_EQ(words[4], "exited") << ls.out;
  RunResult json = Tool({"ls", "--json"});
  ASSERT_EQ(json.exit_code, 0) << Describe(json);
  EXPECT_NE(json.out.find("\"id\": \"" + id + "\""), std::string::npos) << json.out;
  EXPECT_NE(json.out.find("\"exit_code\": 3, \"reason\": \"exited\""), std::string::npos)
      << json.out;
  EXPECT_EQ(Listing(), [&] {
    auto after = before;
    after.insert(id);
    return after;
  }()) << "ls changed the root";
}

TEST_F(RunDispatchDirsTest, GcOlderThanRemovesOnlyTheOldOnes) {
  std::set<std::string> before = Listing();
  ASSERT_EQ(Dispatch({}, {"true"}).exit_code, 0);
  std::string old_id = NewId(before);
  ASSERT_FALSE(old_id.empty());
  MakeOld(old_id, 10);
  std::set<std::string> with_old = Listing();
  ASSERT_EQ(Dispatch({}, {"true"}).exit_code, 0);
  std::string new_id = NewId(with_old);
  ASSERT_FALSE(new_id.empty());
  RunResult dry = Tool({"gc", "--older-than", "7d", "--dry-run"});
  ASSERT_EQ(dry.exit_code, 0) << Describe(dry);
  EXPECT_NE(dry.out.find("would remove " + old_id), std::string::npos) << dry.out;
  EXPECT_EQ(dry.out.find(new_id), std::string::npos) << dry.out;
  EXPECT_EQ(Listing().size(), before.size() + 2);
  RunResult gc = Tool({"gc", "--older-than", "7d"});
  ASSERT_EQ(gc.exit_code, 0) << Describe(gc);
  EXPECT_NE(gc.out.find("removed " + old_id), std::string::npos) << gc.out;
  EXPECT_NE(gc.out.find("freed "), std::string::npos) << gc.out;
  std::set<std::string> expected = before;
  expected.insert(new_id);
  EXPECT_EQ(Listing(), expected);
  RunResult bad = Tool({"gc", "--older-than", "7"});
  EXPECT_EQ(bad.exit_code, 125) << Describe(bad);
  EXPECT_NE(bad.err.find("--older-than takes a duration"), std::string::npos) << Describe(bad);
  EXPECT_EQ(Listing(), expected);
}

TEST_F(RunDispatchDirsTest, GcNeverRemovesARunningDispatch) {
  std::set<std::string> before = Listing();
  Process run = Process::Start(RunArgv({"--repo", repo_.path(), "--workspace-root", root_},
                                       {ProbeHostPath(), "sleep", "60"}));
  ASSERT_TRUE(run.WaitForOutput("sleeping", milliseconds(20000))) << run.out();
  std::string id = NewId(before);
  ASSERT_FALSE(id.empty());
  MakeOld(id, 30);  // however old it looks
  RunResult ls = Tool({"ls"});
  EXPECT_EQ(Words(LineOf(ls.out, id)).back(), "running") << ls.out;
  for (const Args& args : {Args{"gc"}, Args{"gc", "--older-than", "1d"}}) {
    RunResult gc = Tool(args);
    EXPECT_EQ(gc.exit_code, 0) << Describe(gc);
    EXPECT_NE(gc.out.find("kept " + id), std::string::npos) << gc.out;
    EXPECT_TRUE(Listing().contains(id));
  }
  // Killed outright, `run` leaves its "running" record and no lock: `ls` says it is lost,
  // `gc` may remove it.
  ASSERT_EQ(kill(run.pid(), SIGKILL), 0);
  run.Wait(milliseconds(5000));
  std::string line;
  for (int i = 0; i < 100; ++i) {  // the janitor, which holds the lock too, ends just after
    line = LineOf(Tool({"ls"}).out, id);
    if (line.find("running") == std::string::npos) break;
    usleep(100 * 1000);
  }
  EXPECT_NE(line.find("lost"), std::string::npos) << line;
  RunResult gc = Tool({"gc"});
  EXPECT_EQ(gc.exit_code, 0) << Describe(gc);
  EXPECT_FALSE(Listing().contains(id)) << gc.out;
}

// The workspace is the sandbox user's (root caller) or the caller's own; the agent leaves a
// link to a file it must not touch. gc removes the link, never the file.
TEST_F(RunDispatchDirsTest, GcRemovesALinkInTheWorkspaceNotItsTarget) {
  std::string victim = roots_.Sub("victim");
  WriteFile(victim, "keep me\n");
  struct stat before_st {};
  ASSERT_EQ(stat(victim.c_str(), &before_st), 0);
  std::set<std::string> before = Listing();
  RunResult r = Dispatch(
      {},
      {"sh", "-c", "ln -s " + victim + " link && mkdir d && ln -s " + roots_.path() + " d/dir"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  std::string id = NewId(before);
  ASSERT_FALSE(id.empty());
  RunResult gc = Tool({"gc"});
  ASSERT_EQ(gc.exit_code, 0) << Describe(gc);
  EXPECT_FALSE(Listing().contains(id)) << gc.out;
  EXPECT_EQ(ReadFile(victim).value_or(""), "keep me\n");
  struct stat after_st {};
  ASSERT_EQ(stat(victim.c_str(), &after_st), 0);
  EXPECT_EQ(after_st.st_uid, before_st.st_uid);
  EXPECT_EQ(after_st.st_mode, before_st.st_mode);
}

// On a terminal, one line before the agent starts says where the files are; without one
// (every other test here), stderr holds nothing of it.
TEST_F(RunDispatchDirsTest, OnATerminalRunSaysWhereTheFilesAre) {
  std::set<std::string> before = Listing();
  PtyTerminal terminal(RunArgv({"--repo", repo_.path(), "--workspace-root", root_, "--no-tty"},
                               {"sh", "-c", "echo agent-ran"}),
                       24, 200, {"TERM=xterm"});
  EXPECT_EQ(terminal.Wait(milliseconds(30000)), 0) << terminal.Printable();
  std::string id = NewId(before);
  ASSERT_FALSE(id.empty());
  std::string line = "ateam-sandbox run: dispatch " + id + ": workspace " + root_ + "/" + id +
                     "/workspace, out " + root_ + "/" + id + "/out";
  const std::string& out = terminal.output();
  size_t at = out.find(line);
  EXPECT_NE(at, std::string::npos) << terminal.Printable();
  EXPECT_LT(at, out.find("agent-ran")) << terminal.Printable();
  RunResult piped = Dispatch({"--rm"}, {"true"});
  EXPECT_EQ(piped.err, "") << Describe(piped);
}

}  // namespace
}  // namespace sbx::integration::run
