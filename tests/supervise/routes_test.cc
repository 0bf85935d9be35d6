#include "supervise/routes.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sbx::supervise {
namespace {

using ::testing::HasSubstr;

struct RouteCase {
  const char* text;
  const char* listen;  // nullptr: rejected
  const char* path_or_error;
};

TEST(ParseRouteTest, Table) {
  const RouteCase cases[] = {
      {"127.77.0.2:443=/run/ateam-tunnel/route-0.sock", "127.77.0.2:443",
       "/run/ateam-tunnel/route-0.sock"},
      {"127.77.0.254:8443=/r.sock", "127.77.0.254:8443", "/r.sock"},
      {"127.77.0.9:1=/a=b.sock", "127.77.0.9:1", "/a=b.sock"},  // first '=' splits
      {"127.77.0.2:443", nullptr, "expected ADDR:PORT=SOCKET_PATH"},
      {"127.77.0.2=/r.sock", nullptr, "bad --route '127.77.0.2=/r.sock'"},
      {"127.77.0.2:0=/r.sock", nullptr, "127.77.0.2:0"},
      {"127.77.0.2:65536=/r.sock", nullptr, "65536"},
      {"127.0.0.1:443=/r.sock", nullptr, "outside 127.77.0.0/24"},
      {"10.0.0.1:443=/r.sock", nullptr, "outside 127.77.0.0/24"},
      {"127.77.1.2:443=/r.sock", nullptr, "outside 127.77.0.0/24"},
      {"127.77.0.1:443=/r.sock", nullptr, "outside 127.77.0.0/24"},
      {"127.77.0.0:443=/r.sock", nullptr, "outside 127.77.0.0/24"},
      {"127.77.0.255:443=/r.sock", nullptr, "outside 127.77.0.0/24"},
      {"[::1]:443=/r.sock", nullptr, "outside 127.77.0.0/24"},
      {"example.com:443=/r.sock", nullptr, "bad --route"},
      {"127.77.0.2:443=", nullptr, "must be absolute"},
      {"127.77.0.2:443=route.sock", nullptr, "must be absolute"},
  };
  for (const RouteCase& c : cases) {
    SCOPED_TRACE(c.text);
    auto route = ParseRoute(c.text);
    if (c.listen == nullptr) {
      ASSERT_FALSE(route.ok());
      EXPECT_THAT(route.error().Render(), HasSubstr(c.path_or_error));
      EXPECT_EQ(route.error().Render().find('\n'), std::string::npos);
      continue;
    }
    ASSERT_TRUE(route.ok()) << route.error().Render();
    EXPECT_EQ(route->listen.ToString(), c.listen);
    ASSERT_TRUE(route->target.is_unix());
    EXPECT_EQ(route->target.unix_path(), c.path_or_error);
    EXPECT_EQ(route->text, c.text);
  }
}

TEST(ParseRouteTest, RejectsAPathTooLongForSockaddrUn) {
  auto route = ParseRoute("127.77.0.2:443=/" + std::string(200, 'x'));
  ASSERT_FALSE(route.ok());
  EXPECT_THAT(route.error().Render(), HasSubstr("too long"));
}

base::Result<SuperviseConfig> Parse(std::vector<std::string> args) {
  return ParseSuperviseArgs(args);
}

TEST(ParseSuperviseArgsTest, RoutesTimeoutAndCommand) {
  auto config = Parse({"--route", "127.77.0.2:443=/a.sock", "--route=127.77.0.3:443=/b.sock",
                       "--probe-timeout-ms", "250", "--", "claude", "--print", "-x"});
  ASSERT_TRUE(config.ok()) << config.error().Render();
  ASSERT_EQ(config->routes.size(), 2U);
  EXPECT_EQ(config->routes[0].listen.ToString(), "127.77.0.2:443");
  EXPECT_EQ(config->routes[1].target.unix_path(), "/b.sock");
  EXPECT_EQ(config->probe_timeout.count(), 250);
  EXPECT_EQ(config->command, (std::vector<std::string>{"claude", "--print", "-x"}));
  EXPECT_FALSE(config->help);
}

TEST(ParseSuperviseArgsTest, DefaultsAndCommandWithoutDashDash) {
  auto config = Parse({"/bin/true", "--route", "x"});
  ASSERT_TRUE(config.ok()) << config.error().Render();
  EXPECT_TRUE(config->routes.empty());
  EXPECT_EQ(config->probe_timeout, kDefaultProbeTimeout);
  EXPECT_EQ(config->command, (std::vector<std::string>{"/bin/true", "--route", "x"}));
}

TEST(ParseSuperviseArgsTest, Help) {
  auto config = Parse({"--help"});
  ASSERT_TRUE(config.ok());
  EXPECT_TRUE(config->help);
  EXPECT_THAT(std::string(SuperviseUsage()), HasSubstr("--route ADDR:PORT=SOCKET_PATH"));
}

TEST(ParseSuperviseArgsTest, Errors) {
  const std::vector<std::pair<std::vector<std::string>, const char*>> cases = {
      {{}, "no command given"},
      {{"--route", "127.77.0.2:443=/a.sock"}, "no command given"},
      {{"--route", "127.77.0.2:443=/a.sock", "--"}, "no command given"},
      {{"--route"}, "--route needs a value"},
      {{"--route", "127.0.0.1:443=/a.sock", "--", "x"}, "outside 127.77.0.0/24"},
      {{"--route", "127.77.0.2:443=/a.sock", "--route", "127.77.0.2:443=/b.sock", "--", "x"},
       "used twice"},
      {{"--probe-timeout-ms", "0", "--", "x"}, "bad --probe-timeout-ms '0'"},
      {{"--probe-timeout-ms", "12x", "--", "x"}, "bad --probe-timeout-ms"},
      {{"--probe-timeout-ms=", "--", "x"}, "bad --probe-timeout-ms"},
      {{"--probe-timeout-ms", "600001", "--", "x"}, "expected 1..600000"},
      {{"--routes", "127.77.0.2:443=/a.sock", "--", "x"},
       "unknown option --routes: did you mean --route?"},
      {{"-v", "--", "x"}, "unknown option -v (see ateam-sandbox supervise --help)"},
      {{"--landlock", "fs,disk", "--", "x"}, "bad --landlock 'fs,disk'"},
      {{"--landlock", "", "--", "x"}, "expected a comma list of fs, net, scope"},
      {{"--landlock", "fs", "--landlock-write", "ws", "--", "x"}, "must be absolute"},
      {{"--landlock-write", "/ws", "--", "x"}, "--landlock-write needs --landlock"},
      {{"--tty", "tty.sock", "--", "x"}, "bad --tty 'tty.sock': the socket path must be absolute"},
      {{"--tty", "", "--", "x"}, "must be absolute"},
      {{"--tty", "/" + std::string(200, 'a'), "--", "x"}, "bad --tty"},
      {{"--tty-size", "24x80", "--", "x"}, "--tty-size needs --tty"},
      {{"--tty", "/t.sock", "--tty-size", "24", "--", "x"}, "bad --tty-size '24'"},
      {{"--tty", "/t.sock", "--tty-size", "0x80", "--", "x"}, "expected ROWSxCOLS"},
      {{"--tty", "/t.sock", "--tty-size", "24x65536", "--", "x"}, "expected ROWSxCOLS"},
      {{"--tty", "/t.sock", "--tty-size", "24x80x1", "--", "x"}, "expected ROWSxCOLS"},
      {{"--tty", "/t.sock", "--tty-size", "x80", "--", "x"}, "expected ROWSxCOLS"},
      {{"--tty"}, "--tty needs a value"},
      {{"--report", "report.sock", "--", "x"}, "bad --report 'report.sock': the socket path"},
      {{"--report"}, "--report needs a value"},
  };
  for (const auto& [args, message] : cases) {
    auto config = Parse(args);
    ASSERT_FALSE(config.ok()) << message;
    EXPECT_THAT(config.error().Render(), HasSubstr(message));
  }
}

TEST(ParseSuperviseArgsTest, Report) {
  auto config = Parse({"--report", "/run/ateam-tunnel/report.sock", "--", "sh"});
  ASSERT_TRUE(config.ok()) << config.error().Render();
  ASSERT_TRUE(config->report.has_value());
  EXPECT_EQ(config->report->unix_path(), "/run/ateam-tunnel/report.sock");
  auto without = Parse({"--", "sh"});
  ASSERT_TRUE(without.ok());
  EXPECT_FALSE(without->report.has_value());
}

TEST(ParseSuperviseArgsTest, Tty) {
  auto config = Parse({"--tty", "/run/ateam-tunnel/tty.sock", "--tty-size=50x132", "--", "sh"});
  ASSERT_TRUE(config.ok()) << config.error().Render();
  ASSERT_TRUE(config->tty.has_value());
  EXPECT_EQ(config->tty->socket.unix_path(), "/run/ateam-tunnel/tty.sock");
  EXPECT_EQ(config->tty->rows, 50);
  EXPECT_EQ(config->tty->cols, 132);

  // Without a size the kernel's 0 x 0 stays; without --tty there is no terminal at all.
  auto unsized = Parse({"--tty=/t.sock", "sh"});
  ASSERT_TRUE(unsized.ok()) << unsized.error().Render();
  EXPECT_EQ(unsized->tty->rows, 0);
  EXPECT_EQ(unsized->tty->cols, 0);
  auto none = Parse({"sh"});
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->tty.has_value());
}

TEST(ParseSuperviseArgsTest, SamePortOnTwoAddressesIsFine) {
  auto config = Parse({"--route", "127.77.0.2:443=/a.sock", "--route", "127.77.0.3:443=/a.sock",
                       "--route", "127.77.0.2:80=/c.sock", "--", "x"});
  ASSERT_TRUE(config.ok()) << config.error().Render();
  EXPECT_EQ(config->routes.size(), 3U);
}

TEST(ParseSuperviseArgsTest, NoLandlockUnlessAsked) {
  auto config = Parse({"--route", "127.77.0.2:443=/a.sock", "--", "x"});
  ASSERT_TRUE(config.ok()) << config.error().Render();
  EXPECT_FALSE(config->landlock.has_value());
}

TEST(ParseSuperviseArgsTest, LandlockPolicyTakesTheRoutePortsAndDevices) {
  auto config = Parse({"--route", "127.77.0.2:443=/a.sock", "--route", "127.77.0.3:8443=/b.sock",
                       "--landlock", "fs,scope", "--landlock-write", "/ws", "--landlock-write=/tmp",
                       "--", "x"});
  ASSERT_TRUE(config.ok()) << config.error().Render();
  ASSERT_TRUE(config->landlock.has_value());
  const security::LandlockPolicy& p = *config->landlock;
  EXPECT_TRUE(p.fs);
  EXPECT_FALSE(p.net);
  EXPECT_TRUE(p.scope);
  EXPECT_EQ(p.writable, (std::vector<std::string>{"/ws", "/tmp"}));
  EXPECT_EQ(p.connect_ports, (std::vector<uint16_t>{443, 8443}));
  EXPECT_THAT(p.devices, ::testing::Contains("/dev/null"));
  EXPECT_THAT(p.devices, ::testing::Contains("/dev/pts"));
  EXPECT_EQ(p.stdio_fds, (std::vector<int>{0, 1, 2}));
}

}  // namespace
}  // namespace sbx::supervise
