// End to end: plans compiled for this host run through the real /usr/bin/bwrap with
// LaunchWithBwrap. Skipped (loudly) where /usr/bin/bwrap is missing or cannot create its
// namespaces.
#include "runtime/bwrap_backend.h"

#include <fcntl.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/bwrap_render.h"
#include "runtime/plan_compiler.h"

namespace sbx::runtime {
namespace {

constexpr char kBwrap[] = "/usr/bin/bwrap";

class BwrapLaunchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::access(kBwrap, X_OK) != 0) GTEST_SKIP() << kBwrap << " is missing: not comparable";
    auto host = ProbeHostFacts();
    ASSERT_TRUE(host) << host.error().Render();
    host_ = *host;
    // Whether bwrap can build a sandbox here at all is asked of bwrap itself, never through
    // LaunchWithBwrap: a regression there must fail these tests, not skip them.
    int code = std::system("/usr/bin/bwrap --ro-bind / / true >/dev/null 2>&1");
    if (code != 0)
      GTEST_SKIP() << "bwrap cannot create a sandbox on this host (status " << code << ")";
  }

  static SandboxSpec Spec(std::vector<std::string> command) {
    SandboxSpec spec;
    spec.ops = {BindOp{.source = "/", .dest = "/", .read_only = true}};
    spec.env = {"PATH=/usr/bin:/bin"};
    spec.command = std::move(command);
    return spec;
  }

  Plan CompileFor(const SandboxSpec& spec) {
    auto plan = CompilePlan(spec, host_);
    EXPECT_TRUE(plan) << plan.error().Render();
    return plan ? *plan : Plan{};
  }

  // Runs the plan with the command's stdout in a memfd; returns what it printed.
  std::string RunCapturingStdout(const Plan& plan, int* exit_code) {
    base::UniqueFd out(::memfd_create("backend-test-out", MFD_CLOEXEC));
    base::UniqueFd saved(::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3));
    EXPECT_TRUE(out && saved);
    std::fflush(stdout);
    ::dup2(out.get(), STDOUT_FILENO);
    auto code = LaunchWithBwrap(plan, kBwrap);
    ::dup2(saved.get(), STDOUT_FILENO);
    EXPECT_TRUE(code) << code.error().Render();
    *exit_code = code ? *code : -1;
    std::string text;
    char buf[4096];
    ssize_t n = 0;
    ::lseek(out.get(), 0, SEEK_SET);
    while ((n = ::read(out.get(), buf, sizeof(buf))) > 0) text.append(buf, static_cast<size_t>(n));
    return text;
  }

  HostFacts host_;
};

TEST_F(BwrapLaunchTest, ForwardsTheCommandsExitStatus) {
  auto code = LaunchWithBwrap(CompileFor(Spec({"sh", "-c", "exit 7"})), kBwrap);
  ASSERT_TRUE(code) << code.error().Render();
  EXPECT_EQ(*code, 7);
  code = LaunchWithBwrap(CompileFor(Spec({"sh", "-c", "kill -TERM $$"})), kBwrap);
  ASSERT_TRUE(code) << code.error().Render();
  EXPECT_EQ(*code, 128 + SIGTERM);
}

TEST_F(BwrapLaunchTest, OptionsTravelInArgsFdAndTheCommandOnArgv) {
  Plan plan = CompileFor(Spec({"-c", "x"}));
  auto invocation = PrepareBwrapInvocation(plan, kBwrap);
  ASSERT_TRUE(invocation) << invocation.error().Render();
  const std::string fd = std::to_string(invocation->args_fd.get());
  EXPECT_EQ(invocation->argv, (std::vector<std::string>{kBwrap, "--args", fd, "--", "-c", "x"}));
  EXPECT_EQ(invocation->options.back(), "/usr/bin:/bin");
  EXPECT_EQ(::fcntl(invocation->args_fd.get(), F_GETFD), FD_CLOEXEC);
}

TEST_F(BwrapLaunchTest, EnvironmentIsExactlyThePlans) {
  SandboxSpec spec = Spec({"env"});
  spec.env.emplace_back("GREETING=hello world");
  spec.chdir = "/usr";
  int code = -1;
  std::string out = RunCapturingStdout(CompileFor(spec), &code);
  EXPECT_EQ(code, 0);
  EXPECT_EQ(out, "PATH=/usr/bin:/bin\nGREETING=hello world\nPWD=/usr\n");
}

TEST_F(BwrapLaunchTest, CallerFdsReachBwrapOps) {
  auto pipe = base::MakePipe();
  ASSERT_TRUE(pipe);
  ASSERT_EQ(::write(pipe->write_end.get(), "hello", 5), 5);
  pipe->write_end.reset();
  ASSERT_EQ(::fcntl(pipe->read_end.get(), F_SETFD, 0), 0);  // inherited, as bwrap expects
  SandboxSpec spec = Spec({"cat", "/tmp/f"});
  spec.ops.emplace_back(TmpfsOp{.dest = "/tmp"});
  spec.ops.emplace_back(FileOp{.fd = pipe->read_end.get(), .dest = "/tmp/f", .perms = 0600});
  int code = -1;
  EXPECT_EQ(RunCapturingStdout(CompileFor(spec), &code), "hello");
  EXPECT_EQ(code, 0);
}

TEST_F(BwrapLaunchTest, UidAndNamespacesApply) {
  SandboxSpec spec = Spec({"sh", "-c", "echo $(id -u):$(id -g) $(hostname)"});
  spec.unshare_user = spec.unshare_uts = true;
  spec.uid = 1234;
  spec.gid = 4321;
  spec.ops.emplace_back(SetHostnameOp{.hostname = "backend-box"});
  int code = -1;
  EXPECT_EQ(RunCapturingStdout(CompileFor(spec), &code), "1234:4321 backend-box\n");
  EXPECT_EQ(code, 0);
}

TEST_F(BwrapLaunchTest, CapabilitiesApply) {
  SandboxSpec spec = Spec({"grep", "CapEff", "/proc/self/status"});
  spec.unshare_user = true;
  spec.cap_changes = {{security::CapChange::Kind::kDrop, std::nullopt},
                      {security::CapChange::Kind::kAdd, CAP_NET_ADMIN}};
  int code = -1;
  EXPECT_EQ(RunCapturingStdout(CompileFor(spec), &code), "CapEff:\t0000000000001000\n");
  EXPECT_EQ(code, 0);
}

TEST_F(BwrapLaunchTest, DryRunLineRunsTheSameInAShell) {
  SandboxSpec spec = Spec({"sh", "-c", R"(printf '%s|' "$MSG" "$0" "$PWD")", "a b"});
  spec.env.emplace_back("MSG=it's $HOME; \"quoted\"");
  spec.chdir = "/etc";
  const std::string line = RenderBwrapCommandLine(CompileFor(spec), kBwrap);
  int code = -1;
  std::string direct = RunCapturingStdout(CompileFor(spec), &code);
  EXPECT_EQ(direct, "it's $HOME; \"quoted\"|a b|/etc|");
  // popen runs the line with /bin/sh -c, as a user pasting it would.
  std::FILE* pipe = ::popen(line.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string shelled;
  char buf[256];
  while (std::fgets(buf, sizeof(buf), pipe) != nullptr) shelled += buf;
  EXPECT_EQ(::pclose(pipe), 0);
  EXPECT_EQ(shelled, direct) << line;
}

// A filter that makes uname(2) fail with EPERM on x86-64 and allows everything else.
std::vector<uint8_t> DenyUnameProgram() {
  const sock_filter filter[] = {
      {BPF_LD | BPF_W | BPF_ABS, 0, 0, offsetof(seccomp_data, arch)},
      {BPF_JMP | BPF_JEQ | BPF_K, 0, 3, AUDIT_ARCH_X86_64},
      {BPF_LD | BPF_W | BPF_ABS, 0, 0, offsetof(seccomp_data, nr)},
      {BPF_JMP | BPF_JEQ | BPF_K, 0, 1, SYS_uname},
      {BPF_RET | BPF_K, 0, 0, SECCOMP_RET_ERRNO | EPERM},
      {BPF_RET | BPF_K, 0, 0, SECCOMP_RET_ALLOW},
  };
  std::vector<uint8_t> bytes(sizeof(filter));
  std::memcpy(bytes.data(), filter, sizeof(filter));
  return bytes;
}

TEST_F(BwrapLaunchTest, SeccompProgramsTravelInMemfds) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "the test filter is written for x86-64";
#endif
  SandboxSpec spec = Spec({"uname"});
  int code = -1;
  RunCapturingStdout(CompileFor(spec), &code);
  EXPECT_EQ(code, 0);
  spec.seccomp_programs = {DenyUnameProgram()};
  RunCapturingStdout(CompileFor(spec), &code);
  EXPECT_EQ(code, 1);  // uname(1): "cannot get system name: Operation not permitted"
}

TEST(BwrapLaunchErrorTest, MissingBwrapIsAClearError) {
  Plan plan;
  plan.exec_file = "true";
  plan.argv = {"true"};
  auto code = LaunchWithBwrap(plan, "/nonexistent/bwrap");
  ASSERT_FALSE(code);
  EXPECT_EQ(code.error().Render(),
            "bwrap backend: /nonexistent/bwrap not found: No such file or directory");
  auto status = ExecBwrap(plan, "/nonexistent/bwrap");
  ASSERT_FALSE(status);
  EXPECT_EQ(status.error().err(), ENOENT);
}

// A file at `path` with `mode` and `content`, removed with the test.
class TempFile {
 public:
  TempFile(const char* content, mode_t mode) {
    char name[] = "/tmp/backend-test-XXXXXX";
    base::UniqueFd fd(::mkstemp(name));
    path_ = name;
    EXPECT_TRUE(fd);
    EXPECT_EQ(::write(fd.get(), content, std::strlen(content)),
              static_cast<ssize_t>(std::strlen(content)));
    EXPECT_EQ(::fchmod(fd.get(), mode), 0);
  }
  ~TempFile() { ::unlink(path_.c_str()); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  [[nodiscard]] const std::string& Path() const { return path_; }

 private:
  std::string path_;
};

TEST(BwrapLaunchErrorTest, UnexecutableBwrapIsAClearError) {
  Plan plan;
  plan.exec_file = "true";
  plan.argv = {"true"};
  // Without any x bit access(X_OK) fails, for root too.
  TempFile plain("data", 0644);
  auto code = LaunchWithBwrap(plan, plain.Path());
  ASSERT_FALSE(code);
  EXPECT_EQ(code.error().Render(),
            "bwrap backend: can't execute " + plain.Path() + ": Permission denied");
  // Executable but not a program: execve fails in the child and the parent reports it.
  TempFile garbage("\x01\x02garbage", 0755);
  code = LaunchWithBwrap(plan, garbage.Path());
  ASSERT_FALSE(code);
  EXPECT_EQ(code.error().Render(),
            "bwrap backend: can't execute " + garbage.Path() + ": Exec format error");
}

}  // namespace
}  // namespace sbx::runtime
