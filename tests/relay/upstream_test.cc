// Address classification, route parsing and upstream pinning.
#include "relay/upstream.h"

#include <gtest/gtest.h>

#include <cerrno>

namespace sbx::relay {
namespace {

AddressClass ClassOf(const char* ip) {
  auto address = SocketAddress::FromIp(ip, 443);
  EXPECT_TRUE(address) << ip;
  return ClassifyAddress(*address);
}

TEST(SocketAddressTest, ParsesAndPrintsBothFamilies) {
  auto v4 = SocketAddress::Parse("192.0.2.7:443");
  ASSERT_TRUE(v4);
  EXPECT_EQ(v4->ToString(), "192.0.2.7:443");
  EXPECT_EQ(v4->port(), 443);
  auto v6 = SocketAddress::Parse("[2001:db8::1]:8443");
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->ToString(), "[2001:db8::1]:8443");
  for (const char* bad : {"192.0.2.7", "2001:db8::1:443", "[::1]", "host:443", "1.2.3.4:0",
                          "1.2.3.4:65536", "1.2.3.4:44x", ""}) {
    EXPECT_FALSE(SocketAddress::Parse(bad)) << bad;
  }
}

TEST(AddressClassTest, Ipv4Ranges) {
  EXPECT_EQ(ClassOf("1.1.1.1"), AddressClass::kPublic);
  EXPECT_EQ(ClassOf("160.79.104.10"), AddressClass::kPublic);
  EXPECT_EQ(ClassOf("127.0.0.1"), AddressClass::kLoopback);
  EXPECT_EQ(ClassOf("127.77.0.2"), AddressClass::kLoopback);
  EXPECT_EQ(ClassOf("10.1.2.3"), AddressClass::kPrivate);
  EXPECT_EQ(ClassOf("172.16.0.1"), AddressClass::kPrivate);
  EXPECT_EQ(ClassOf("172.31.255.255"), AddressClass::kPrivate);
  EXPECT_EQ(ClassOf("172.32.0.1"), AddressClass::kPublic);
  EXPECT_EQ(ClassOf("192.168.1.1"), AddressClass::kPrivate);
  EXPECT_EQ(ClassOf("100.64.0.1"), AddressClass::kPrivate);
  EXPECT_EQ(ClassOf("100.127.255.255"), AddressClass::kPrivate);
  EXPECT_EQ(ClassOf("100.128.0.1"), AddressClass::kPublic);
  EXPECT_EQ(ClassOf("169.254.1.1"), AddressClass::kLinkLocal);
  EXPECT_EQ(ClassOf("169.254.169.254"), AddressClass::kMetadata);
  EXPECT_EQ(ClassOf("0.0.0.0"), AddressClass::kUnspecified);
  EXPECT_EQ(ClassOf("0.1.2.3"), AddressClass::kPrivate);
  EXPECT_EQ(ClassOf("224.0.0.1"), AddressClass::kMulticast);
  EXPECT_EQ(ClassOf("255.255.255.255"), AddressClass::kBroadcast);
}

TEST(AddressClassTest, Ipv6Ranges) {
  EXPECT_EQ(ClassOf("2606:4700::1111"), AddressClass::kPublic);
  EXPECT_EQ(ClassOf("::1"), AddressClass::kLoopback);
  EXPECT_EQ(ClassOf("::"), AddressClass::kUnspecified);
  EXPECT_EQ(ClassOf("fc00::1"), AddressClass::kPrivate);
  EXPECT_EQ(ClassOf("fd12:3456::1"), AddressClass::kPrivate);
  EXPECT_EQ(ClassOf("fe80::1"), AddressClass::kLinkLocal);
  EXPECT_EQ(ClassOf("ff02::1"), AddressClass::kMulticast);
  EXPECT_EQ(ClassOf("fd00:ec2::254"), AddressClass::kMetadata);
  // IPv4 carried in IPv6 is judged as the IPv4 address it reaches.
  EXPECT_EQ(ClassOf("::ffff:127.0.0.1"), AddressClass::kLoopback);
  EXPECT_EQ(ClassOf("::ffff:169.254.169.254"), AddressClass::kMetadata);
  EXPECT_EQ(ClassOf("::ffff:8.8.8.8"), AddressClass::kPublic);
  EXPECT_EQ(ClassOf("64:ff9b::10.0.0.1"), AddressClass::kPrivate);
}

TEST(AddressClassTest, Ipv6TunnelsToIpv4AreRefused) {
  // 6to4 (2002::/16) embeds any IPv4 address, 10.0.0.1 here; Teredo is 2001::/32.
  EXPECT_EQ(ClassOf("2002:a00:1::1"), AddressClass::kPrivate);
  EXPECT_EQ(ClassOf("2002:808:808::1"), AddressClass::kPrivate);
  EXPECT_EQ(ClassOf("2001:0:4136:e378:8000:63bf:3fff:fdd2"), AddressClass::kPrivate);
  // Neighbours of those prefixes stay public.
  EXPECT_EQ(ClassOf("2001:db8::1"), AddressClass::kPublic);
  EXPECT_EQ(ClassOf("2001:4860:4860::8888"), AddressClass::kPublic);
  EXPECT_EQ(ClassOf("2003::1"), AddressClass::kPublic);
}

TEST(RouteTest, ParsesHostPortAndOverride) {
  auto plain = ParseRoute("api.example.com", 0);
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->host, "api.example.com");
  EXPECT_EQ(plain->port, 443);
  EXPECT_FALSE(plain->upstream_override);

  auto with_port = ParseRoute("api.example.com:8443", 3);
  ASSERT_TRUE(with_port);
  EXPECT_EQ(with_port->index, 3);
  EXPECT_EQ(with_port->port, 8443);

  auto mirrored = ParseRoute("api.example.com=127.0.0.1:9443", 1);
  ASSERT_TRUE(mirrored);
  EXPECT_EQ(mirrored->port, 443);
  ASSERT_TRUE(mirrored->upstream_override);
  EXPECT_EQ(mirrored->upstream_override->ToString(), "127.0.0.1:9443");

  for (const char* bad : {"", "api.example.com:0", "api.example.com:x", "bad host",
                          "api.example.com=localhost:443", "-x.example.com", "a/b"}) {
    EXPECT_FALSE(ParseRoute(bad, 0)) << bad;
  }
}

TEST(RouteTest, KindIsTlsFor443AndTcpElseUnlessNamed) {
  struct Case {
    const char* spec;
    RouteKind kind;
    uint16_t port;
    bool overridden;
  };
  for (const Case& c : {
           Case{"api.example.com", RouteKind::kTls, 443, false},
           Case{"api.example.com:443", RouteKind::kTls, 443, false},
           Case{"git.example.com:22", RouteKind::kTcp, 22, false},
           Case{"api.example.com:8443", RouteKind::kTcp, 8443, false},
           Case{"api.example.com:8443,tls", RouteKind::kTls, 8443, false},
           Case{"api.example.com,tcp", RouteKind::kTcp, 443, false},
           Case{"banner.test:22=127.0.0.1:2222,tcp", RouteKind::kTcp, 22, true},
           Case{"api.example.com=127.0.0.1:9443,tls", RouteKind::kTls, 443, true},
           Case{"api.example.com=[::1]:9443,tcp", RouteKind::kTcp, 443, true},
       }) {
    auto route = ParseRoute(c.spec, 0);
    ASSERT_TRUE(route) << c.spec << ": " << route.error().Render();
    EXPECT_EQ(route->kind, c.kind) << c.spec;
    EXPECT_EQ(route->port, c.port) << c.spec;
    EXPECT_EQ(route->upstream_override.has_value(), c.overridden) << c.spec;
    EXPECT_EQ(route->host.find(','), std::string::npos) << c.spec;
  }
  for (const char* bad : {"api.example.com,", "api.example.com,udp", "api.example.com,tls,tcp",
                          "api.example.com,TLS", ",tcp", "api.example.com:,tcp"}) {
    auto route = ParseRoute(bad, 0);
    ASSERT_FALSE(route) << bad;
    EXPECT_NE(route.error().Render().find(bad), std::string::npos) << route.error().Render();
  }
  EXPECT_EQ(RouteKindName(RouteKind::kTls), "tls");
  EXPECT_EQ(RouteKindName(RouteKind::kTcp), "tcp");
}

TEST(UpstreamTest, PicksThePublicAddressAndRefusesAnyInternalOne) {
  auto pub = *SocketAddress::Parse("192.0.2.7:443");  // TEST-NET-1 counts as public here
  auto pub2 = *SocketAddress::Parse("[2001:db8::7]:443");
  auto pinned = PickUpstream("api.example.com", {pub, pub2});
  ASSERT_TRUE(pinned);
  EXPECT_EQ(pinned->ToString(), "192.0.2.7:443");

  for (const char* bad : {"127.0.0.1:443", "10.0.0.5:443", "169.254.169.254:443",
                          "[fd00:ec2::254]:443", "[fe80::1]:443", "0.0.0.0:443", "224.0.0.1:443"}) {
    auto refused = PickUpstream("api.example.com", {pub, *SocketAddress::Parse(bad)});
    ASSERT_FALSE(refused) << bad;
    EXPECT_EQ(refused.error().err(), EACCES);
    EXPECT_NE(refused.error().Render().find("api.example.com"), std::string::npos);
  }
  EXPECT_FALSE(PickUpstream("api.example.com", {}));
}

TEST(UpstreamTest, LocalhostIsRefusedUnlessNamedExplicitly) {
  Route route;
  route.host = "localhost";
  route.port = 443;
  auto refused = ResolveUpstream(route);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().Render().find("loopback"), std::string::npos)
      << refused.error().Render();

  route.upstream_override = *SocketAddress::Parse("127.0.0.1:9443");
  auto pinned = ResolveUpstream(route);
  ASSERT_TRUE(pinned);
  EXPECT_EQ(pinned->ToString(), "127.0.0.1:9443");
}

TEST(UpstreamTest, UnknownNameFailsWithItsName) {
  Route route;
  route.host = "no-such-host.invalid";
  auto failed = ResolveUpstream(route);
  ASSERT_FALSE(failed);
  EXPECT_NE(failed.error().Render().find("no-such-host.invalid"), std::string::npos);
}

}  // namespace
}  // namespace sbx::relay
