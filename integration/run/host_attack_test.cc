// The host side of `run` under attack: directories prepared by another uid, links planted
// where `run` writes, a FIFO ledger, a caller without HOME, git processes watched for their
// uid, and a connection loop against the route socket. Each attack either fails with exit
// 125 and one line, or the run completes; either way nothing outside the dispatch changed.
// Runs as root and as an unprivileged user, with either backend ($SBX_RUN_BACKEND).
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <map>
#include <string>

#include "integration/run/run_support.h"
#include "integration/run/swapper.h"

namespace sbx::integration::run {
namespace {

constexpr uid_t kOtherUid = 12345;  // a uid no process here runs as

// owner:group:mode:content of every entry below `dir` (content for small regular files).
using Tree = std::map<std::string, std::string>;
void Walk(const std::string& dir, const std::string& rel, Tree& out) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    std::string path = dir + "/" + name;
    struct stat st {};
    if (lstat(path.c_str(), &st) != 0) continue;
    std::string value = std::to_string(st.st_uid) + ":" + std::to_string(st.st_gid) + ":" +
                        std::to_string(st.st_mode);
    if (S_ISREG(st.st_mode)) value += ":" + ReadFile(path).value_or("<unreadable>");
    out[rel + name] = value;
    if (S_ISDIR(st.st_mode)) Walk(path, rel + name + "/", out);
  }
  closedir(d);
}
Tree Snapshot(const std::string& dir) {
  Tree tree;
  struct stat st {};
  if (lstat(dir.c_str(), &st) == 0) {
    tree["."] = std::to_string(st.st_uid) + ":" + std::to_string(st.st_gid) + ":" +
                std::to_string(st.st_mode);
  }
  Walk(dir, "", tree);
  return tree;
}

size_t Lines(const std::string& text) {
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

// Refused: exit 125, exactly one line on stderr, nothing on stdout from the agent.
void ExpectRefused(const RunResult& r, const std::string& mention) {
  EXPECT_EQ(r.exit_code, 125) << Describe(r);
  EXPECT_EQ(Lines(r.err), 1u) << Describe(r);
  EXPECT_NE(r.err.find(mention), std::string::npos) << Describe(r);
  EXPECT_EQ(r.out.find("AGENT-RAN"), std::string::npos) << Describe(r);
}

// The uid the sandbox (and the clone) runs as.

class RunHostAttackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string missing = MissingPrerequisite({"sh", "git"});
    if (!missing.empty()) GTEST_SKIP() << missing;
    // The victim: a file only its owner may read and write, outside every dispatch.
    victim_ = outside_.Sub("victim");
    WriteFile(victim_, "precious\n");
    chmod(victim_.c_str(), 0600);
    before_ = Snapshot(outside_.path());
  }
  void ExpectOutsideUnchanged() { EXPECT_EQ(Snapshot(outside_.path()), before_); }

  void MakeRepo() {
    std::string script = "set -e; cd " + repo_.path() +
                         "; git init -q; echo hello > file.txt; git add file.txt;"
                         " git -c user.name=t -c user.email=t@t commit -q -m one";
    RunResult r = RunCommand({"sh", "-c", script});
    ASSERT_EQ(r.exit_code, 0) << Describe(r);
  }

  TempDir outside_, repo_, out_;
  RootTempDir root_;
  std::string victim_;
  Tree before_;
};

TEST_F(RunHostAttackTest, WorkspaceRootBelowAnotherUsersDirectoryIsRefused) {
  MakeRepo();
  std::string theirs = root_.Sub("theirs");
  ASSERT_EQ(mkdir(theirs.c_str(), 0777), 0);
  // Unprivileged, the directory stays ours but writable by everybody: the same refusal.
  chmod(theirs.c_str(), 0777);
  if (IsRoot()) {
    ASSERT_EQ(chown(theirs.c_str(), kOtherUid, kOtherUid), 0);
  }
  // Their directory links to the victim's; "dispatches" below it would be made there.
  ASSERT_EQ(symlink(outside_.path().c_str(), (theirs + "/dispatches").c_str()), 0);
  Tree root_before = Snapshot(root_.path());
  RunResult r = RunAteam({"--repo", repo_.path(), "--workspace-root", theirs + "/dispatches"},
                         {"sh", "-c", "echo AGENT-RAN"});
  ExpectRefused(r, "Refusing directory");
  EXPECT_EQ(Snapshot(root_.path()), root_before);
  ExpectOutsideUnchanged();
}

TEST_F(RunHostAttackTest, PreCreatedDispatchesDirectoryOfAnotherUidIsRefused) {
  if (!IsRoot()) GTEST_SKIP() << "needs root to create a directory owned by another uid";
  MakeRepo();
  std::string dispatches = root_.Sub("dispatches");
  ASSERT_EQ(mkdir(dispatches.c_str(), 0755), 0);
  ASSERT_EQ(chown(dispatches.c_str(), kOtherUid, kOtherUid), 0);
  Tree root_before = Snapshot(root_.path());
  RunResult r = RunAteam({"--repo", repo_.path(), "--workspace-root", dispatches},
                         {"sh", "-c", "echo AGENT-RAN"});
  ExpectRefused(r, "owned by uid 12345");
  EXPECT_EQ(Snapshot(root_.path()), root_before);
  ExpectOutsideUnchanged();
}

TEST_F(RunHostAttackTest, StatusJsonInsideTheOutDirIsRefusedBeforeTheAgentRuns) {
  MakeRepo();
  // The agent would plant a link to the victim at the status file's name.
  std::string status = out_.Sub("status.json");
  RunResult r = RunAteam({"--repo", repo_.path(), "--workspace-root", root_.path(), "--out",
                          out_.path(), "--status-json", status},
                         {"sh", "-c", "echo AGENT-RAN; ln -s " + victim_ + " " + status});
  ExpectRefused(r, "--status-json");
  ExpectOutsideUnchanged();
}

TEST_F(RunHostAttackTest, StatusJsonNameHoldingALinkOrAFifoIsRefused) {
  MakeRepo();
  TempDir status_dir;
  std::string link = status_dir.Sub("status.json");
  ASSERT_EQ(symlink(victim_.c_str(), link.c_str()), 0);
  RunResult r =
      RunAteam({"--repo", repo_.path(), "--workspace-root", root_.path(), "--status-json", link},
               {"sh", "-c", "echo AGENT-RAN"});
  ExpectRefused(r, "--status-json");
  std::string fifo = status_dir.Sub("fifo.json");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0666), 0);
  RunResult f =
      RunAteam({"--repo", repo_.path(), "--workspace-root", root_.path(), "--status-json", fifo},
               {"sh", "-c", "echo AGENT-RAN"}, WithTimeout(std::chrono::seconds(60)));
  EXPECT_FALSE(f.timed_out);
  ExpectRefused(f, "--status-json");
  ExpectOutsideUnchanged();
}

TEST_F(RunHostAttackTest, StatusJsonIsWrittenAsANewFileAndALinkLaterIsRefused) {
  MakeRepo();
  TempDir status_dir;
  std::string status = status_dir.Sub("status.json");
  RunResult r =
      RunAteam({"--repo", repo_.path(), "--workspace-root", root_.path(), "--status-json", status},
               {"sh", "-c", "echo AGENT-RAN"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  struct stat st {};
  ASSERT_EQ(lstat(status.c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_NE(ReadFile(status).value_or("").find("\"reason\": \"exited\""), std::string::npos);
  // Only the document is left in the directory: the temporary file was renamed into place.
  EXPECT_EQ(Snapshot(status_dir.path()).size(), 2u);
  ASSERT_EQ(unlink(status.c_str()), 0);
  ASSERT_EQ(symlink(victim_.c_str(), status.c_str()), 0);
  RunResult again =
      RunAteam({"--repo", repo_.path(), "--workspace-root", root_.path(), "--status-json", status},
               {"sh", "-c", "echo AGENT-RAN"});
  ExpectRefused(again, "symlink");
  ExpectOutsideUnchanged();
}

TEST_F(RunHostAttackTest, ReusedOutWhoseTopIsALinkIsRefused) {
  MakeRepo();
  std::string out = root_.Sub("out-link");
  ASSERT_EQ(symlink(outside_.path().c_str(), out.c_str()), 0);
  RunResult r = RunAteam({"--repo", repo_.path(), "--workspace-root", root_.Sub("w"), "--out", out},
                         {"sh", "-c", "echo AGENT-RAN; echo x > " + out + "/planted"});
  ExpectRefused(r, "symlink");
  ExpectOutsideUnchanged();
}

TEST_F(RunHostAttackTest, GivenOutTopIsHandedBackAsItWas) {
  MakeRepo();
  struct stat before {};
  ASSERT_EQ(stat(out_.path().c_str(), &before), 0);
  RunResult r =
      RunAteam({"--repo", repo_.path(), "--workspace-root", root_.path(), "--out", out_.path()},
               {"sh", "-c", "echo AGENT-RAN; touch " + out_.path() + "/written"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  struct stat after {};
  ASSERT_EQ(stat(out_.path().c_str(), &after), 0);
  EXPECT_EQ(after.st_uid, before.st_uid);
  EXPECT_EQ(after.st_gid, before.st_gid);
  EXPECT_EQ(after.st_mode, before.st_mode);
  struct stat written {};
  ASSERT_EQ(stat(out_.Sub("written").c_str(), &written), 0) << "the agent could write";
  EXPECT_EQ(written.st_uid, getuid()) << "what the agent wrote is handed back to the caller";
  ExpectOutsideUnchanged();
}

TEST_F(RunHostAttackTest, FifoLedgerIsRefusedWithoutBlocking) {
  MakeRepo();
  std::string fifo = outside_.Sub("ledger.fifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  before_ = Snapshot(outside_.path());
  RunResult r = RunAteam({"--repo", repo_.path(), "--workspace-root", root_.path(), "--ledger",
                          fifo, "--allow", "api.example.test=127.0.0.1:9"},
                         {"sh", "-c", "echo AGENT-RAN"}, WithTimeout(std::chrono::seconds(60)));
  EXPECT_FALSE(r.timed_out);
  ExpectRefused(r, "ledger");
  ExpectOutsideUnchanged();
}

TEST_F(RunHostAttackTest, CallerWithoutHomeGetsAPrivatePlaceOrOneLine) {
  MakeRepo();
  Args argv = {"env", "-u", "HOME", "-u", "XDG_CACHE_HOME", "-u", "XDG_RUNTIME_DIR"};
  Args run = RunArgv({"--repo", repo_.path()}, {"sh", "-c", "echo AGENT-RAN; pwd"});
  argv.insert(argv.end(), run.begin(), run.end());
  struct stat shared_cache {};
  bool had_tmp_cache = stat("/tmp/.cache", &shared_cache) == 0;
  RunResult r = RunCommand(argv);
  if (IsRoot()) {
    // Root's dispatches live in its own directory under /var/tmp, HOME or not.
    ASSERT_EQ(r.exit_code, 0) << Describe(r);
    EXPECT_NE(r.out.find("/var/tmp/ateam-sandbox/dispatches/"), std::string::npos) << r.out;
  } else {
    ExpectRefused(r, "HOME");
  }
  if (!had_tmp_cache) {
    EXPECT_NE(stat("/tmp/.cache", &shared_cache), 0) << "nothing in /tmp/.cache";
  }
}

TEST_F(RunHostAttackTest, GitRunsAsTheSandboxUserAndHooksNeverAsRoot) {
  MakeRepo();
  // A `git` first on PATH records the uid of every git process of the clone, and a
  // core.hooksPath smuggled through the caller's environment would record the hook's.
  TempDir bin, hooks, log_dir;
  chmod(log_dir.path().c_str(), 0777);
  std::string log = log_dir.Sub("uids");
  WriteFile(log, "");
  chmod(log.c_str(), 0666);
  std::string real_git = RunCommand({"sh", "-c", "command -v git"}).out;
  real_git.erase(real_git.find_last_not_of('\n') + 1);
  WriteFile(bin.Sub("git"),
            "#!/bin/sh\necho \"git $(id -u)\" >> " + log + "\nexec " + real_git + " \"$@\"\n");
  chmod(bin.Sub("git").c_str(), 0755);
  for (const char* hook : {"post-checkout", "reference-transaction"}) {
    WriteFile(hooks.Sub(hook), "#!/bin/sh\necho \"hook $(id -u)\" >> " + log + "\n");
    chmod(hooks.Sub(hook).c_str(), 0755);
  }
  const char* path = getenv("PATH");
  RunResult r = RunAteam(
      {"--repo", repo_.path(), "--workspace-root", root_.path()}, {"sh", "-c", "echo AGENT-RAN"},
      WithEnv({"PATH=" + bin.path() + ":" + (path ? path : "/usr/bin:/bin"), "GIT_CONFIG_COUNT=1",
               "GIT_CONFIG_KEY_0=core.hooksPath", "GIT_CONFIG_VALUE_0=" + hooks.path()}));
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  std::string uids = ReadFile(log).value_or("");
  ASSERT_NE(uids.find("git "), std::string::npos) << "the recorder ran: " << uids;
  // One uid for every git and hook: the caller's own, or for root the dispatch's leased uid
  // (neither root's nor the overflow uid).
  std::string expected = std::to_string(getuid());
  if (IsRoot()) {
    const std::string first = uids.substr(0, uids.find('\n'));
    expected = first.substr(first.find(' ') + 1);
    EXPECT_NE(expected, "0");
    EXPECT_NE(expected, "65534");
  }
  size_t start = 0;
  while (start < uids.size()) {
    size_t end = uids.find('\n', start);
    std::string line = uids.substr(start, end - start);
    EXPECT_EQ(line.substr(line.find(' ') + 1), expected) << line;
    start = end == std::string::npos ? uids.size() : end + 1;
  }
  ExpectOutsideUnchanged();
}

// Two local attackers race `run --repo` with inotify while it clones and runs: one as the
// --run-as uid (an agent an earlier dispatch left running, any process of that uid), one as
// a stranger. On every event each swaps what `run` touches next (the workspace's git
// directory, its config and hooks, the out dir's entries, the status document in a shared
// directory) for a symlink to root's files or to a git directory of its own. Each variant
// swaps something else; whatever they win, `run` completes or refuses with one line, root
// never ran git, and nothing outside the dispatch changed. SBX_SWAPPER_ROUNDS repeats it.
TEST_F(RunHostAttackTest, InotifySwappersNeverSteerTheHostSide) {
  if (!IsRoot()) GTEST_SKIP() << "needs root: the attackers run as the --run-as uid and a stranger";
  constexpr uid_t kRunAs = 23456;  // a throwaway uid for the sandbox
  MakeRepo();
  // Root's, readable: the attackers see each dispatch's directory appear in it.
  std::string dispatches = root_.Sub("dispatches");
  ASSERT_EQ(mkdir(dispatches.c_str(), 0755), 0);
  // Everybody's (sticky, as /var/tmp): where the status document goes.
  std::string shared = root_.Sub("shared");
  ASSERT_EQ(mkdir(shared.c_str(), 0755), 0);
  ASSERT_EQ(chmod(shared.c_str(), 01777), 0);
  // Root's directory the links point at, beside root's file.
  std::string victim_dir = outside_.Sub("root-git");
  ASSERT_EQ(mkdir(victim_dir.c_str(), 0700), 0);
  ASSERT_EQ(mkdir((victim_dir + "/hooks").c_str(), 0700), 0);
  WriteFile(victim_dir + "/config", "[core]\n\tbare = false\n");
  before_ = Snapshot(outside_.path());
  Tree repo_before = Snapshot(repo_.path());

  // Every git process and every hook writes its uid here; so does the attacker's fsmonitor.
  TempDir bin, log_dir, patch_dir;
  chmod(log_dir.path().c_str(), 0777);
  std::string log = log_dir.Sub("uids");
  std::string real_git = RunCommand({"sh", "-c", "command -v git"}).out;
  real_git.erase(real_git.find_last_not_of('\n') + 1);
  WriteFile(bin.Sub("git"),
            "#!/bin/sh\necho \"git $(id -u)\" >> " + log + "\nexec " + real_git + " \"$@\"\n");
  chmod(bin.Sub("git").c_str(), 0755);
  std::string recorder = log_dir.Sub("record");
  WriteFile(recorder, "#!/bin/sh\necho \"hook $(id -u)\" >> " + log + "\n");
  chmod(recorder.c_str(), 0755);
  // The attacker's git directory, made anew for each run: a config that names its hooks
  // and commands of its own.
  auto make_theirs = [&](const std::string& dir) {
    WriteFile(dir + "/config", "[core]\n\thooksPath = " + dir +
                                   "/hooks\n\tfsmonitor = " + recorder + "\n\tpager = " + recorder +
                                   "\n[diff]\n\texternal = " + recorder + "\n");
    mkdir((dir + "/hooks").c_str(), 0755);
    for (const char* hook : {"post-checkout", "reference-transaction", "pre-commit"}) {
      symlink(recorder.c_str(), (dir + "/hooks/" + hook).c_str());
    }
    RunCommand({"chown", "-R", std::to_string(kRunAs) + ":" + std::to_string(kRunAs), dir});
  };
  const char* path = getenv("PATH");
  const RunOptions env =
      WithEnv({"PATH=" + bin.path() + ":" + (path != nullptr ? path : "/usr/bin:/bin")});
  const std::string status = shared + "/status.json";
  const std::string agent =
      "echo AGENT-RAN; echo done > \"$ATEAM_OUT/result\"; echo more >> "
      "\"$ATEAM_WORKSPACE/file.txt\"";

  // {what the run-as uid swaps, the write that sets it off}: everything from the clone on,
  // or one path once the checkout is done (`run` guards the clone) or once the agent wrote
  // its result (`run` restores the git metadata, harvests, writes the status document).
  const std::vector<std::pair<std::string, std::string>> variants = {{"", ""},
                                                                     {".git", "index"},
                                                                     {".git/config", "index"},
                                                                     {".git/hooks", "index"},
                                                                     {".git/HEAD", "index"},
                                                                     {".git/index", "index"},
                                                                     {"file.txt", "index"},
                                                                     {".git", "result"},
                                                                     {".git/config", "result"},
                                                                     {".git/hooks", "result"},
                                                                     {".git/HEAD", "result"},
                                                                     {"file.txt", "result"}};
  const char* rounds_env = getenv("SBX_SWAPPER_ROUNDS");
  const int rounds = rounds_env != nullptr ? std::atoi(rounds_env) : 1;
  int completed = 0;
  int refused = 0;
  int swaps = 0;
  for (int round = 0; round < rounds; ++round) {
    for (const auto& [swap, armed_by] : variants) {
      const std::string variant = swap + " after " + armed_by;
      SCOPED_TRACE("variant '" + variant + "', round " + std::to_string(round));
      unlink(status.c_str());
      TempDir theirs;
      make_theirs(theirs.path());
      Tree theirs_before = Snapshot(theirs.path());
      WriteFile(log, "");
      chmod(log.c_str(), 0666);
      Swapper insider({.uid = kRunAs,
                       .gid = kRunAs,
                       .watch = {dispatches, shared},
                       .victim_file = victim_,
                       .victim_dir = victim_dir,
                       .theirs_dir = theirs.path(),
                       .swap_path = swap,
                       .armed_by = armed_by,
                       .plant = {}});
      Swapper stranger({.uid = kOtherUid,
                        .gid = kOtherUid,
                        .watch = {dispatches, shared, root_.path()},
                        .victim_file = victim_,
                        .victim_dir = victim_dir,
                        .theirs_dir = victim_dir,
                        .swap_path = "",
                        .armed_by = "",
                        .plant = {"status.json"}});
      if (!insider.started() || !stranger.started()) {
        GTEST_SKIP() << "can't switch to uid " << kRunAs << " or " << kOtherUid
                     << " (not mapped in this user namespace)";
      }
      RunResult r = RunAteam(
          {"--repo", repo_.path(), "--workspace-root", dispatches, "--run-as",
           std::to_string(kRunAs), "--status-json", status, "--patch", patch_dir.Sub("patch")},
          {"sh", "-c", agent}, env);
      SwapperReport inside = insider.Stop();
      SwapperReport outside = stranger.Stop();
      swaps += inside.swaps;
      EXPECT_EQ(outside.swaps, 0) << outside.Describe();
      // Completed: the agent ran, whatever its exit status. Refused: one line, exit 125.
      // bwrap resolves bind sources by path: a guarded path swapped between the guard's
      // look and bwrap's mount fails bwrap's setup, in bwrap's words and with its exit
      // status 1 (docs/bwrap-compat.md), and the guard then reports what it put back.
      if (r.out.find("AGENT-RAN") != std::string::npos) {
        ++completed;
      } else if (Backend() == "bwrap" && r.exit_code == 1 && r.err.starts_with("bwrap: ")) {
        ++refused;
      } else {
        ++refused;
        EXPECT_EQ(r.exit_code, 125) << Describe(r) << inside.Describe();
        EXPECT_EQ(Lines(r.err), 1u) << Describe(r) << inside.Describe();
      }
      // The status document is root's own file, never written through the stranger's link.
      struct stat st {};
      if (lstat(status.c_str(), &st) == 0 && !S_ISLNK(st.st_mode)) {
        EXPECT_TRUE(S_ISREG(st.st_mode));
        EXPECT_EQ(st.st_uid, 0u);
      }
      // Root made nothing in the attacker's directory and changed nothing there; only a
      // link swapped in during the clone has git (as the run-as uid) write through it.
      for (const auto& [name, value] : Snapshot(theirs.path())) {
        EXPECT_TRUE(value.starts_with(std::to_string(kRunAs) + ":")) << name << " " << value;
      }
      if (!swap.empty()) {
        EXPECT_EQ(Snapshot(theirs.path()), theirs_before);
      }
      std::string uids = ReadFile(log).value_or("");
      for (size_t start = 0; start < uids.size();) {
        size_t end = uids.find('\n', start);
        std::string line = uids.substr(start, end - start);
        EXPECT_EQ(line.substr(line.find(' ') + 1), std::to_string(kRunAs)) << line;
        start = end == std::string::npos ? uids.size() : end + 1;
      }
      EXPECT_NE(uids.find("git "), std::string::npos) << "the recorder ran";
      ExpectOutsideUnchanged();
      EXPECT_EQ(Snapshot(repo_.path()), repo_before);
      std::cout << "swapper '" << variant << "': exit " << r.exit_code << ", insider "
                << inside.Describe() << "; stranger " << outside.Describe() << "; " << r.err;
    }
  }
  std::cout << "swapper: " << completed << " runs completed, " << refused << " refused, " << swaps
            << " swaps won by the run-as uid\n";
  // The attack is real: the run-as uid replaced entries under run's feet.
  EXPECT_GT(swaps, 0);
}

TEST_F(RunHostAttackTest, RouteSocketLoopLeavesABoundedLedger) {
  std::string missing = MissingPrerequisite({"python3"});
  if (!missing.empty()) GTEST_SKIP() << missing;
  MakeRepo();
  std::string ledger = outside_.Sub("ledger.jsonl");
  // 2,000 connects to the route socket's path inside the sandbox, then the count of those
  // that reached anything.
  std::string loop =
      "import socket\n"
      "ok = 0\n"
      "for i in range(2000):\n"
      "    s = socket.socket(socket.AF_UNIX)\n"
      "    try:\n"
      "        s.connect('/run/ateam-tunnel/route-0.sock'); ok += 1\n"
      "    except OSError:\n"
      "        pass\n"
      "    s.close()\n"
      "print('AGENT-RAN connected=%d' % ok)\n";
  RunResult r = RunAteam({"--repo", repo_.path(), "--workspace-root", root_.path(), "--ledger",
                          ledger, "--allow", "api.example.test=127.0.0.1:9"},
                         {"python3", "-c", loop}, WithTimeout(std::chrono::seconds(120)));
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_NE(r.out.find("connected=0"), std::string::npos) << r.out;
  std::string lines = ReadFile(ledger).value_or("");
  EXPECT_LE(Lines(lines), 20u) << lines.substr(0, 2000);
}

}  // namespace
}  // namespace sbx::integration::run
