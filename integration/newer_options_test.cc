// Behaviour of bwrap 0.11.1 that Debian's 0.8.0 lacks or implements differently
// (docs/bwrap-behaviour.md, the last section): --argv0, --level-prefix, the overlay family,
// idempotent
// --symlink with its new error texts, and a caller that ignores SIGCHLD. Each test skips,
// saying why, when the binary under test reports `bubblewrap 0.8.0`.
#include <chrono>
#include <filesystem>
#include <string>
#include <string_view>

#include "integration/sandbox_test.h"

namespace sbx::integration {
namespace {

using namespace std::chrono_literals;

class NewerOptionsTest : public SandboxTest {
 protected:
  static RunResult RunWith(const Args& options, const Args& command, const RunOptions& run = {}) {
    Args all = TypicalProfile();
    all.insert(all.end(), options.begin(), options.end());
    return RunCommand(BwrapArgv(all, command), run);
  }

  static void ExpectFatal(const Args& options, const std::string& stderr_text) {
    RunResult r = RunWith(options, {kProbe, "exit", "0"});
    EXPECT_EQ(r.exit_code, 1) << Describe(r);
    EXPECT_EQ(r.err, stderr_text) << Describe(r);
  }
};

TEST_F(NewerOptionsTest, Argv0ReplacesArgv0Only) {
  if (IsBwrap080()) GTEST_SKIP() << kSkip080 << "lacks --argv0 (added in 0.9.0)";
  Report r = ReportWith({"--argv0", "custom-name"});
  EXPECT_EQ(Get(r, "argv0"), "custom-name");
}

TEST_F(NewerOptionsTest, Argv0TwiceIsFatal) {
  if (IsBwrap080()) GTEST_SKIP() << kSkip080 << "lacks --argv0 (added in 0.9.0)";
  ExpectFatal({"--argv0", "a", "--argv0", "b"}, "bwrap: --argv0 used multiple times\n");
}

TEST_F(NewerOptionsTest, LevelPrefixMarksLaterErrorsAndWarnings) {
  if (IsBwrap080()) GTEST_SKIP() << kSkip080 << "lacks --level-prefix (added in 0.11.0)";
  ExpectFatal({"--level-prefix", "--frobnicate"}, "<3>bwrap: Unknown option --frobnicate\n");
  RunResult warned =
      RunWith({"--level-prefix", "--chdir", "/", "--chdir", "/"}, {kProbe, "exit", "0"});
  EXPECT_EQ(warned.exit_code, 0) << Describe(warned);
  EXPECT_EQ(warned.err, "<4>bwrap: Only the last --chdir option will take effect\n");
  // Messages emitted before the option was parsed keep the plain format.
  RunResult before =
      RunWith({"--chdir", "/", "--chdir", "/", "--level-prefix"}, {kProbe, "exit", "0"});
  EXPECT_EQ(before.err, "bwrap: Only the last --chdir option will take effect\n");
}

// Two host lower layers: lower1/{a,c} and lower2/{b,c}, with different contents for c.
class Layers {
 public:
  Layers() {
    std::filesystem::create_directories(dir_.Sub("lower1"));
    std::filesystem::create_directories(dir_.Sub("lower2"));
    std::filesystem::create_directories(dir_.Sub("upper"));
    std::filesystem::create_directories(dir_.Sub("work"));
    WriteFile(dir_.Sub("lower1/a"), "a1");
    WriteFile(dir_.Sub("lower1/c"), "c1");
    WriteFile(dir_.Sub("lower2/b"), "b2");
    WriteFile(dir_.Sub("lower2/c"), "c2");
  }
  [[nodiscard]] std::string Path(std::string_view name) const { return dir_.Sub(name); }

 private:
  TempDir dir_;
};

TEST_F(NewerOptionsTest, TmpOverlayDiscardsWrites) {
  if (IsBwrap080()) GTEST_SKIP() << kSkip080 << "lacks the overlay options (added in 0.11.0)";
  Layers layers;
  Args options = {"--overlay-src", layers.Path("lower1"), "--tmp-overlay", "/ov"};
  EXPECT_EQ(MountType(ReportWith(options), "/ov"), "overlay");
  EXPECT_EQ(Get(ProbeWith(options, {"try-read", "/ov/a"}), "content"), "a1");
  EXPECT_EQ(Get(ProbeWith(options, {"try-write", "/ov/new"}), "try-write"), "OK");
  EXPECT_EQ(Get(ProbeWith(options, {"try-write", "/ov/a"}), "try-write"), "OK");
  EXPECT_EQ(ReadFile(layers.Path("lower1/a")).value_or("<missing>"), "a1");
  EXPECT_FALSE(ReadFile(layers.Path("lower1/new")).has_value());
}

TEST_F(NewerOptionsTest, RoOverlayStacksLaterSourcesOnTop) {
  if (IsBwrap080()) GTEST_SKIP() << kSkip080 << "lacks the overlay options (added in 0.11.0)";
  Layers layers;
  Args options = {"--overlay-src",       layers.Path("lower1"), "--overlay-src",
                  layers.Path("lower2"), "--ro-overlay",        "/ov"};
  EXPECT_EQ(Get(ProbeWith(options, {"try-read", "/ov/a"}), "content"), "a1");
  EXPECT_EQ(Get(ProbeWith(options, {"try-read", "/ov/b"}), "content"), "b2");
  EXPECT_EQ(Get(ProbeWith(options, {"try-read", "/ov/c"}), "content"), "c2");
  EXPECT_EQ(Get(ProbeWith(options, {"try-write", "/ov/new"}), "try-write"), "EROFS");
}

TEST_F(NewerOptionsTest, OverlayWritesGoToHostUpperDir) {
  if (IsBwrap080()) GTEST_SKIP() << kSkip080 << "lacks the overlay options (added in 0.11.0)";
  Layers layers;
  Args options = {"--overlay-src",      layers.Path("lower1"), "--overlay",
                  layers.Path("upper"), layers.Path("work"),   "/ov"};
  EXPECT_EQ(Get(ProbeWith(options, {"try-write", "/ov/new"}), "try-write"), "OK");
  EXPECT_EQ(ReadFile(layers.Path("upper/new")).value_or("<missing>"), "written by probe\n");
  EXPECT_FALSE(ReadFile(layers.Path("lower1/new")).has_value());
  EXPECT_EQ(Get(ProbeWith(options, {"try-read", "/ov/new"}), "try-read"), "OK");
}

TEST_F(NewerOptionsTest, OverlayArgumentErrors) {
  if (IsBwrap080()) GTEST_SKIP() << kSkip080 << "lacks the overlay options (added in 0.11.0)";
  Layers layers;
  ExpectFatal({"--overlay", layers.Path("upper"), layers.Path("work"), "/ov"},
              "bwrap: --overlay requires at least one --overlay-src\n");
  ExpectFatal({"--tmp-overlay", "/ov"},
              "bwrap: --tmp-overlay requires at least one --overlay-src\n");
  ExpectFatal({"--overlay-src", layers.Path("lower1"), "--ro-overlay", "/ov"},
              "bwrap: --ro-overlay requires at least two --overlay-src\n");
  ExpectFatal({"--overlay-src", layers.Path("lower1"), "--dir", "/x"},
              "bwrap: --overlay-src must be followed by another --overlay-src or one of --overlay, "
              "--tmp-overlay, or --ro-overlay\n");
}

TEST_F(NewerOptionsTest, SymlinkIsIdempotent) {
  if (IsBwrap080()) GTEST_SKIP() << kSkip080 << "fails on an identical existing symlink";
  // TypicalProfile() already made /bin -> usr/bin.
  Report r = ProbeWith({"--symlink", "usr/bin", "/bin"}, {"stat", "/bin"});
  EXPECT_EQ(Get(r, "target"), "usr/bin");
}

TEST_F(NewerOptionsTest, SymlinkConflictMessages) {
  if (IsBwrap080()) GTEST_SKIP() << kSkip080 << "reports every symlink conflict as EEXIST";
  ExpectFatal({"--symlink", "/a", "/tmp/l", "--symlink", "/b", "/tmp/l"},
              "bwrap: Can't make symlink at /tmp/l: existing destination is /a\n");
  ExpectFatal({"--dir", "/tmp/d", "--symlink", "/a", "/tmp/d"},
              "bwrap: Can't make symlink at /tmp/d: destination exists and is not a symlink\n");
}

TEST_F(NewerOptionsTest, CallerIgnoringSigchldStillGetsExitStatus) {
  if (IsBwrap080()) GTEST_SKIP() << kSkip080 << "does not reset SIGCHLD and hangs";
  RunOptions run;
  run.ignore_sigchld = true;
  run.timeout = 15s;
  for (const Args& options : {Args{}, Args{"--unshare-pid"}}) {
    RunResult r = RunWith(options, {kProbe, "exit", "42"}, run);
    EXPECT_EQ(r.exit_code, 42) << Describe(r);
  }
}

}  // namespace
}  // namespace sbx::integration
