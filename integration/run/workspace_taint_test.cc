// What an agent leaves in the workspace's git metadata must not run on the host: each
// attack either fails inside (config and hooks are read-only there) or is undone after the
// dispatch; then the test runs git in the workspace as a user would and checks that the
// payload never ran. Also: agents still commit, with the configured identity, and the
// harvested patch applies to a fresh clone of the original.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "integration/run/run_support.h"

namespace sbx::integration::run {
namespace {

std::string JsonString(const std::string& json, const std::string& key) {
  std::string needle = "\"" + key + "\": \"";
  auto start = json.find(needle);
  if (start == std::string::npos) return "";
  start += needle.size();
  return json.substr(start, json.find('"', start) - start);
}

// git on the host, as the caller, trusting nothing by name: the workspace is handed back to
// the caller after the dispatch (a root caller's too), so git's own ownership check passes
// with no safe.directory, and a "dubious ownership" refusal fails the test.
RunResult HostGit(const std::string& dir, const Args& args) {
  Args argv = {"git", "-C", dir, "-c", "user.name=host", "-c", "user.email=host@host"};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, WithEnv({"GIT_TERMINAL_PROMPT=0", "GIT_EDITOR=true"}));
}

void MustGit(const std::string& dir, const Args& args) {
  RunResult r = HostGit(dir, args);
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
}

class RunWorkspaceTaintTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string missing = MissingPrerequisite({"sh", "git"});
    if (!missing.empty()) GTEST_SKIP() << missing;
    MustGit(origin_.path(), {"init", "-q", "-b", "main"});
    WriteFile(origin_.Sub("a.txt"), "one\ntwo\nthree\n");
    WriteFile(origin_.Sub("b.txt"), "bee\n");
    MustGit(origin_.path(), {"add", "."});
    MustGit(origin_.path(), {"commit", "-q", "-m", "base"});
    marker_ = marker_dir_.Sub("pwned");
  }

  // The payload of every attack: it leaves the marker when it runs on the host (inside
  // the sandbox, the marker's directory does not exist).
  [[nodiscard]] std::string Payload() const { return "echo pwned >> " + marker_; }

  // One dispatch of `script` on a fresh clone; returns the workspace.
  std::string Dispatch(const std::string& script, const Args& extra = {}) {
    Args options = {"--repo",     origin_.path(),  "--workspace-root",
                    root_.path(), "--status-json", status_path_};
    options.insert(options.end(), extra.begin(), extra.end());
    last_ = RunAteam(options, {"/bin/sh", "-c", script});
    status_ = ReadFile(status_path_).value_or("");
    return JsonString(status_, "workspace");
  }

  // What a person does next in the workspace, on the host.
  void UseWorkspaceOnHost(const std::string& ws) {
    RunResult status = HostGit(ws, {"status"});
    EXPECT_EQ(status.exit_code, 0) << "the caller's git refused its workspace\n"
                                   << Describe(status);
    HostGit(ws, {"diff"});
    HostGit(ws, {"log", "-p"});
    HostGit(ws, {"commit", "--allow-empty", "-q", "-m", "x"});
    HostGit(ws, {"checkout", "-q", "-b", "t"});
    HostGit(ws, {"status"});
  }

  [[nodiscard]] bool MarkerExists() const { return access(marker_.c_str(), F_OK) == 0; }

  TempDir origin_, marker_dir_, status_dir_;
  RootTempDir root_;  // --workspace-root: never below a directory another uid owns
  std::string marker_;
  std::string status_path_ = status_dir_.Sub("status.json");
  RunResult last_;
  std::string status_;
};

// Without the runtime, the payload does run: the attacks below are real.
TEST_F(RunWorkspaceTaintTest, PayloadRunsWhenNothingProtects) {
  TempDir clone;
  MustGit(clone.path(), {"clone", "-q", origin_.path(), "."});
  MustGit(clone.path(), {"config", "core.fsmonitor", Payload() + "; false"});
  WriteFile(clone.Sub("a.txt"), "changed\n");
  HostGit(clone.path(), {"status"});
  EXPECT_TRUE(MarkerExists());
}

TEST_F(RunWorkspaceTaintTest, GitMetadataIsReadOnlyInsideAndCommitsWork) {
  std::string script =
      "git config core.fsmonitor x; echo \"config: $?\"\n"
      "touch .git/hooks/pre-commit; echo \"hook: $?\"\n"
      "echo y > a.txt && git add a.txt && git commit -q -m inside; echo \"commit: $?\"\n"
      "git checkout -q -b side; echo \"branch: $?\"\n"
      "echo \"ident: $(git log -1 --format='%an <%ae>|%cn <%ce>')\"\n";
  std::string ws = Dispatch(script);
  ASSERT_EQ(last_.exit_code, 0) << Describe(last_);
  Report r = ParseReport(last_.out);
  EXPECT_NE(Get(r, "config"), "0") << Describe(last_);
  EXPECT_NE(Get(r, "hook"), "0");
  EXPECT_EQ(Get(r, "commit"), "0") << Describe(last_);
  EXPECT_EQ(Get(r, "branch"), "0");
  EXPECT_EQ(Get(r, "ident"),
            "ateam agent <agent@ateam-sandbox.invalid>|ateam agent <agent@ateam-sandbox.invalid>");
  EXPECT_NE(status_.find("\"workspace_tainted\": false"), std::string::npos) << status_;
  EXPECT_EQ(JsonString(status_, "base_commit").size(), 40u) << status_;
  RunResult log = HostGit(ws, {"log", "-1", "--format=%s %an"});
  EXPECT_EQ(log.out, "inside ateam agent\n") << Describe(log);
}

TEST_F(RunWorkspaceTaintTest, IdentityCanBeSetWithSetenv) {
  Dispatch("git commit -q --allow-empty -m x && git log -1 --format='ident: %an <%ae>'",
           {"--setenv", "GIT_AUTHOR_NAME=Ada", "--setenv", "GIT_AUTHOR_EMAIL=ada@example.org"});
  ASSERT_EQ(last_.exit_code, 0) << Describe(last_);
  EXPECT_EQ(Get(ParseReport(last_.out), "ident"), "Ada <ada@example.org>");
}

// A --workspace keeps the git metadata its owner gave it: the config and hooks stay as
// they were, only what the agent added goes.
TEST_F(RunWorkspaceTaintTest, GivenWorkspaceKeepsItsOwnConfigAndHooks) {
  TempDir ws;
  MustGit(ws.path(), {"clone", "-q", origin_.path(), "."});
  MustGit(ws.path(), {"config", "owner.setting", "kept"});
  WriteFile(ws.Sub(".git/hooks/pre-push"), "#!/bin/sh\nexit 0\n");
  // Root's own tree as it is: `run` lends it to the dispatch's leased uid and hands it back.
  std::string config_before = ReadFile(ws.Sub(".git/config")).value_or("");
  std::string script = "P='" + Payload() +
                       "'\n"
                       "git config core.fsmonitor \"$P; false\"; echo \"config: $?\"\n"
                       "printf '#!/bin/sh\\n%s\\n' \"$P\" > .git/hooks/post-checkout\n"
                       "echo \"hook: $?\"\n"
                       "git init -q nested && git -C nested config core.fsmonitor \"$P; false\"\n"
                       "echo changed > a.txt; git commit -q -am inside; echo \"commit: $?\"\n";
  last_ = RunAteam({"--workspace", ws.path(), "--status-json", status_path_},
                   {"/bin/sh", "-c", script});
  status_ = ReadFile(status_path_).value_or("");
  ASSERT_EQ(last_.exit_code, 0) << Describe(last_);
  Report r = ParseReport(last_.out);
  EXPECT_NE(Get(r, "config"), "0") << Describe(last_);
  EXPECT_NE(Get(r, "hook"), "0");
  EXPECT_EQ(Get(r, "commit"), "0") << Describe(last_);
  EXPECT_EQ(JsonString(status_, "base_commit").size(), 40u) << status_;
  EXPECT_NE(status_.find("nested/.git"), std::string::npos) << status_;
  EXPECT_EQ(ReadFile(ws.Sub(".git/config")).value_or(""), config_before);
  EXPECT_EQ(ReadFile(ws.Sub(".git/hooks/pre-push")).value_or(""), "#!/bin/sh\nexit 0\n");
  EXPECT_FALSE(ReadFile(ws.Sub(".git/hooks/post-checkout")).has_value());
  EXPECT_EQ(ReadFile(ws.Sub("nested/.git/config")).value_or("").find(marker_), std::string::npos);
  UseWorkspaceOnHost(ws.path());
  HostGit(ws.Sub("nested"), {"status"});
  EXPECT_FALSE(MarkerExists());
}

struct Attack {
  const char* name;
  // Shell text run inside; $P is the payload, $M the marker path.
  const char* script;
  bool undone_after;  // the attempt gets past the sandbox and is reported and undone
};

const Attack kAttacks[] = {
    {"fsmonitor", "git config core.fsmonitor \"$P; false\"; echo changed > a.txt", false},
    {"hooks",
     "for h in post-checkout pre-commit; do printf '#!/bin/sh\\n%s\\n' \"$P\" > .git/hooks/$h;"
     " chmod +x .git/hooks/$h; done",
     false},
    {"pager", "git config core.pager \"$P; cat\"", false},
    {"editor", "git config core.editor \"$P; true\"", false},
    {"ssh_command", "git config core.sshCommand \"$P\"", false},
    {"diff_external",
     "printf '#!/bin/sh\\n%s\\n' \"$P\" > ext.sh; chmod +x ext.sh;"
     " git config diff.external \"$PWD/ext.sh\"; echo changed > a.txt",
     false},
    {"filter_driver",
     "git config filter.evil.clean \"$P; cat\"; git config filter.evil.smudge \"$P; cat\";"
     " echo '* filter=evil' > .gitattributes; echo changed > a.txt",
     false},
    {"textconv",
     "git config diff.evil.textconv \"$P; cat\"; echo '* diff=evil' > .gitattributes;"
     " mkdir -p .git/info; echo '* diff=evil' > .git/info/attributes; echo changed > a.txt;"
     " git add -A; git commit -q -m t",
     false},
    {"alias", "git config alias.status \"!$P\"; git config alias.st \"!$P\"", false},
    {"include_path",
     "printf '[core]\\n\\tfsmonitor = \"%s; false\"\\n' \"$P\" > evil.cfg;"
     " git config include.path \"$PWD/evil.cfg\"; echo changed > a.txt",
     false},
    {"credential_helper", "git config credential.helper \"!$P\"", false},
    {"commondir",
     "mkdir -p evil && cp -r .git/* evil/ 2>/dev/null; rm -f evil/config;"
     " printf '[core]\\n\\tfsmonitor = \"%s; false\"\\n' \"$P\" > evil/config;"
     " echo \"$PWD/evil\" > .git/commondir; echo changed > a.txt",
     true},
    {"embedded_repository",
     "git init -q sub && git -C sub config core.fsmonitor \"$P; false\" && echo x > sub/f &&"
     " git -C sub add f && git -C sub commit -q -m s && git add sub && git commit -q -m sub;"
     " echo y > sub/f",
     true},
    {"submodule_git_dir",
     "git init -q --separate-git-dir \"$PWD/.git/modules/sub\" sub ||"
     " git init -q --separate-git-dir \"$PWD/moddir\" sub;"
     " git -C sub config core.fsmonitor \"$P; false\"; echo x > sub/f;"
     " git -C sub add f && git -C sub commit -q -m s && git add sub && git commit -q -m sub;"
     " echo y > sub/f",
     true},
    {"new_git_dir",
     "mv .git .git-old || rm -rf .git; git init -q -b main &&"
     " git config core.fsmonitor \"$P; false\" && git add -A && git commit -q -m new;"
     " printf '#!/bin/sh\\n%s\\n' \"$P\" > .git/hooks/post-checkout;"
     " chmod +x .git/hooks/post-checkout; echo changed > a.txt",
     true},
    {"gitdir_file",
     "git init -q --bare \"$PWD/other\" && git -C other config core.fsmonitor \"$P; false\" &&"
     " git -C other config core.bare false && git -C other config core.worktree \"$PWD\";"
     " mv .git .git-orig || rm -rf .git; echo \"gitdir: $PWD/other\" > .git; echo changed > a.txt",
     true},
    {"bare_layout",
     "mv .git .git-orig || rm -rf .git; rm -rf .git; cp -r .git-orig/HEAD .git-orig/objects"
     " .git-orig/refs . ; printf '[core]\\n\\tbare = false\\n\\tfsmonitor = \"%s; false\"\\n'"
     " \"$P\" > config; echo changed > a.txt",
     true},
};

class RunWorkspaceAttackTest : public RunWorkspaceTaintTest,
                               public ::testing::WithParamInterface<Attack> {};

TEST_P(RunWorkspaceAttackTest, NothingTheAgentLeftRunsOnTheHost) {
  const Attack& attack = GetParam();
  std::string script = "P='" + Payload() + "'; M='" + marker_ + "'\n" + attack.script + "\n";
  std::string ws = Dispatch(script);
  ASSERT_FALSE(ws.empty()) << Describe(last_) << status_;
  EXPECT_EQ(last_.err.find("runtime"), std::string::npos) << Describe(last_);
  EXPECT_FALSE(MarkerExists()) << "the payload ran inside the sandbox's view of the host";
  if (attack.undone_after) {
    EXPECT_NE(status_.find("\"workspace_tainted\": true"), std::string::npos)
        << status_ << Describe(last_);
  }
  // Whatever the agent wrote into the config, none of it is left (the payload names the
  // marker).
  EXPECT_EQ(ReadFile(ws + "/.git/config").value_or("").find(marker_), std::string::npos)
      << ReadFile(ws + "/.git/config").value_or("<no config>");
  UseWorkspaceOnHost(ws);
  EXPECT_FALSE(MarkerExists()) << attack.name << ": the agent's command ran on the host\n"
                               << status_ << Describe(last_);
  // What a person does next also works: the workspace is still a repository.
  RunResult log = HostGit(ws, {"log", "--oneline"});
  EXPECT_EQ(log.exit_code, 0) << Describe(log) << status_;
}

INSTANTIATE_TEST_SUITE_P(Attacks, RunWorkspaceAttackTest, ::testing::ValuesIn(kAttacks),
                         [](const ::testing::TestParamInfo<Attack>& param_info) {
                           return std::string(param_info.param.name);
                         });

// Two commits, one uncommitted change and one untracked binary file: `git am` of the
// patch on a fresh clone of the original gives the workspace's files.
TEST_F(RunWorkspaceTaintTest, PatchAppliesToAFreshClone) {
  std::string patch = status_dir_.Sub("work.patch");
  std::string script =
      "echo four >> a.txt && git commit -q -am 'first change' &&\n"
      "echo cee > c.txt && git add c.txt && git commit -q -m 'second change' &&\n"
      "echo uncommitted >> b.txt &&\n"
      "printf 'bin\\000ary\\001\\377\\n' > blob.bin\n";
  std::string ws = Dispatch(script, {"--patch", patch});
  ASSERT_EQ(last_.exit_code, 0) << Describe(last_);
  EXPECT_NE(status_.find("\"patch_error\": null"), std::string::npos) << status_;
  auto text = ReadFile(patch);
  ASSERT_TRUE(text.has_value());
  EXPECT_NE(text->find("Subject: [PATCH 1/2] first change"), std::string::npos) << *text;
  EXPECT_NE(text->find("GIT binary patch"), std::string::npos) << *text;

  TempDir fresh;
  MustGit(fresh.path(), {"clone", "-q", origin_.path(), "."});
  RunResult am = HostGit(fresh.path(), {"am", "-q", patch});
  ASSERT_EQ(am.exit_code, 0) << Describe(am) << *text;
  for (const char* name : {"a.txt", "b.txt", "c.txt", "blob.bin"}) {
    EXPECT_EQ(ReadFile(fresh.Sub(name)), ReadFile(ws + "/" + name)) << name;
  }
  RunResult log = HostGit(fresh.path(), {"log", "--format=%s", "-3"});
  EXPECT_EQ(log.out, "Uncommitted changes left in the workspace\nsecond change\nfirst change\n");

  // The same with `git apply` (everything as uncommitted changes).
  TempDir applied;
  MustGit(applied.path(), {"clone", "-q", origin_.path(), "."});
  RunResult apply = HostGit(applied.path(), {"apply", patch});
  ASSERT_EQ(apply.exit_code, 0) << Describe(apply);
  EXPECT_EQ(ReadFile(applied.Sub("blob.bin")), ReadFile(ws + "/blob.bin"));

  // The harvest subcommand gives the same patch from the finished workspace.
  std::string again = status_dir_.Sub("again.patch");
  RunResult harvest = RunCommand(
      {AteamPath(), "harvest", ws, "--base", JsonString(status_, "base_commit"), "-o", again});
  ASSERT_EQ(harvest.exit_code, 0) << Describe(harvest);
  auto second = ReadFile(again);
  ASSERT_TRUE(second.has_value());
  EXPECT_NE(second->find("Subject: [PATCH 2/2] second change"), std::string::npos);
  EXPECT_NE(second->find("GIT binary patch"), std::string::npos);
}

}  // namespace
}  // namespace sbx::integration::run
