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
  for (const char* dest : {"/etc/passwd", "../../tmp/x", "a/../../x", ".", ""}) {
    DispatchRequest request;
    request.credentials = file + ":" + dest;
    std::string message = Refusal(request);
    EXPECT_FALSE(message.empty()) << dest;
  }
  DispatchRequest ok;
  ok.credentials = file + ":.config/tool/token";
  ASSERT_TRUE(CheckRequestPaths(ok, "/", ::geteuid() == 0));
  EXPECT_EQ(*ok.credentials, file + ":.config/tool/token");
}

TEST(RequestChecksTest, CredentialsNeedADestinationAndAReadableFile) {
  std::string file = "/var/tmp/sbx-creds2-" + std::to_string(::getpid()) + ".json";
  std::ofstream(file) << "{}";
  DispatchRequest request;
  request.credentials = file;
  EXPECT_NE(Refusal(request).find("no --agent preset names a destination"), std::string::npos);
  request.agent = AgentPreset::kClaude;
  ASSERT_TRUE(CheckRequestPaths(request, "/", ::geteuid() == 0));
  EXPECT_EQ(*request.credentials, file + ":.claude/.credentials.json");
  DispatchRequest missing;
  missing.agent = AgentPreset::kClaude;
  missing.credentials = "/nonexistent-sbx.json";
  EXPECT_EQ(Refusal(missing), "--credentials /nonexistent-sbx.json: No such file or directory");
  DispatchRequest directory;
  directory.credentials = "/usr:.x";
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
