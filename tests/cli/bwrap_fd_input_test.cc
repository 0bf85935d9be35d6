// Options whose data the parser reads from fds: --args and --add-seccomp-fd.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <variant>

#include "tests/cli/bwrap_test_util.h"

namespace sbx::cli {
namespace {

using testing::IsOpen;
using testing::Parse;
using testing::PipeWithData;

std::string Nul(std::initializer_list<std::string_view> words, bool trailing_nul = true) {
  std::string out;
  for (std::string_view word : words) {
    out += word;
    out += '\0';
  }
  if (!trailing_nul && !out.empty()) out.pop_back();
  return out;
}

TEST(BwrapArgsFdTest, DataIsParsedInPlace) {
  const int fd = PipeWithData(Nul({"--setenv", "A", "2", "--unshare-net"}));
  const BwrapParse parse =
      Parse({"--setenv", "A", "1", "--args", std::to_string(fd), "--setenv", "B", "3", "true"});
  ASSERT_EQ(parse.outcome, BwrapOutcome::kRun);
  EXPECT_EQ(parse.spec.env, (std::vector<std::string>{"A=2", "B=3"}));
  EXPECT_TRUE(parse.spec.unshare_net);
  EXPECT_EQ(parse.spec.command, std::vector<std::string>{"true"});
  EXPECT_FALSE(IsOpen(fd));  // closed after reading
}

TEST(BwrapArgsFdTest, LaterOptionsOverrideTheData) {
  const int fd = PipeWithData(Nul({"--setenv", "A", "2"}));
  const BwrapParse parse =
      Parse({"--args", std::to_string(fd), "--setenv", "A", "3", "true"}, {"A=0"});
  EXPECT_EQ(parse.spec.env, std::vector<std::string>{"A=3"});
}

TEST(BwrapArgsFdTest, FinalElementWithoutTrailingNul) {
  const int fd = PipeWithData(Nul({"--chdir", "/x"}, /*trailing_nul=*/false));
  const BwrapParse parse = Parse({"--args", std::to_string(fd), "true"});
  ASSERT_EQ(parse.outcome, BwrapOutcome::kRun);
  EXPECT_EQ(parse.spec.chdir, "/x");
}

TEST(BwrapArgsFdTest, EmptyElementsAreKept) {
  const int fd = PipeWithData(Nul({"--setenv", "A", "", "--setenv", "B", "x"}));
  const BwrapParse parse = Parse({"--args", std::to_string(fd), "true"});
  EXPECT_EQ(parse.spec.env, (std::vector<std::string>{"A=", "B=x"}));
}

TEST(BwrapArgsFdTest, Repeatable) {
  const int a = PipeWithData(Nul({"--bind", "/a", "/a"}));
  const int b = PipeWithData(Nul({"--bind", "/b", "/b"}));
  const BwrapParse parse =
      Parse({"--args", std::to_string(a), "--dir", "/m", "--args", std::to_string(b), "true"});
  ASSERT_EQ(parse.outcome, BwrapOutcome::kRun);
  ASSERT_EQ(parse.spec.ops.size(), 3U);
  EXPECT_EQ(std::get<runtime::BindOp>(parse.spec.ops[0]).source, "/a");
  EXPECT_TRUE(std::holds_alternative<runtime::DirOp>(parse.spec.ops[1]));
  EXPECT_EQ(std::get<runtime::BindOp>(parse.spec.ops[2]).source, "/b");
}

TEST(BwrapArgsFdTest, NestedArgsIsFatal) {
  for (const std::string& data : {Nul({"--args", "5"}), Nul({"--unshare-pid", "--args"})}) {
    const int fd = PipeWithData(data);
    const BwrapParse parse = Parse({"--args", std::to_string(fd), "true"});
    EXPECT_EQ(parse.outcome, BwrapOutcome::kFatal);
    EXPECT_EQ(parse.diagnostics,
              std::vector<std::string>{"bwrap: --args not supported in arguments file"});
  }
}

TEST(BwrapArgsFdTest, DataStopsSilentlyAtTheFirstNonOption) {
  const int fd = PipeWithData(Nul({"--setenv", "A", "B", "foo", "--frob", "--unshare-net"}));
  const BwrapParse parse = Parse({"--args", std::to_string(fd), "--unshare-pid", "true"});
  ASSERT_EQ(parse.outcome, BwrapOutcome::kRun);
  EXPECT_TRUE(parse.diagnostics.empty());
  EXPECT_EQ(parse.spec.env, std::vector<std::string>{"A=B"});
  EXPECT_FALSE(parse.spec.unshare_net);
  EXPECT_TRUE(parse.spec.unshare_pid);
  EXPECT_EQ(parse.spec.command, std::vector<std::string>{"true"});
}

TEST(BwrapArgsFdTest, DoubleDashInDataEndsTheData) {
  const int fd = PipeWithData(Nul({"--unshare-ipc", "--", "--frob"}));
  const BwrapParse parse = Parse({"--args", std::to_string(fd), "true"});
  ASSERT_EQ(parse.outcome, BwrapOutcome::kRun);
  EXPECT_TRUE(parse.spec.unshare_ipc);
}

TEST(BwrapArgsFdTest, CommandCannotComeFromData) {
  const int fd = PipeWithData(Nul({"--unshare-pid", "ls", "-l"}));
  const BwrapParse parse = Parse({"--args", std::to_string(fd)});
  EXPECT_EQ(parse.outcome, BwrapOutcome::kUsageError);
  EXPECT_TRUE(parse.spec.unshare_pid);
}

TEST(BwrapArgsFdTest, EmptyData) {
  const int fd = PipeWithData("");
  EXPECT_EQ(Parse({"--args", std::to_string(fd), "true"}).outcome, BwrapOutcome::kRun);
}

TEST(BwrapArgsFdTest, UnreadableFd) {
  const int bad = testing::ClosedFd();
  EXPECT_EQ(Parse({"--args", std::to_string(bad), "true"}).diagnostics,
            std::vector<std::string>{"bwrap: Can't read --args data: Bad file descriptor"});
  const int dir = ::open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(dir, 0);
  EXPECT_EQ(Parse({"--args", std::to_string(dir), "true"}).diagnostics,
            std::vector<std::string>{"bwrap: Can't read --args data: Is a directory"});
  EXPECT_FALSE(IsOpen(dir));
}

TEST(BwrapArgsFdTest, ErrorsInsideTheData) {
  const int fd = PipeWithData(Nul({"--unshare-pid", "--frob"}));
  EXPECT_EQ(Parse({"--args", std::to_string(fd), "true"}).diagnostics,
            std::vector<std::string>{"bwrap: Unknown option --frob"});
  const int missing = PipeWithData(Nul({"--bind", "/a"}));
  EXPECT_EQ(Parse({"--args", std::to_string(missing), "/b", "true"}).diagnostics,
            std::vector<std::string>{"bwrap: --bind takes two arguments"});
}

TEST(BwrapArgsFdTest, HelpAndVersionInsideTheData) {
  const int help = PipeWithData(Nul({"--help"}));
  EXPECT_EQ(Parse({"--args", std::to_string(help), "--frob"}).outcome, BwrapOutcome::kHelp);
  const int version = PipeWithData(Nul({"--version"}));
  EXPECT_EQ(Parse({"--args", std::to_string(version), "--frob"}).outcome, BwrapOutcome::kVersion);
}

TEST(BwrapArgsFdTest, ModifiersCrossTheBoundary) {
  const int consume = PipeWithData(Nul({"--dir", "/x"}));
  const BwrapParse parse = Parse({"--perms", "0700", "--args", std::to_string(consume), "true"});
  ASSERT_EQ(parse.outcome, BwrapOutcome::kRun);
  EXPECT_EQ(std::get<runtime::DirOp>(parse.spec.ops.at(0)).perms, 0700U);

  const int dangling = PipeWithData(Nul({"--perms", "0755"}));
  EXPECT_EQ(
      Parse({"--args", std::to_string(dangling), "--dir", "/x", "true"}).diagnostics,
      std::vector<std::string>{"bwrap: --perms must be followed by an option that creates a file"});
  const int overlay = PipeWithData(Nul({"--overlay-src"}));
  EXPECT_EQ(Parse({"--args", std::to_string(overlay), "true"}).outcome, BwrapOutcome::kFatal);
}

TEST(BwrapArgsFdTest, LevelPrefixFromData) {
  const int fd = PipeWithData(Nul({"--level-prefix"}));
  const BwrapParse parse = Parse({"--args", std::to_string(fd), "--frob"});
  EXPECT_TRUE(parse.level_prefix);
  EXPECT_EQ(parse.diagnostics, std::vector<std::string>{"<3>bwrap: Unknown option --frob"});
}

std::string ManyWords(size_t count) {
  std::string data;
  for (size_t i = 0; i < count; ++i) data += std::string("x\0", 2);
  return data;
}

TEST(BwrapArgsFdTest, DataCountsTowardsTheArgumentCap) {
  // Top level: "--args", FD, "true" = 3 words.
  const int fits = testing::MemfdWithData(ManyWords(kBwrapMaxArgs - 3));
  EXPECT_EQ(Parse({"--args", std::to_string(fits), "true"}).outcome, BwrapOutcome::kRun);
  const int too_many = testing::MemfdWithData(ManyWords(kBwrapMaxArgs - 2));
  const BwrapParse parse =
      Parse({"--chdir", "/", "--chdir", "/", "--args", std::to_string(too_many), "true"});
  EXPECT_EQ(parse.outcome, BwrapOutcome::kFatal);
  EXPECT_EQ(parse.diagnostics.back(), "bwrap: Exceeded maximum number of arguments 9000");
  EXPECT_EQ(parse.diagnostics.size(), 2U);  // the earlier warning was already printed
}

TEST(BwrapSeccompFdTest, ProgramsAreReadAtParseTime) {
  const std::string first("\x06\x00\x00\x00\x00\x00\xff\x7f", 8);
  const std::string second(16, 'b');
  const int a = PipeWithData(first);
  const int b = PipeWithData(second);
  const BwrapParse parse =
      Parse({"--add-seccomp-fd", std::to_string(a), "--add-seccomp-fd", std::to_string(b), "true"});
  ASSERT_EQ(parse.outcome, BwrapOutcome::kRun);
  ASSERT_EQ(parse.spec.seccomp_programs.size(), 2U);
  EXPECT_EQ(parse.spec.seccomp_programs[0], std::vector<uint8_t>(first.begin(), first.end()));
  EXPECT_EQ(parse.spec.seccomp_programs[1].size(), 16U);
  EXPECT_FALSE(IsOpen(a));
  EXPECT_FALSE(IsOpen(b));
}

TEST(BwrapSeccompFdTest, LengthMustBeAMultipleOfEight) {
  const int fd = PipeWithData("abc");
  EXPECT_EQ(Parse({"--add-seccomp-fd", std::to_string(fd), "true"}).diagnostics,
            std::vector<std::string>{"bwrap: Invalid seccomp data, must be multiple of 8"});
  EXPECT_FALSE(IsOpen(fd));
}

TEST(BwrapSeccompFdTest, UnreadableOrReusedFd) {
  const std::vector<std::string> expected = {"bwrap: Can't read seccomp data: Bad file descriptor"};
  EXPECT_EQ(Parse({"--add-seccomp-fd", std::to_string(testing::ClosedFd())}).diagnostics, expected);
  const std::string fd = std::to_string(PipeWithData(""));
  EXPECT_EQ(Parse({"--add-seccomp-fd", fd, "--add-seccomp-fd", fd, "true"}).diagnostics, expected);
}

TEST(BwrapSeccompFdTest, CannotBeCombinedWithSeccomp) {
  const int empty = PipeWithData("");
  EXPECT_EQ(
      Parse({"--add-seccomp-fd", std::to_string(empty), "--seccomp", "4", "true"}).diagnostics,
      std::vector<std::string>{"bwrap: --seccomp cannot be combined with --add-seccomp-fd"});
  const int unread = PipeWithData("12345678");
  EXPECT_EQ(
      Parse({"--seccomp", "4", "--add-seccomp-fd", std::to_string(unread), "true"}).diagnostics,
      std::vector<std::string>{"bwrap: --add-seccomp-fd cannot be combined with --seccomp"});
  EXPECT_TRUE(IsOpen(unread));  // refused before it was read
  ::close(unread);
}

}  // namespace
}  // namespace sbx::cli
