#include "contract/supervisor_contract.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sbx::contract {
namespace {

SupervisorArgs Everything() {
  SupervisorArgs args;
  args.routes = {{"127.77.0.2:443", RouteSocketInside(0)}, {"127.77.0.3:80", RouteSocketInside(1)}};
  args.probe_timeout = "250";
  args.landlock = "fs,net,scope";
  args.landlock_write = {"/workspace", "/out", "/tmp"};
  args.tty = TtySocketInside();
  args.tty_size = "24x80";
  args.command = {"claude", "--print", "--", "-x", "a=b"};
  return args;
}

TEST(SupervisorContractTest, WhatIsWrittenParsesBackToTheSameArgs) {
  const SupervisorArgs args = Everything();
  const std::vector<std::string> argv = WriteSupervisorArgs(args);
  auto parsed = ParseSupervisorArgs(argv);
  ASSERT_TRUE(parsed) << parsed.error().Render();
  EXPECT_EQ(*parsed, args);
}

TEST(SupervisorContractTest, TheSmallestArgsRoundTripToo) {
  SupervisorArgs args;
  args.command = {"-agent-whose-name-starts-with-a-dash"};
  auto parsed = ParseSupervisorArgs(WriteSupervisorArgs(args));
  ASSERT_TRUE(parsed) << parsed.error().Render();
  EXPECT_EQ(*parsed, args);
}

TEST(SupervisorContractTest, TheCommandRunsTheBinaryInTheTunnel) {
  SupervisorArgs args;
  args.command = {"sh"};
  const std::vector<std::string> expected = {"/run/ateam-tunnel/supervisor", "supervise", "--",
                                             "sh"};
  EXPECT_EQ(SupervisorCommand(args), expected);
  EXPECT_EQ(RouteSocketInside(3), "/run/ateam-tunnel/route-3.sock");
  EXPECT_EQ(TtySocketInside(), "/run/ateam-tunnel/tty.sock");
}

TEST(SupervisorContractTest, EqualsFormsAndTheCommandWithoutDashDash) {
  const std::vector<std::string> argv = {"--route=127.77.0.2:1=/s", "--tty=/t", "agent", "--x"};
  auto parsed = ParseSupervisorArgs(argv);
  ASSERT_TRUE(parsed) << parsed.error().Render();
  ASSERT_EQ(parsed->routes.size(), 1U);
  EXPECT_EQ(parsed->routes[0].listen, "127.77.0.2:1");
  EXPECT_EQ(parsed->routes[0].socket, "/s");
  EXPECT_EQ(parsed->tty, "/t");
  EXPECT_EQ(parsed->command, (std::vector<std::string>{"agent", "--x"}));
}

TEST(SupervisorContractTest, SyntaxErrorsAreOneLine) {
  auto parse = [](std::vector<std::string> argv) {
    auto parsed = ParseSupervisorArgs(argv);
    return parsed ? std::string() : parsed.error().Render();
  };
  EXPECT_EQ(parse({"--route"}), "--route needs a value");
  EXPECT_EQ(parse({"--route", "127.77.0.2:1", "--", "x"}),
            "bad --route '127.77.0.2:1': expected ADDR:PORT=SOCKET_PATH");
  EXPECT_EQ(parse({"--nope", "--", "x"}),
            "unknown option --nope (see ateam-sandbox supervise --help)");
  EXPECT_EQ(parse({"--tty", "/t"}), "no command given (after --)");
  auto help = ParseSupervisorArgs(std::vector<std::string>{"--tty", "/t", "-h"});
  ASSERT_TRUE(help);
  EXPECT_TRUE(help->help);
}

}  // namespace
}  // namespace sbx::contract
