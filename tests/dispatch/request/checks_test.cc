// CheckRequestPaths: relative binds made absolute, the runtime's own places protected,
// --credentials kept inside the home, every refusal one line.
#include "dispatch/request/checks.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <fstream>

namespace sbx::dispatch {
namespace {

std::string Refusal(DispatchRequest request, const std::string& cwd = "/") {
  auto st = CheckRequestPaths(request, cwd, ::geteuid() == 0);
  EXPECT_FALSE(st);
  if (st) return "";
  std::string message = st.error().Render();
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  return message;
}

TEST(RequestChecksTest, RelativeBindsAreResolvedAgainstTheCwd) {
  DispatchRequest request;
  request.ro_paths = {"bin", "./lib/../share"};
  request.rw_paths = {"/var/tmp/"};
  ASSERT_TRUE(CheckRequestPaths(request, "/usr", ::geteuid() == 0));
  EXPECT_EQ(request.ro_paths, (std::vector<std::string>{"/usr/bin", "/usr/share"}));
  EXPECT_EQ(request.rw_paths, (std::vector<std::string>{"/var/tmp"}));
}

TEST(RequestChecksTest, BindsThatWouldHideTheRuntimesOwnPlacesAreRefused) {
  for (const char* path :
       {"/", "/run", "/run/ateam-tunnel", "/etc", "/home", "/proc", "/dev", "/tmp", "/usr/.."}) {
    DispatchRequest request;
    request.rw_paths = {path};
    EXPECT_NE(Refusal(request).find("would cover the sandbox's own"), std::string::npos) << path;
  }
}

TEST(RequestChecksTest, MissingBindSourceIsOneLine) {
  DispatchRequest request;
  request.ro_paths = {"/nonexistent-sbx"};
  EXPECT_EQ(Refusal(request), "--ro /nonexistent-sbx: No such file or directory");
}

TEST(RequestChecksTest, CredentialsDestinationStaysInsideTheHome) {
  std::string file = "/var/tmp/sbx-creds-" + std::to_string(::getpid()) + ".json";
  std::ofstream(file) << "{}";
  for (const char* dest :
       {"/etc/passwd", "../../tmp/x", "a/../../x", ".", "", "/home/ateam-sandbox", "/home/other/x",
        "/home/ateam-sandboxx/x", ".config/"}) {
    DispatchRequest request;
    request.credentials = {file + ":" + dest};
    std::string message = Refusal(request);
    EXPECT_FALSE(message.empty()) << dest;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
  EXPECT_EQ(Refusal([&] {
              DispatchRequest request;
              request.credentials = {file + ":/etc/passwd"};
              return request;
            }()),
            "--credentials " + file +
                ": DEST '/etc/passwd' must be a file inside the home, relative to it or below "
                "/home/ateam-sandbox");
  // Relative to the home, or absolute inside it (the path the sandbox shows): the same file.
  DispatchRequest ok;
  ok.credentials = {file + ":.config/tool/token", file + ":/home/ateam-sandbox/.claude/c.json"};
  std::vector<CredentialsCopy> copies;
  ASSERT_TRUE(CheckRequestPaths(ok, "/", ::geteuid() == 0, &copies));
  EXPECT_EQ(ok.credentials,
            (std::vector<std::string>{file + ":.config/tool/token", file + ":.claude/c.json"}));
  ASSERT_EQ(copies.size(), 2U);
  EXPECT_EQ(copies[0].dest, ".config/tool/token");
  EXPECT_EQ(copies[1].dest, ".claude/c.json");
  EXPECT_EQ(copies[1].content, "{}");
}

TEST(RequestChecksTest, TwoCredentialsForOnePlaceAreRefused) {
  std::string file = "/var/tmp/sbx-creds3-" + std::to_string(::getpid()) + ".json";
  std::ofstream(file) << "{}";
  DispatchRequest request;
  request.credentials = {file + ":.config/t", file + ":/home/ateam-sandbox/.config/t"};
  EXPECT_EQ(Refusal(request),
            "--credentials " + file + ": a second file for ~/.config/t; give each its own DEST");
}

TEST(RequestChecksTest, CredentialsNeedADestinationAndAReadableFile) {
  std::string file = "/var/tmp/sbx-creds2-" + std::to_string(::getpid()) + ".json";
  std::ofstream(file) << "{}";
  DispatchRequest request;
  request.credentials = {file};
  EXPECT_NE(Refusal(request).find("no --agent preset names a destination"), std::string::npos);
  request.agent = AgentPreset::kClaude;
  ASSERT_TRUE(CheckRequestPaths(request, "/", ::geteuid() == 0));
  EXPECT_EQ(request.credentials, std::vector<std::string>{file + ":.claude/.credentials.json"});
  DispatchRequest missing;
  missing.agent = AgentPreset::kClaude;
  missing.credentials = {"/nonexistent-sbx.json"};
  EXPECT_EQ(Refusal(missing), "--credentials /nonexistent-sbx.json: No such file or directory");
  DispatchRequest directory;
  directory.credentials = {"/usr:.x"};
  EXPECT_EQ(Refusal(directory), "--credentials /usr: not a regular file");
}

TEST(RequestChecksTest, AHostWithoutEtcHostsIsToldHowToFixIt) {
  EXPECT_TRUE(CheckHostMountPoints("/etc"));
  auto missing = CheckHostMountPoints("/nonexistent-etc");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().Render(),
            "this host has no /nonexistent-etc/hosts (a regular file), which the sandbox's "
            "generated one is mounted over: create it (an empty file will do), e.g. touch "
            "/nonexistent-etc/hosts");
}

}  // namespace
}  // namespace sbx::dispatch
