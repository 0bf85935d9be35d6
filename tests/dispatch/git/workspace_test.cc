// The host-side preparation of a dispatch: default roots, the child that becomes the
// sandbox's ids, the clone as those ids, and directories given on the command line.
#include "dispatch/git/workspace.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "base/safe_path.h"
#include "dispatch/sys/run_as_child.h"
#include "tests/dispatch/scratch_dir.h"

namespace sbx::dispatch {
namespace {

constexpr uid_t kNobody = 65534;

// Sets or unsets environment variables for one test, restoring them afterwards.
class EnvGuard {
 public:
  void Set(const char* name, const char* value) {
    const char* old = std::getenv(name);
    saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
    if (value) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~EnvGuard() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->second) {
        ::setenv(it->first.c_str(), it->second->c_str(), 1);
      } else {
        ::unsetenv(it->first.c_str());
      }
    }
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

TEST(DefaultWorkspaceRootTest, RootCallersUseTheirOwnDirectoryUnderVarTmp) {
  auto root = DefaultWorkspaceRoot(true);
  ASSERT_TRUE(root);
  EXPECT_EQ(*root, "/var/tmp/ateam-sandbox/dispatches");
}

TEST(DefaultWorkspaceRootTest, UnprivilegedOrderIsCacheHomeRuntimeDirThenRefusal) {
  EnvGuard env;
  env.Set("XDG_CACHE_HOME", "/c");
  env.Set("HOME", "/h");
  env.Set("XDG_RUNTIME_DIR", "/r");
  EXPECT_EQ(DefaultWorkspaceRoot(false).value(), "/c/ateam-sandbox/dispatches");
  env.Set("XDG_CACHE_HOME", nullptr);
  EXPECT_EQ(DefaultWorkspaceRoot(false).value(), "/h/.cache/ateam-sandbox/dispatches");
  env.Set("HOME", nullptr);
  EXPECT_EQ(DefaultWorkspaceRoot(false).value(), "/r/ateam-sandbox/dispatches");
  env.Set("XDG_RUNTIME_DIR", nullptr);
  auto none = DefaultWorkspaceRoot(false);
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().Render().find("HOME"), std::string::npos);
  // Relative values are no place either (they would land in the current directory).
  env.Set("HOME", "relative");
  EXPECT_FALSE(DefaultWorkspaceRoot(false));
}

TEST(RunChildAsTest, ABodysFailedStepComesBackWithItsErrno) {
  auto run = RunChildAs(std::nullopt,
                        [](const base::ChildReport& report) -> int { report.Fail(3, EACCES); });
  ASSERT_TRUE(run) << run.error().Render();
  ASSERT_TRUE(run->failure);
  EXPECT_EQ(run->failure->step, 3U);
  EXPECT_EQ(run->failure->err, EACCES);
}

TEST(RunChildAsTest, AnExitCodeIsNoFailure) {
  auto run = RunChildAs(std::nullopt, [](const base::ChildReport&) { return 121; });
  ASSERT_TRUE(run) << run.error().Render();
  EXPECT_FALSE(run->failure);
  ASSERT_TRUE(WIFEXITED(run->status));
  EXPECT_EQ(WEXITSTATUS(run->status), 121);
}

TEST(RunInChildAsTest, TheChildHasTheIdsAndNoCapabilities) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to switch ids";
  auto status = RunInChildAs(runtime::SandboxSpec::HostIds{kNobody, kNobody}, [] {
    uid_t r = 0, e = 0, s = 0;
    gid_t gr = 0, ge = 0, gs = 0;
    ::getresuid(&r, &e, &s);
    ::getresgid(&gr, &ge, &gs);
    if (r != kNobody || e != kNobody || s != kNobody) return 1;
    if (gr != kNobody || ge != kNobody || gs != kNobody) return 2;
    if (::getgroups(0, nullptr) != 0) return 3;
    std::ifstream proc_status("/proc/self/status");
    std::string line;
    while (std::getline(proc_status, line)) {
      for (const char* set : {"CapPrm:", "CapEff:", "CapAmb:"}) {
        if (line.rfind(set, 0) == 0 && line.find_first_not_of("0\t ", 7) != std::string::npos) {
          return 4;
        }
      }
    }
    return 0;
  });
  ASSERT_TRUE(status);
  ASSERT_TRUE(WIFEXITED(*status));
  EXPECT_EQ(WEXITSTATUS(*status), 0);
}

void MakeRepo(const std::string& dir) {
  std::string script = "set -e; cd " + dir +
                       "; git init -q; echo hi > f; git add f;"
                       " git -c user.name=t -c user.email=t@t commit -q -m one";
  ASSERT_EQ(std::system(script.c_str()), 0);
}

TEST(CloneRepositoryTest, FilesAreBornWithTheSandboxOwner) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to clone as another uid";
  if (std::system("command -v git >/dev/null") != 0) GTEST_SKIP() << "git is not installed";
  ScratchDir repo, dest;
  MakeRepo(repo.path());
  ASSERT_EQ(::mkdir(dest.Sub("ws").c_str(), 0700), 0);
  ASSERT_EQ(::chown(dest.Sub("ws").c_str(), kNobody, kNobody), 0);
  base::UniqueFd fd(::open(dest.Sub("ws").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  auto cloned =
      CloneRepository(repo.path(), fd.get(), runtime::SandboxSpec::HostIds{kNobody, kNobody});
  ASSERT_TRUE(cloned) << cloned.error().Render();
  for (const char* name : {"f", ".git", ".git/config", ".git/HEAD"}) {
    struct stat st {};
    ASSERT_EQ(::lstat(dest.Sub(std::string("ws/") + name).c_str(), &st), 0) << name;
    EXPECT_EQ(st.st_uid, kNobody) << name;
  }
}

TEST(CloneRepositoryTest, AnUnreadableRepositoryGetsOneLineSayingWhatToDo) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to make a repository another uid can't read";
  if (std::system("command -v git >/dev/null") != 0) GTEST_SKIP() << "git is not installed";
  ScratchDir repo, dest;
  MakeRepo(repo.path());
  ASSERT_EQ(::chmod(repo.path().c_str(), 0700), 0);
  ASSERT_EQ(::chown(dest.path().c_str(), kNobody, kNobody), 0);
  base::UniqueFd fd(::open(dest.path().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  auto cloned =
      CloneRepository(repo.path(), fd.get(), runtime::SandboxSpec::HostIds{kNobody, kNobody});
  ASSERT_FALSE(cloned);
  std::string text = cloned.error().Render();
  EXPECT_NE(text.find("uid 65534 can't read it"), std::string::npos) << text;
  EXPECT_EQ(text.find('\n'), std::string::npos) << text;
}

TEST(GivenDirTest, ASymlinkAtTheTopIsRefused) {
  ScratchDir dir;
  ASSERT_EQ(::mkdir(dir.Sub("real").c_str(), 0755), 0);
  ASSERT_EQ(::symlink(dir.Sub("real").c_str(), dir.Sub("link").c_str()), 0);
  auto given = GivenDir::Open("--out", dir.Sub("link"), true, std::nullopt);
  ASSERT_FALSE(given);
  EXPECT_NE(given.error().Render().find("symlink"), std::string::npos);
}

TEST(GivenDirTest, TheTopIsLentAndHandedBack) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to hand a directory over";
  ScratchDir dir;
  ASSERT_EQ(::mkdir(dir.Sub("out").c_str(), 0750), 0);
  {
    auto given = GivenDir::Open("--out", dir.Sub("out"), false,
                                runtime::SandboxSpec::HostIds{kNobody, kNobody});
    ASSERT_TRUE(given) << given.error().Render();
    struct stat st {};
    ASSERT_EQ(::stat(dir.Sub("out").c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, kNobody);
    // Whatever the sandbox's uid does to the mode meanwhile is undone too.
    ASSERT_EQ(::chmod(dir.Sub("out").c_str(), 0777), 0);
  }
  struct stat st {};
  ASSERT_EQ(::stat(dir.Sub("out").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0u);
  EXPECT_EQ(st.st_mode & 07777, 0750u);
}

TEST(GivenDirTest, AMissingOutIsCreatedByTheSandboxIds) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to create as another uid";
  ScratchDir dir;
  ASSERT_EQ(::chmod(dir.path().c_str(), 01777), 0);
  auto given = GivenDir::Open("--out", dir.Sub("new"), true,
                              runtime::SandboxSpec::HostIds{kNobody, kNobody});
  ASSERT_TRUE(given) << given.error().Render();
  struct stat st {};
  ASSERT_EQ(::stat(dir.Sub("new").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, kNobody);
}

}  // namespace
}  // namespace sbx::dispatch
