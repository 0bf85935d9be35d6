// What a `run` sandbox looks like from inside, and --repo clone isolation.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "integration/run/run_support.h"

namespace sbx::integration::run {
namespace {

class RunLayoutTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string missing = MissingPrerequisite({"sh", "git"});
    if (!missing.empty()) GTEST_SKIP() << missing;
  }
};

TEST_F(RunLayoutTest, ProbeReportShowsTheDispatchLayout) {
  TempDir work, out;
  RootTempDir creds;  // where a root caller reads credentials (not a /tmp of another uid's)
  WriteFile(creds.Sub("token"), "secret\n");
  Report r = ParseReport(RunAteam({"--workspace", work.path(), "--out", out.path(), "--credentials",
                                   creds.Sub("token") + ":creds.json", "--env", "SBX_PASSED",
                                   "--setenv", "SBX_SET=two"},
                                  {ProbeHostPath(), "report"},
                                  WithEnv({"SBX_PASSED=one", "SBX_RANDOM_HOST_VAR=leak"}))
                             .out);
  EXPECT_EQ(Get(r, "env.HOME"), "/home/ateam-sandbox");
  EXPECT_NE(Get(r, "env.PATH").find("/usr/bin"), std::string::npos);
  EXPECT_EQ(Get(r, "env.SBX_PASSED"), "one");
  EXPECT_EQ(Get(r, "env.SBX_SET"), "two");
  EXPECT_EQ(r.count("env.SBX_RANDOM_HOST_VAR"), 0u);
  for (const auto& [key, value] : r) {
    if (key.rfind("env.", 0) != 0) continue;
    std::string name = key.substr(4);
    EXPECT_TRUE(name == "HOME" || name == "PATH" || name == "LANG" || name == "USER" ||
                name == "LOGNAME" || name == "ATEAM_OUT" || name == "ATEAM_WORKSPACE" ||
                name == "TERM" || name == "COLORTERM" || name == "TZ" || name == "PWD" ||
                name == "SBX_PASSED" || name == "SBX_SET" || name.starts_with("GIT_AUTHOR_") ||
                name.starts_with("GIT_COMMITTER_"))
        << "unexpected variable " << name;
  }
  EXPECT_EQ(Get(r, "env.ATEAM_OUT"), out.path());
  EXPECT_EQ(Get(r, "env.ATEAM_WORKSPACE"), work.path());
  EXPECT_EQ(Get(r, "env.USER"), Get(r, "env.LOGNAME"));
  EXPECT_EQ(Get(r, "cwd"), work.path());
  EXPECT_NE(Get(r, "mount./usr").find(" ro"), std::string::npos);
  EXPECT_NE(Get(r, "mount./etc").find(" ro"), std::string::npos);
  EXPECT_EQ(Get(r, "mount./tmp").rfind("tmpfs", 0), 0u);
  EXPECT_EQ(Get(r, "mount./home/ateam-sandbox").rfind("tmpfs", 0), 0u);
  // The probe binary itself is not a directory fd; only the standard three may be open.
  EXPECT_EQ(Get(r, "fds"), "0 1 2");
  EXPECT_EQ(Get(r, "CapEff"), "0000000000000000");
  EXPECT_EQ(Get(r, "CapPrm"), "0000000000000000");
  EXPECT_EQ(Get(r, "CapBnd"), "0000000000000000");
  EXPECT_EQ(Get(r, "CapAmb"), "0000000000000000");
  EXPECT_EQ(Get(r, "NoNewPrivs"), "1");
  EXPECT_EQ(Get(r, "Seccomp"), "2");
}

TEST_F(RunLayoutTest, CallersInheritedFdsDoNotReachTheAgent) {
  // A caller (a shell, a test runner, a supervisor) may leave an fd open without
  // close-on-exec; at fd 9 here, on a host directory the sandbox does not show.
  TempDir work, host_dir;
  WriteFile(host_dir.Sub("host-secret"), "x");
  Fd dir(open(host_dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_GE(dir.get(), 0);
  RunOptions run;
  run.pass_fds = {{9, dir.get()}};
  RunResult r = RunAteam({"--workspace", work.path()}, {ProbeHostPath(), "report"}, run);
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(Get(ParseReport(r.out), "fds"), "0 1 2") << "backend " << Backend();
}

TEST_F(RunLayoutTest, FilesystemVisibilityAndWritability) {
  TempDir work, out;
  RootTempDir creds;
  HandToSandboxUser(work.path());
  WriteFile(creds.Sub("token"), "secret\n");
  std::string marker = "/tmp/runtests-host-marker-" + std::to_string(getpid());
  WriteFile(marker, "x");
  std::string p = ProbeHostPath();
  std::string script = "p=" + p + "\n" +
                       "echo \"usr: $($p try-write /usr/sbx-x)\"\n"
                       "echo \"etc: $($p try-write /etc/sbx-x)\"\n"
                       "echo \"ws: $($p try-write ./in-ws)\"\n"
                       "echo \"out: $($p try-write " +
                       out.Sub("result") +
                       ")\"\n"
                       "echo \"cred_read: $($p try-read $HOME/creds.json)\"\n"
                       "echo \"cred_write: $($p try-write $HOME/creds.json)\"\n"
                       "echo \"home_ls: $(ls -A $HOME | tr '\\n' ' ')\"\n"
                       "echo \"run_ls: $(ls -A /run | tr '\\n' ' ')\"\n"
                       "echo \"marker: $($p stat " +
                       marker +
                       " | head -1)\"\n"
                       "echo \"root: $($p stat /root | head -1)\"\n"
                       "echo \"var: $($p stat /var | head -1)\"\n"
                       "echo \"hosthome: $($p stat /home/sbxtest | head -1)\"\n"
                       "echo \"keyctl: $($p try-syscall keyctl)\"\n"
                       "echo \"tmp_ls: $(ls -A /tmp | tr '\\n' ' ')\"\n";
  RunResult res = RunAteam({"--workspace", work.path(), "--out", out.path(), "--credentials",
                            creds.Sub("token") + ":creds.json"},
                           {"/bin/sh", "-c", script});
  unlink(marker.c_str());
  ASSERT_EQ(res.exit_code, 0) << Describe(res);
  Report r = ParseReport(res.out);
  EXPECT_EQ(Get(r, "usr"), "try-write: EROFS") << Describe(res);
  EXPECT_EQ(Get(r, "etc"), "try-write: EROFS");
  EXPECT_EQ(Get(r, "ws"), "try-write: OK");
  EXPECT_EQ(Get(r, "out"), "try-write: OK");
  EXPECT_EQ(Get(r, "cred_read"), "try-read: OK");
  EXPECT_EQ(Get(r, "cred_write"), "try-write: EROFS");
  EXPECT_EQ(Get(r, "home_ls"), "creds.json ");
  EXPECT_EQ(Get(r, "run_ls"), "ateam-tunnel ");
  EXPECT_EQ(Get(r, "marker"), "stat: ENOENT");
  EXPECT_EQ(Get(r, "root"), "stat: ENOENT");
  // /var is not in the sandbox, unless one of the test's own binds (the probe, in a build
  // tree below /var) made its mount point there.
  if (!ProbeHostPath().starts_with("/var/")) {
    EXPECT_EQ(Get(r, "var"), "stat: ENOENT");
  }
  EXPECT_EQ(Get(r, "hosthome"), "stat: ENOENT");
  EXPECT_EQ(Get(r, "keyctl").rfind("keyctl: E", 0), 0u) << Get(r, "keyctl");
  // /tmp holds only the mount points of what was bound in (all under /tmp here).
  for (const std::string& entry : Words(Get(r, "tmp_ls"))) {
    std::string host = "/tmp/" + entry;
    bool is_bind_parent = false;
    for (const std::string& bound : {work.path(), out.path(), creds.path(), p, NetClientPath()}) {
      if (bound == host || bound.rfind(host + "/", 0) == 0) is_bind_parent = true;
    }
    EXPECT_TRUE(is_bind_parent) << "/tmp/" << entry << " visible inside";
  }
  EXPECT_TRUE(ReadFile(out.Sub("result")).has_value()) << "out dir write not on the host";
  EXPECT_TRUE(ReadFile(work.Sub("in-ws")).has_value());
}

std::string Join(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += w + " ";
  return out;
}

// Runs `git ARGS` in `dir` with an identity, so commits work for any caller.
void Git(const std::string& dir, const Args& args) {
  Args argv = {"git", "-C", dir, "-c", "user.name=t", "-c", "user.email=t@t"};
  argv.insert(argv.end(), args.begin(), args.end());
  RunResult r = RunCommand(argv);
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
}

TEST_F(RunLayoutTest, RepoCloneIsAFreshIsolatedCopy) {
  TempDir repo, out;
  RootTempDir root;
  Git(repo.path(), {"init", "-q"});
  WriteFile(repo.Sub("file.txt"), "original\n");
  Git(repo.path(), {"add", "file.txt"});
  Git(repo.path(), {"commit", "-q", "-m", "one"});
  RunResult objects = RunCommand(
      {"sh", "-c", "cd " + repo.path() + " && find .git/objects -type f | grep -v pack | sort"});
  std::vector<std::string> files = Words(objects.out);
  ASSERT_FALSE(files.empty()) << Describe(objects);
  std::map<std::string, std::string> before;
  for (const auto& f : files) before[f] = ReadFile(repo.Sub(f)).value_or("");

  std::string script = "for f in " + Join(files) +
                       "; do chmod u+w $f && echo tampered >> $f || exit 3; done\n"
                       "echo \"orig: $(" +
                       ProbeHostPath() + " stat " + repo.path() +
                       " | head -1)\"\necho \"pwd: $(pwd)\"\ncat file.txt\n";
  RunResult res =
      RunAteam({"--repo", repo.path(), "--workspace-root", root.path(), "--out", out.path()},
               {"/bin/sh", "-c", script});
  ASSERT_EQ(res.exit_code, 0) << Describe(res);
  Report r = ParseReport(res.out);
  EXPECT_EQ(Get(r, "orig"), "stat: ENOENT") << Describe(res);
  EXPECT_NE(Get(r, "pwd"), repo.path());
  EXPECT_EQ(Get(r, "pwd").rfind(root.path(), 0), 0u) << Describe(res);
  EXPECT_NE(res.out.find("original"), std::string::npos);
  for (const auto& f : files) {
    EXPECT_EQ(ReadFile(repo.Sub(f)).value_or("<gone>"), before[f]) << f << " changed";
    struct stat st {};
    ASSERT_EQ(stat(repo.Sub(f).c_str(), &st), 0);
    EXPECT_EQ(st.st_nlink, 1u) << f << " is hard-linked";
  }
}

}  // namespace
}  // namespace sbx::integration::run
