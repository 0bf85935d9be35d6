// What `run` writes for the sandbox instead of showing the host's (dispatch/host/sandbox_files.h)
// and what it says about places the sandbox cannot write (dispatch/host/write_access.h), checked
// from inside and on the host afterwards, for root and unprivileged callers.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "integration/run/run_support.h"

namespace sbx::integration::run {
namespace {

class RunSandboxFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string missing = MissingPrerequisite({"sh", "git", "stat", "id"});
    if (!missing.empty()) GTEST_SKIP() << missing;
  }
};

struct stat StatOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st;
}

size_t LineCount(const std::string& text) {
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

TEST_F(RunSandboxFilesTest, CredentialsAreACopyTheSandboxUidReadsAndCannotWrite) {
  // 0600 and the caller's, as Claude Code writes it: a root caller's sandbox runs as another
  // uid, which could not read the original.
  RootTempDir host;
  TempDir work;
  HandToSandboxUser(work.path());
  const std::string creds = host.Sub("credentials.json");
  const std::string secret = "secret-" + std::to_string(::getpid());
  WriteFile(creds, secret);
  ASSERT_EQ(::chmod(creds.c_str(), 0600), 0);
  const struct stat before = StatOf(creds);
  const std::string file = "$HOME/.config/tool/token";
  const std::string script = "p=" + ProbeHostPath() + "\n" +
                             "echo \"uid: $(id -u)\"\n"
                             "echo \"owner: $(stat -c '%u %a' " +
                             file +
                             ")\"\n"
                             "echo \"content: $(cat " +
                             file +
                             ")\"\n"
                             "echo \"write: $($p try-write " +
                             file +
                             ")\"\n"
                             "chmod 600 " +
                             file +
                             " 2>/dev/null\n"
                             "echo \"mode_after_chmod: $(stat -c %a " +
                             file +
                             ")\"\n"
                             "echo \"host_path_mounted: $(grep -c " +
                             host.path() + " /proc/self/mountinfo)\"\n";
  RunResult res = RunAteam({"--workspace", work.path(), "--no-default-allow", "--credentials",
                            creds + ":.config/tool/token"},
                           {"/bin/sh", "-c", script});
  ASSERT_EQ(res.exit_code, 0) << Describe(res);
  Report r = ParseReport(res.out);
  EXPECT_EQ(Get(r, "content"), secret) << Describe(res);
  EXPECT_EQ(Get(r, "owner"), Get(r, "uid") + " 400") << Describe(res);
  const std::string write = Get(r, "write");
  EXPECT_TRUE(write == "try-write: EROFS" || write == "try-write: EACCES") << write;
  EXPECT_EQ(Get(r, "mode_after_chmod"), "400");
  EXPECT_EQ(Get(r, "host_path_mounted"), "0") << "the host's file is not what the sandbox gets";
  const struct stat after = StatOf(creds);
  EXPECT_EQ(after.st_uid, before.st_uid);
  EXPECT_EQ(after.st_gid, before.st_gid);
  EXPECT_EQ(after.st_mode, before.st_mode);
  EXPECT_EQ(after.st_mtim.tv_sec, before.st_mtim.tv_sec);
  EXPECT_EQ(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec);
  EXPECT_EQ(ReadFile(creds).value_or(""), secret);
}

TEST_F(RunSandboxFilesTest, CredentialsThatCannotBeReadAreRefusedBeforeAnythingIsMade) {
  RootTempDir host;
  TempDir repo;
  RunResult init = RunCommand({"git", "init", "-q", repo.path()});
  ASSERT_EQ(init.exit_code, 0) << Describe(init);
  const std::string creds = host.Sub("credentials.json");
  WriteFile(creds, "token");
  ASSERT_EQ(::symlink(creds.c_str(), host.Sub("link.json").c_str()), 0);
  std::vector<std::pair<std::string, std::string>> cases = {{host.Sub("link.json"), "is a symlink"},
                                                            {host.path(), "not a regular file"}};
  if (::geteuid() != 0) {
    // Root reads any file; an unprivileged caller is refused what it cannot read.
    WriteFile(host.Sub("unreadable.json"), "token");
    ASSERT_EQ(::chmod(host.Sub("unreadable.json").c_str(), 0), 0);
    cases.emplace_back(host.Sub("unreadable.json"), "Permission denied");
  }
  for (const auto& [source, mention] : cases) {
    const std::string dispatches = host.Sub("dispatches");
    RunResult res = RunAteam({"--repo", repo.path(), "--workspace-root", dispatches,
                              "--no-default-allow", "--credentials", source + ":.tok"},
                             {"/bin/sh", "-c", "echo AGENT-RAN"});
    EXPECT_EQ(res.exit_code, 125) << Describe(res);
    EXPECT_EQ(LineCount(res.err), 1u) << Describe(res);
    EXPECT_NE(res.err.find(mention), std::string::npos) << Describe(res);
    EXPECT_EQ(res.out.find("AGENT-RAN"), std::string::npos);
    EXPECT_FALSE(std::filesystem::exists(dispatches)) << "made before the refusal: " << source;
  }
}

TEST_F(RunSandboxFilesTest, PlacesTheSandboxCannotWriteAreNamedNeverChowned) {
  // Not writable by the sandbox's uid, whoever the caller is: 0555 and the caller's.
  TempDir work, rw;
  HandToSandboxUser(work.path());
  ASSERT_EQ(::mkdir((work.path() + "/locked").c_str(), 0555), 0);
  ASSERT_EQ(::chmod(rw.path().c_str(), 0555), 0);
  const struct stat rw_before = StatOf(rw.path());
  const struct stat locked_before = StatOf(work.path() + "/locked");
  const struct stat top_before = StatOf(work.path());
  const std::string p = ProbeHostPath();
  RunResult res = RunAteam(
      {"--workspace", work.path(), "--no-default-allow", "--rw", rw.path()},
      {"/bin/sh", "-c",
       "echo \"rw: $(" + p + " try-write " + rw.path() + "/x)\"\n" + "echo \"locked: $(" + p +
           " try-write locked/x)\"\n" + "echo \"top: $(" + p + " try-write top-file)\"\n"});
  ASSERT_EQ(res.exit_code, 0) << Describe(res);
  Report r = ParseReport(res.out);
  EXPECT_EQ(Get(r, "rw"), "try-write: EACCES") << Describe(res);
  EXPECT_EQ(Get(r, "locked"), "try-write: EACCES");
  EXPECT_EQ(Get(r, "top"), "try-write: OK");
  EXPECT_NE(res.err.find("warning: --rw " + rw.path() + ": uid "), std::string::npos)
      << Describe(res);
  EXPECT_NE(res.err.find("warning: --workspace " + work.path() + ": uid "), std::string::npos)
      << Describe(res);
  EXPECT_NE(res.err.find("such as locked"), std::string::npos) << Describe(res);
  for (const auto& [path, before] :
       {std::pair{rw.path(), rw_before}, std::pair{work.path() + "/locked", locked_before},
        std::pair{work.path(), top_before}}) {
    const struct stat after = StatOf(path);
    EXPECT_EQ(after.st_uid, before.st_uid) << path;
    EXPECT_EQ(after.st_gid, before.st_gid) << path;
    EXPECT_EQ(after.st_mode, before.st_mode) << path;
  }
  // A place the sandbox can write gets no warning.
  ASSERT_EQ(::chmod((work.path() + "/locked").c_str(), 0755), 0);
  RunResult quiet = RunAteam({"--workspace", work.path(), "--no-default-allow"}, {"true"});
  EXPECT_EQ(quiet.exit_code, 0) << Describe(quiet);
  if (::geteuid() != 0) {
    EXPECT_EQ(quiet.err.find("warning:"), std::string::npos) << quiet.err;
  }
}

TEST_F(RunSandboxFilesTest, NamesOutsideTheRoutesFailAtOnceWithNoHostServer) {
  TempDir work;
  HandToSandboxUser(work.path());
  const std::string nc = NetClientPath();
  RunResult res = RunAteam({"--workspace", work.path(), "--allow", "api.example.test=127.0.0.1:9"},
                           {"/bin/sh", "-c",
                            "echo \"servers: $(grep -c '^nameserver' /etc/resolv.conf)\"\n"
                            "echo \"ours: $(grep -c ateam-sandbox /etc/resolv.conf)\"\n"
                            "echo \"unknown: $(" +
                                nc +
                                " resolve nosuch.example.com | head -1)\"\n"
                                "echo \"routed: $(" +
                                nc + " resolve api.example.test | head -1)\"\n"});
  ASSERT_EQ(res.exit_code, 0) << Describe(res);
  Report r = ParseReport(res.out);
  struct stat host {};
  const bool covered = ::stat("/etc/resolv.conf", &host) == 0 && S_ISREG(host.st_mode);
  if (covered) {
    EXPECT_EQ(Get(r, "servers"), "0") << Describe(res);
    EXPECT_EQ(Get(r, "ours"), "1") << Describe(res);
  }
  // EAI_AGAIN (nothing listens where the resolver asks) or EAI_NONAME, never an answer;
  // the routed name comes from /etc/hosts.
  const std::string unknown = Get(r, "unknown");
  EXPECT_TRUE(unknown == "resolve: Temporary failure in name resolution" ||
              unknown == "resolve: Name or service not known")
      << unknown;
  EXPECT_EQ(Get(r, "routed"), "resolve: OK") << Describe(res);
}

}  // namespace
}  // namespace sbx::integration::run
