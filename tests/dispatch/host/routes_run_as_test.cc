// The host-side decisions of `run` before anything is created: which routes --allow and the
// preset give, and which host ids a root caller's sandbox runs as.
#include <gtest/gtest.h>

#include "dispatch/host/prepare.h"
#include "tests/support/plan_fixtures.h"

namespace sbx::dispatch {
namespace {

using runtime::fixtures::RootHost;
using runtime::fixtures::UserHost;

TEST(ParseDispatchRoutesTest, AllowInOrderThenThePresetEndpoints) {
  DispatchRequest request;
  request.agent = AgentPreset::kClaude;
  request.allow = {"api.example.com:8443", "other.example.com=127.0.0.1:9000"};
  auto routes = ParseDispatchRoutes(request);
  ASSERT_TRUE(routes) << routes.error().Render();
  ASSERT_EQ(routes->size(), 4U);
  EXPECT_EQ((*routes)[0].host, "api.example.com");
  EXPECT_EQ((*routes)[0].port, 8443);
  EXPECT_EQ((*routes)[1].host, "other.example.com");
  ASSERT_TRUE((*routes)[1].upstream_override.has_value());
  EXPECT_EQ((*routes)[1].upstream_override->ToString(), "127.0.0.1:9000");
  EXPECT_EQ((*routes)[2].host, "api.anthropic.com");
  EXPECT_EQ((*routes)[2].port, 443);
  EXPECT_EQ((*routes)[3].host, "platform.claude.com");
  for (size_t i = 0; i < routes->size(); ++i) EXPECT_EQ((*routes)[i].index, static_cast<int>(i));
}

TEST(ParseDispatchRoutesTest, ThePresetEndpointNamedByAllowIsNotAddedTwice) {
  DispatchRequest request;
  request.agent = AgentPreset::kClaude;
  request.allow = {"api.anthropic.com=127.0.0.1:9443"};
  auto routes = ParseDispatchRoutes(request);
  ASSERT_TRUE(routes) << routes.error().Render();
  ASSERT_EQ(routes->size(), 2U);
  EXPECT_TRUE((*routes)[0].upstream_override.has_value());
  EXPECT_EQ((*routes)[1].host, "platform.claude.com");
  // Telemetry only when asked; nothing with --no-default-allow.
  request.agent_telemetry = true;
  auto with_telemetry = ParseDispatchRoutes(request);
  ASSERT_TRUE(with_telemetry) << with_telemetry.error().Render();
  ASSERT_EQ(with_telemetry->size(), 3U);
  EXPECT_EQ((*with_telemetry)[2].host, "http-intake.logs.us5.datadoghq.com");
  request.no_default_allow = true;
  auto none = ParseDispatchRoutes(request);
  ASSERT_TRUE(none) << none.error().Render();
  EXPECT_EQ(none->size(), 1U);
}

TEST(ParseDispatchRoutesTest, EveryRouteHasOneSpellingOfItsHost) {
  DispatchRequest request;
  request.allow = {"API.Example.COM.=127.0.0.1:9443"};
  auto routes = ParseDispatchRoutes(request);
  ASSERT_TRUE(routes) << routes.error().Render();
  ASSERT_EQ(routes->size(), 1U);
  EXPECT_EQ((*routes)[0].host, "api.example.com");
}

TEST(ParseDispatchRoutesTest, NoDefaultAllowDropsThePresetEndpoint) {
  DispatchRequest request;
  request.agent = AgentPreset::kOpencode;
  request.no_default_allow = true;
  auto routes = ParseDispatchRoutes(request);
  ASSERT_TRUE(routes) << routes.error().Render();
  EXPECT_TRUE(routes->empty());
}

TEST(ParseDispatchRoutesTest, MalformedAndDuplicateEndpointsAreOneLineErrors) {
  for (const char* bad : {"", "api.example.com:0", "api.example.com:70000", "bad host",
                          "api.example.com=nowhere", "-leading.example.com"}) {
    DispatchRequest request;
    request.allow = {bad};
    auto routes = ParseDispatchRoutes(request);
    ASSERT_FALSE(routes) << "accepted: '" << bad << "'";
    std::string message = routes.error().Render();
    EXPECT_EQ(message.rfind("--allow", 0), 0U) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
  DispatchRequest twice;
  twice.allow = {"api.example.com", "api.example.com:8443"};
  EXPECT_FALSE(ParseDispatchRoutes(twice));
}

TEST(ParseDispatchRoutesTest, AtMostOneRoutePerTunnelAddress) {
  DispatchRequest request;
  // Appended rather than `"h" + std::to_string(i)`: GCC 12 at -O3 warns falsely
  // (-Wrestrict) on a literal inserted in front of a temporary string.
  for (int i = 0; i < 300; ++i) {
    request.allow.push_back(std::string("h").append(std::to_string(i)).append(".example.com"));
  }
  auto routes = ParseDispatchRoutes(request);
  ASSERT_FALSE(routes);
  EXPECT_NE(routes.error().Render().find("at most"), std::string::npos);
}

TEST(ResolveRunAsTest, UnprivilegedCallerRunsAsItselfAndCannotChoose) {
  DispatchRequest request;
  auto ids = ResolveRunAs(request, UserHost());
  ASSERT_TRUE(ids);
  EXPECT_FALSE(ids->has_value());
  request.run_as = "1234";
  EXPECT_FALSE(ResolveRunAs(request, UserHost()));
}

TEST(ResolveRunAsTest, RootDefaultsToTheOverflowIds) {
  runtime::HostFacts host = RootHost();
  host.overflow_uid = 65000;
  host.overflow_gid = 65001;
  auto ids = ResolveRunAs(DispatchRequest{}, host);
  ASSERT_TRUE(ids && ids->has_value());
  EXPECT_EQ((*ids)->uid, 65000U);
  EXPECT_EQ((*ids)->gid, 65001U);
}

TEST(ResolveRunAsTest, NumericIdsWithAndWithoutGroup) {
  DispatchRequest request;
  request.run_as = "1234:5678";
  auto ids = ResolveRunAs(request, RootHost());
  ASSERT_TRUE(ids && ids->has_value()) << (ids ? "" : ids.error().Render());
  EXPECT_EQ((*ids)->uid, 1234U);
  EXPECT_EQ((*ids)->gid, 5678U);
  request.run_as = "4321";
  ids = ResolveRunAs(request, RootHost());
  ASSERT_TRUE(ids && ids->has_value());
  EXPECT_EQ((*ids)->uid, 4321U);
  EXPECT_EQ((*ids)->gid, 4321U);
}

TEST(ResolveRunAsTest, RootAndGarbageAreRefused) {
  for (const char* who : {"0", "0:0", "1234:0", "root", "12x", "1:", ":5", "4294967295"}) {
    DispatchRequest request;
    request.run_as = who;
    auto ids = ResolveRunAs(request, RootHost());
    EXPECT_FALSE(ids) << "accepted --run-as " << who;
  }
}

TEST(ResolveRunAsTest, RootIdsAreRefusedByName) {
  for (const char* who : {"0", "root", "1234:0"}) {
    DispatchRequest request;
    request.run_as = who;
    auto ids = ResolveRunAs(request, RootHost());
    ASSERT_FALSE(ids) << who;
    EXPECT_NE(ids.error().Render().find("must not run as root"), std::string::npos)
        << who << ": " << ids.error().Render();
  }
}

TEST(ResolveRunAsTest, RootOfANamespaceThatMapsOnlyItselfRunsAsItself) {
  runtime::HostFacts host = RootHost();
  host.uid_map = runtime::ParseIdMap("         0       1000          1\n");
  host.gid_map = runtime::ParseIdMap("         0       1000          1\n");
  auto ids = ResolveRunAs(DispatchRequest{}, host);
  ASSERT_TRUE(ids);
  EXPECT_FALSE(ids->has_value()) << "65534 does not exist in that namespace";
  DispatchRequest request;
  request.run_as = "4321";
  ids = ResolveRunAs(request, host);
  ASSERT_FALSE(ids);
  EXPECT_NE(ids.error().Render().find("not mapped in this user namespace"), std::string::npos)
      << ids.error().Render();
}

TEST(ResolveRunAsTest, RootOfARangeMappedNamespaceUsesTheMappedOverflowIds) {
  runtime::HostFacts host = RootHost();
  host.uid_map = runtime::ParseIdMap("0 1000 1\n1 100000 65536\n");
  host.gid_map = host.uid_map;
  auto ids = ResolveRunAs(DispatchRequest{}, host);
  ASSERT_TRUE(ids && ids->has_value());
  EXPECT_EQ((*ids)->uid, 65534U);
  DispatchRequest request;
  request.run_as = "70000";  // beyond the range
  EXPECT_FALSE(ResolveRunAs(request, host));
}

TEST(HostFactsTest, IdMapsParseAndAnswer) {
  runtime::HostFacts host;
  EXPECT_TRUE(host.MapsUid(65534));  // the default: the initial namespace maps every id
  host.uid_map = runtime::ParseIdMap("0 1000 1\n1 100000 65536\ngarbage\n");
  ASSERT_EQ(host.uid_map.size(), 2U);
  EXPECT_TRUE(host.MapsUid(0));
  EXPECT_TRUE(host.MapsUid(65536));
  EXPECT_FALSE(host.MapsUid(65537));
  runtime::HostFacts root = RootHost();
  root.root_acts_unprivileged = true;
  EXPECT_FALSE(root.IsRoot());
}

}  // namespace
}  // namespace sbx::dispatch
