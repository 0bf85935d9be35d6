// Doctor output formats, the exit-code rule, and one real run of the checks on this host.
#include "cli/doctor/doctor.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace sbx::cli {
namespace {

std::vector<Check> Sample() {
  return {
      {"kernel", CheckStatus::kOk, "Linux 6.18.0", ""},
      {"overlayfs", CheckStatus::kInfo, "not available", ""},
      {"user-namespace", CheckStatus::kFail, "unshare(CLONE_NEWUSER): Operation not permitted",
       "sysctl -w kernel.unprivileged_userns_clone=1"},
  };
}

TEST(DoctorFormatTest, LinesHaveStatusNameDetailAndFix) {
  auto checks = Sample();
  EXPECT_EQ(FormatCheckLine(checks[0]), "ok   kernel: Linux 6.18.0");
  EXPECT_EQ(FormatCheckLine(checks[1]), "info overlayfs: not available");
  EXPECT_EQ(FormatCheckLine(checks[2]),
            "FAIL user-namespace: unshare(CLONE_NEWUSER): Operation not permitted -- fix: "
            "sysctl -w kernel.unprivileged_userns_clone=1");
}

TEST(DoctorFormatTest, InfoWithFixShowsTheFix) {
  Check bwrap{"bwrap", CheckStatus::kInfo, "missing", "apt install bubblewrap"};
  EXPECT_EQ(FormatCheckLine(bwrap), "info bwrap: missing -- fix: apt install bubblewrap");
}

TEST(DoctorFormatTest, TextEndsWithSummary) {
  auto checks = Sample();
  const std::string text = FormatText(checks);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 4);
  EXPECT_NE(text.find("\ndoctor: 1 ok, 1 failed, 1 info: the native backend will not work for "
                      "this caller\n"),
            std::string::npos);
  checks.pop_back();
  EXPECT_EQ(FormatSummary(checks),
            "doctor: 1 ok, 0 failed, 1 info: the native backend works for "
            "this caller");
}

TEST(DoctorFormatTest, JsonEscapesSpecialCharacters) {
  EXPECT_EQ(JsonEscape("plain"), "plain");
  EXPECT_EQ(JsonEscape("a\"b\\c"), "a\\\"b\\\\c");
  EXPECT_EQ(JsonEscape("l1\nl2\tx\r"), "l1\\nl2\\tx\\r");
  EXPECT_EQ(JsonEscape(std::string("\x01\x1f\b\f", 4)), "\\u0001\\u001f\\b\\f");
  // DEL is a control character to a terminal: escaped, as base::JsonEscape does for status.json.
  EXPECT_EQ(JsonEscape("caf\xc3\xa9 \x7f"), "caf\xc3\xa9 \\u007f");
}

TEST(DoctorFormatTest, JsonObjectListsEveryCheck) {
  auto checks = Sample();
  checks[0].detail = "say \"hi\"";
  const std::string json = FormatJson(checks);
  EXPECT_EQ(json.rfind(R"({"ok":false,"summary":"doctor: 1 ok, 1 failed, 1 info: )", 0), 0u);
  EXPECT_NE(json.find(R"({"name":"kernel","status":"ok","detail":"say \"hi\"","fix":""})"),
            std::string::npos);
  EXPECT_NE(json.find(R"({"name":"overlayfs","status":"info","detail":"not available","fix":""})"),
            std::string::npos);
  EXPECT_NE(json.find(R"("status":"fail","detail":"unshare(CLONE_NEWUSER): Operation not )"
                      R"(permitted","fix":"sysctl -w kernel.unprivileged_userns_clone=1"}]})"),
            std::string::npos);
  EXPECT_EQ(json.back(), '\n');
  EXPECT_EQ(FormatJson({}),
            "{\"ok\":true,\"summary\":\"doctor: 0 ok, 0 failed, 0 info: the "
            "native backend works for this caller\",\"checks\":[]}\n");
}

TEST(DoctorExitCodeTest, OnlyFailuresCount) {
  auto checks = Sample();
  EXPECT_EQ(DoctorExitCode(checks), 1);
  checks.pop_back();
  EXPECT_EQ(DoctorExitCode(checks), 0);  // ok + info
  EXPECT_EQ(DoctorExitCode({}), 0);
}

long ReadLong(const char* path, long missing) {
  std::ifstream in(path);
  long value = missing;
  in >> value;
  return value;
}

TEST(DoctorRunTest, UserNamespacesWorkOnThisHost) {
  if (ReadLong("/proc/sys/user/max_user_namespaces", 1) <= 0) {
    GTEST_SKIP() << "user.max_user_namespaces is 0 on this host";
  }
  if (::geteuid() != 0 &&
      (ReadLong("/proc/sys/kernel/unprivileged_userns_clone", 1) != 1 ||
       ReadLong("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", 0) != 0)) {
    GTEST_SKIP() << "unprivileged user namespaces are disabled by sysctl on this host";
  }
  const auto checks = RunDoctorChecks();
  auto it = std::find_if(checks.begin(), checks.end(),
                         [](const Check& c) { return c.name == "user-namespace"; });
  ASSERT_NE(it, checks.end());
  EXPECT_EQ(it->status, CheckStatus::kOk) << FormatCheckLine(*it);
  for (const Check& c : checks) {
    EXPECT_FALSE(c.name.empty());
    EXPECT_FALSE(c.detail.empty()) << c.name;
    if (c.status == CheckStatus::kFail) {
      EXPECT_FALSE(c.fix.empty()) << c.name;
    }
  }
}

}  // namespace
}  // namespace sbx::cli
