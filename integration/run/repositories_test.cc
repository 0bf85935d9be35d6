// Repositories as people have them: bare repositories inside a --workspace, submodules,
// linked worktrees, a --rw over git metadata, uncommitted changes, --rev and git-lfs
// pointers. Each test checks what the agent got, what is left on the host and what `run`
// said, and that nothing the agent could leave in git metadata runs on the host.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "integration/run/run_support.h"

namespace sbx::integration::run {
namespace {

// git on the host, as the caller; root trusts the one directory it names (a root caller's
// workspace belongs to the dispatch's uid).
RunResult HostGit(const std::string& dir, const Args& args) {
  Args argv = {"git",
               "-C",
               dir,
               "-c",
               "user.name=host",
               "-c",
               "user.email=host@host",
               "-c",
               "protocol.file.allow=always"};
  if (IsRoot()) {
    argv.emplace_back("-c");
    argv.push_back("safe.directory=*");
  }
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, WithEnv({"GIT_TERMINAL_PROMPT=0", "GIT_EDITOR=true"}));
}

void MustGit(const std::string& dir, const Args& args) {
  RunResult r = HostGit(dir, args);
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
}

std::string JsonString(const std::string& json, const std::string& key) {
  std::string needle = "\"" + key + "\": \"";
  auto start = json.find(needle);
  if (start == std::string::npos) return "";
  start += needle.size();
  return json.substr(start, json.find('"', start) - start);
}

class RunRepositoriesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string missing = MissingPrerequisite({"sh", "git"});
    if (!missing.empty()) GTEST_SKIP() << missing;
    marker_ = marker_dir_.Sub("pwned");
  }

  // A repository at `dir` with a.txt committed on branch main.
  static void MakeRepository(const std::string& dir, const std::string& content = "one\n") {
    MustGit(dir, {"init", "-q", "-b", "main"});
    WriteFile(dir + "/a.txt", content);
    MustGit(dir, {"add", "."});
    MustGit(dir, {"commit", "-q", "-m", "base"});
  }

  RunResult Run(const Args& options, const std::string& script) {
    Args all = {"--workspace-root", root_.path(), "--status-json", status_path_};
    all.insert(all.end(), options.begin(), options.end());
    last_ = RunAteam(all, {"/bin/sh", "-c", script});
    status_ = ReadFile(status_path_).value_or("");
    return last_;
  }

  [[nodiscard]] std::string Payload() const { return "echo pwned >> " + marker_; }
  [[nodiscard]] bool MarkerExists() const { return access(marker_.c_str(), F_OK) == 0; }
  [[nodiscard]] bool Tainted() const {
    return status_.find("\"workspace_tainted\": true") != std::string::npos;
  }

  TempDir marker_dir_, status_dir_, src_;
  RootTempDir root_;
  std::string marker_;
  std::string status_path_ = status_dir_.Sub("status.json");
  RunResult last_;
  std::string status_;
};

// A bare repository that was in the workspace before the run is the user's: its config
// and hooks stay where they are, read-only inside; one the agent makes is neutralised.
TEST_F(RunRepositoriesTest, BareRepositoryInAWorkspaceIsLeftAlone) {
  TempDir ws;
  MustGit(ws.path(), {"init", "-q", "--bare", "try/bare.git"});
  WriteFile(ws.Sub("try/bare.git/hooks/post-receive"), "#!/bin/sh\nexit 0\n");
  std::string config_before = ReadFile(ws.Sub("try/bare.git/config")).value_or("");
  HandToSandboxUser(ws.path());
  Run({"--workspace", ws.path()},
      "P='" + Payload() +
          "'\n"
          "printf '#!/bin/sh\\n%s\\n' \"$P\" > try/bare.git/hooks/post-update; echo \"hook: $?\"\n"
          "git config -f try/bare.git/config core.fsmonitor \"$P\"; echo \"config: $?\"\n");
  ASSERT_EQ(last_.exit_code, 0) << Describe(last_);
  Report r = ParseReport(last_.out);
  EXPECT_NE(Get(r, "hook"), "0") << Describe(last_);
  EXPECT_NE(Get(r, "config"), "0") << Describe(last_);
  EXPECT_FALSE(Tainted()) << status_;
  EXPECT_EQ(ReadFile(ws.Sub("try/bare.git/config")).value_or(""), config_before);
  EXPECT_EQ(ReadFile(ws.Sub("try/bare.git/hooks/post-receive")).value_or(""),
            "#!/bin/sh\nexit 0\n");
  EXPECT_FALSE(ReadFile(ws.Sub("try/bare.git/config.ateam-disabled")).has_value());
  EXPECT_FALSE(ReadFile(ws.Sub("try/bare.git/hooks/post-update")).has_value());

  // A bare repository the agent makes is not the user's: its config goes aside.
  Run({"--workspace", ws.path()},
      "git init -q --bare made.git && git -C made.git config core.fsmonitor \"" + Payload() + "\"");
  ASSERT_EQ(last_.exit_code, 0) << Describe(last_);
  EXPECT_TRUE(Tainted()) << status_;
  EXPECT_TRUE(ReadFile(ws.Sub("made.git/config.ateam-disabled")).has_value());
  EXPECT_EQ(ReadFile(ws.Sub("try/bare.git/config")).value_or(""), config_before);
  HostGit(ws.Sub("made.git"), {"status"});
  EXPECT_FALSE(MarkerExists());
}

// Submodules come ready from the original's own clones of them; git inside needs no
// config write to use them, and their git directories are guarded like the main one.
TEST_F(RunRepositoriesTest, SubmodulesAreClonedFromTheOriginal) {
  TempDir lib, net;
  MakeRepository(lib.path(), "library\n");
  MakeRepository(net.path(), "network\n");
  MakeRepository(src_.path());
  MustGit(src_.path(), {"submodule", "add", "-q", lib.path(), "lib"});
  MustGit(src_.path(), {"submodule", "add", "-q", net.path(), "net"});
  MustGit(src_.path(), {"commit", "-q", "-m", "submodules"});
  // `net` as if it came from a server: its URL is a network one, the original has no clone.
  MustGit(src_.path(),
          {"config", "-f", ".gitmodules", "submodule.net.url", "https://example.invalid/net.git"});
  MustGit(src_.path(), {"commit", "-q", "-am", "net is remote"});
  ASSERT_EQ(RunCommand({"rm", "-rf", src_.Sub(".git/modules/net")}).exit_code, 0);
  std::string script =
      "P='" + Payload() +
      "'\n"
      "echo \"lib: $(cat lib/a.txt)\"\n"
      "git submodule update --init lib >/dev/null 2>&1; echo \"update: $?\"\n"
      "echo \"status: $(git submodule status lib | cut -c1)\"\n"
      "git -C lib config core.fsmonitor \"$P\" 2>/dev/null; echo \"config: $?\"\n"
      "printf '#!/bin/sh\\n%s\\n' \"$P\" > .git/modules/lib/hooks/post-checkout 2>/dev/null;"
      " echo \"hook: $?\"\n"
      "echo change >> lib/a.txt && git -C lib commit -q -am inside; echo \"commit: $?\"\n";
  Run({"--repo", src_.path()}, script);
  ASSERT_EQ(last_.exit_code, 0) << Describe(last_);
  Report r = ParseReport(last_.out);
  EXPECT_EQ(Get(r, "lib"), "library") << Describe(last_);
  EXPECT_EQ(Get(r, "update"), "0") << Describe(last_);
  EXPECT_EQ(Get(r, "status"), " ") << Describe(last_);
  EXPECT_NE(Get(r, "config"), "0");
  EXPECT_NE(Get(r, "hook"), "0");
  EXPECT_EQ(Get(r, "commit"), "0") << Describe(last_);
  EXPECT_FALSE(Tainted()) << status_;
  EXPECT_EQ(CountLines(last_.err, "submodule net"), 1) << Describe(last_);
  EXPECT_NE(last_.err.find("not a local path"), std::string::npos) << Describe(last_);
  std::string ws = JsonString(status_, "workspace");
  ASSERT_FALSE(ws.empty()) << status_;
  // A fresh copy, not hardlinks into the original's objects.
  EXPECT_EQ(ReadFile(ws + "/lib/a.txt").value_or(""), "library\nchange\n");
  EXPECT_EQ(ReadFile(lib.Sub("a.txt")).value_or(""), "library\n");
  HostGit(ws, {"status"});
  HostGit(ws + "/lib", {"status"});
  HostGit(ws + "/lib", {"checkout", "-q", "-b", "x"});
  EXPECT_FALSE(MarkerExists());
}

// A linked worktree: --repo clones it at its own HEAD; --workspace says what to do.
TEST_F(RunRepositoriesTest, LinkedWorktreeAsRepoAndAsWorkspace) {
  MakeRepository(src_.path());
  MustGit(src_.path(), {"branch", "feature"});
  TempDir outside;
  std::string linked = outside.Sub("linked");
  MustGit(src_.path(), {"worktree", "add", "-q", linked, "feature"});
  WriteFile(linked + "/f.txt", "feature\n");
  MustGit(linked, {"add", "f.txt"});
  MustGit(linked, {"commit", "-q", "-m", "on feature"});
  Run({"--repo", linked},
      "echo \"branch: $(git rev-parse --abbrev-ref HEAD)\"; echo \"f: $(cat f.txt)\"");
  ASSERT_EQ(last_.exit_code, 0) << Describe(last_);
  Report r = ParseReport(last_.out);
  EXPECT_EQ(Get(r, "branch"), "feature");
  EXPECT_EQ(Get(r, "f"), "feature");

  Run({"--workspace", linked}, "true");
  EXPECT_EQ(last_.exit_code, 125) << Describe(last_);
  EXPECT_EQ(CountLines(last_.err, "linked worktree"), 1) << Describe(last_);
  EXPECT_NE(last_.err.find("--repo"), std::string::npos) << Describe(last_);
}

// A --rw over a git directory is guarded like the workspace's: a hook planted there never
// runs on the host. A --rw inside one is refused.
TEST_F(RunRepositoriesTest, RwOverAGitDirectoryIsGuarded) {
  MakeRepository(src_.path());
  TempDir ws;
  HandToSandboxUser(ws.path());
  std::string git_dir = src_.Sub(".git");
  Run({"--workspace", ws.path(), "--rw", git_dir},
      "P='" + Payload() + "'\nprintf '#!/bin/sh\\n%s\\n' \"$P\" > " + git_dir +
          "/hooks/post-checkout; chmod +x " + git_dir +
          "/hooks/post-checkout; echo \"hook: $?\"\n" + "git config -f " + git_dir +
          "/config core.fsmonitor \"$P\"; echo \"config: $?\"\n");
  ASSERT_EQ(last_.exit_code, 0) << Describe(last_);
  Report r = ParseReport(last_.out);
  EXPECT_NE(Get(r, "hook"), "0") << Describe(last_);
  EXPECT_NE(Get(r, "config"), "0") << Describe(last_);
  EXPECT_FALSE(ReadFile(git_dir + "/hooks/post-checkout").has_value());
  HostGit(src_.path(), {"checkout", "-q", "-b", "after"});
  HostGit(src_.path(), {"status"});
  EXPECT_FALSE(MarkerExists()) << status_;

  // The whole repository as --rw: its .git is guarded the same way.
  Run({"--workspace", ws.path(), "--rw", src_.path()},
      "P='" + Payload() + "'\nprintf '#!/bin/sh\\n%s\\n' \"$P\" > " + git_dir +
          "/hooks/post-checkout; chmod +x " + git_dir +
          "/hooks/post-checkout; echo \"hook: $?\"\n");
  ASSERT_EQ(last_.exit_code, 0) << Describe(last_);
  EXPECT_NE(Get(ParseReport(last_.out), "hook"), "0") << Describe(last_);
  HostGit(src_.path(), {"checkout", "-q", "main"});
  EXPECT_FALSE(MarkerExists()) << status_;

  Run({"--workspace", ws.path(), "--rw", git_dir + "/hooks"}, "true");
  EXPECT_EQ(last_.exit_code, 125) << Describe(last_);
  EXPECT_EQ(CountLines(last_.err, "inside the git directory"), 1) << Describe(last_);
}

// Uncommitted changes: one notice without the flag (none with -q); carried with it.
TEST_F(RunRepositoriesTest, UncommittedChangesAreSaidOrCarried) {
  MakeRepository(src_.path());
  WriteFile(src_.Sub("a.txt"), "changed\n");
  WriteFile(src_.Sub("new.txt"), "untracked\n");
  std::string script = "echo \"a: $(cat a.txt)\"; echo \"new: $(cat new.txt 2>/dev/null)\"";
  Run({"--repo", src_.path()}, script);
  ASSERT_EQ(last_.exit_code, 0) << Describe(last_);
  EXPECT_EQ(Get(ParseReport(last_.out), "a"), "one");
  EXPECT_EQ(CountLines(last_.err, "uncommitted"), 1) << Describe(last_);
  // git ran as the sandbox's uid for a root caller: nothing of root's home is looked at.
  EXPECT_EQ(last_.err.find(".config/git"), std::string::npos) << Describe(last_);
  // -q: the notice is left out, and nothing else is said.
  Run({"--repo", src_.path(), "-q"}, script);
  ASSERT_EQ(last_.exit_code, 0) << Describe(last_);
  EXPECT_EQ(last_.err, "") << Describe(last_);

  Run({"--repo", src_.path(), "--include-uncommitted"}, script);
  ASSERT_EQ(last_.exit_code, 0) << Describe(last_);
  Report r = ParseReport(last_.out);
  EXPECT_EQ(Get(r, "a"), "changed") << Describe(last_);
  EXPECT_EQ(Get(r, "new"), "");
  EXPECT_EQ(CountLines(last_.err, "untracked"), 1) << Describe(last_);

  Run({"--repo", src_.path(), "--include-untracked"}, script);
  ASSERT_EQ(last_.exit_code, 0) << Describe(last_);
  r = ParseReport(last_.out);
  EXPECT_EQ(Get(r, "a"), "changed") << Describe(last_);
  EXPECT_EQ(Get(r, "new"), "untracked") << Describe(last_);
  // The source is as it was.
  EXPECT_EQ(ReadFile(src_.Sub("a.txt")).value_or(""), "changed\n");
  RunResult status = HostGit(src_.path(), {"status", "--porcelain"});
  EXPECT_EQ(status.out, " M a.txt\n?? new.txt\n") << Describe(status);
}

// The source's work tree is compared through a copy of its own index: a file staged there
// counts, a change as new as the index (racily clean, same size) is still seen, the copy
// is gone before the agent starts, and the source's index is left as it was.
TEST_F(RunRepositoriesTest, SourceIndexDecidesWhatIsUncommitted) {
  MakeRepository(src_.path());
  WriteFile(src_.Sub("staged.txt"), "staged\n");
  MustGit(src_.path(), {"add", "staged.txt"});
  WriteFile(src_.Sub("a.txt"), "two\n");  // the size of "one\n", written right after the index
  const std::string index_before = ReadFile(src_.Sub(".git/index")).value_or("<none>");
  struct stat before {};
  ASSERT_EQ(::stat(src_.Sub(".git/index").c_str(), &before), 0);
  std::string script =
      "echo \"a: $(cat a.txt)\"; echo \"staged: $(cat staged.txt 2>/dev/null)\"; "
      "echo \"copy: $(ls .git | grep -c ateam-source-index)\"";
  Run({"--repo", src_.path(), "--include-uncommitted"}, script);
  ASSERT_EQ(last_.exit_code, 0) << Describe(last_);
  Report r = ParseReport(last_.out);
  EXPECT_EQ(Get(r, "a"), "two") << Describe(last_);
  EXPECT_EQ(Get(r, "staged"), "staged") << Describe(last_);
  EXPECT_EQ(Get(r, "copy"), "0") << Describe(last_);
  EXPECT_EQ(last_.err, "") << Describe(last_);
  struct stat after {};
  ASSERT_EQ(::stat(src_.Sub(".git/index").c_str(), &after), 0);
  EXPECT_EQ(ReadFile(src_.Sub(".git/index")).value_or("<none>"), index_before);
  EXPECT_EQ(after.st_mtim.tv_sec, before.st_mtim.tv_sec);
  EXPECT_EQ(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec);
}

TEST_F(RunRepositoriesTest, NotARepositoryGetsOneLine) {
  TempDir plain;
  WriteFile(plain.Sub("f"), "x\n");
  Run({"--repo", plain.path()}, "true");
  EXPECT_EQ(last_.exit_code, 125) << Describe(last_);
  EXPECT_EQ(CountLines(last_.err, "not a git repository"), 1) << Describe(last_);
  EXPECT_EQ(last_.err.find("does not exist"), std::string::npos) << Describe(last_);
}

TEST_F(RunRepositoriesTest, RevStartsFromABranchATagOrACommit) {
  MakeRepository(src_.path());
  RunResult first = HostGit(src_.path(), {"rev-parse", "HEAD"});
  MustGit(src_.path(), {"tag", "v1"});
  MustGit(src_.path(), {"checkout", "-q", "-b", "feature"});
  WriteFile(src_.Sub("a.txt"), "two\n");
  MustGit(src_.path(), {"commit", "-q", "-am", "second"});
  MustGit(src_.path(), {"checkout", "-q", "main"});
  std::string script =
      "echo \"a: $(cat a.txt)\"; echo \"branch: $(git rev-parse --abbrev-ref HEAD)\";"
      " echo \"head: $(git rev-parse HEAD)\"";
  Run({"--repo", src_.path(), "--rev", "feature"}, script);
  ASSERT_EQ(last_.exit_code, 0) << Describe(last_);
  Report r = ParseReport(last_.out);
  EXPECT_EQ(Get(r, "a"), "two");
  EXPECT_EQ(Get(r, "branch"), "feature");

  Run({"--repo", src_.path(), "--rev", "v1"}, script);
  ASSERT_EQ(last_.exit_code, 0) << Describe(last_);
  r = ParseReport(last_.out);
  EXPECT_EQ(Get(r, "a"), "one");
  EXPECT_EQ(Get(r, "head") + "\n", first.out);
  EXPECT_EQ(JsonString(status_, "base_commit") + "\n", first.out) << status_;

  Run({"--repo", src_.path(), "--rev", first.out.substr(0, 12)}, script);
  ASSERT_EQ(last_.exit_code, 0) << Describe(last_);
  EXPECT_EQ(Get(ParseReport(last_.out), "head") + "\n", first.out);

  Run({"--repo", src_.path(), "--rev", "no-such-thing"}, script);
  EXPECT_EQ(last_.exit_code, 125) << Describe(last_);
  EXPECT_EQ(CountLines(last_.err, "--rev no-such-thing"), 1) << Describe(last_);
}

TEST_F(RunRepositoriesTest, LfsPointersGetOneNotice) {
  MakeRepository(src_.path());
  WriteFile(src_.Sub(".gitattributes"), "*.bin filter=lfs diff=lfs merge=lfs -text\n");
  WriteFile(src_.Sub("big.bin"),
            "version https://git-lfs.github.com/spec/v1\n"
            "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\n"
            "size 12345\n");
  MustGit(src_.path(), {"add", "."});
  MustGit(src_.path(), {"commit", "-q", "-m", "lfs"});
  Run({"--repo", src_.path()}, "head -c 7 big.bin; echo");
  ASSERT_EQ(last_.exit_code, 0) << Describe(last_);
  EXPECT_EQ(last_.out, "version\n");
  EXPECT_EQ(CountLines(last_.err, "git-lfs"), 1) << Describe(last_);
}

}  // namespace
}  // namespace sbx::integration::run
