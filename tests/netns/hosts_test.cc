#include "netns/hosts.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sbx::netns {
namespace {

struct NameCase {
  const char* input;
  const char* normalized;
};

TEST(HostsTest, AcceptsAndNormalizesHostnames) {
  const NameCase cases[] = {
      {"api.anthropic.com", "api.anthropic.com"},
      {"API.Anthropic.COM", "api.anthropic.com"},
      {"github.com.", "github.com"},  // one root dot is dropped
      {"a", "a"},
      {"x-1.y-2.example", "x-1.y-2.example"},
      {"1e100.net", "1e100.net"},
      {"123.example.org", "123.example.org"},
      {"xn--bcher-kva.example", "xn--bcher-kva.example"},
  };
  for (const NameCase& c : cases) {
    auto name = NormalizeHostname(c.input);
    ASSERT_TRUE(name) << c.input << ": " << name.error().Render();
    EXPECT_EQ(*name, c.normalized);
  }
  const std::string label63(63, 'a');
  EXPECT_TRUE(NormalizeHostname(label63 + ".com"));
  // 4 labels of 63 + 3 dots = 255 > 253; 3 of 63 and one of 61 = 253 exactly.
  EXPECT_TRUE(
      NormalizeHostname(label63 + "." + label63 + "." + label63 + "." + std::string(61, 'b')));
}

struct RejectCase {
  std::string input;
  std::string message;  // the whole rendered error
};

TEST(HostsTest, RejectsInvalidHostnamesWithOneLineMessages) {
  const std::string label63(63, 'a');
  const std::vector<RejectCase> cases = {
      {"", "Invalid hostname \"\": empty"},
      {".", "Invalid hostname \".\": empty label (two dots in a row, or a leading dot)"},
      {"a..b", "Invalid hostname \"a..b\": empty label (two dots in a row, or a leading dot)"},
      {".example.com",
       "Invalid hostname \".example.com\": empty label (two dots in a row, or a leading dot)"},
      {"example.com..",
       "Invalid hostname \"example.com..\": empty label (two dots in a row, or a leading dot)"},
      {"foo_bar.com",
       "Invalid hostname \"foo_bar.com\": character \"_\" not allowed (letters, digits, '-' "
       "and '.' only)"},
      {"example.com/path",
       "Invalid hostname \"example.com/path\": character \"/\" not allowed (letters, digits, "
       "'-' and '.' only)"},
      {"example.com\n",
       "Invalid hostname \"example.com\\x0a\": character \"\\x0a\" not allowed (letters, "
       "digits, '-' and '.' only)"},
      {"example.com evil.com",
       "Invalid hostname \"example.com evil.com\": character \" \" not allowed (letters, "
       "digits, '-' and '.' only)"},
      {"-a.com", "Invalid hostname \"-a.com\": label \"-a\" starts or ends with '-'"},
      {"a-.com", "Invalid hostname \"a-.com\": label \"a-\" starts or ends with '-'"},
      {label63 + "a.com",
       "Invalid hostname \"" + label63 + "a.com\": label of 64 characters (at most 63)"},
      {"example.com:443",
       "Invalid hostname \"example.com:443\": an IPv6 address or a port; give the hostname "
       "alone"},
      {"::1", "Invalid hostname \"::1\": an IPv6 address or a port; give the hostname alone"},
      {"[2001:db8::1]",
       "Invalid hostname \"[2001:db8::1]\": an IPv6 address or a port; give the hostname alone"},
      {"1.2.3.4", "Invalid hostname \"1.2.3.4\": an IP address, not a hostname"},
      {"127.1", "Invalid hostname \"127.1\": an IP address, not a hostname"},
      {"0x7f000001", "Invalid hostname \"0x7f000001\": an IP address, not a hostname"},
      {"example.123", "Invalid hostname \"example.123\": an IP address, not a hostname"},
      {"localhost",
       "Invalid hostname \"localhost\": reserved for the loopback entries of "
       "/etc/hosts"},
      {"LocalHost.",
       "Invalid hostname \"LocalHost.\": reserved for the loopback entries of "
       "/etc/hosts"},
      {"db.localhost",
       "Invalid hostname \"db.localhost\": reserved for the loopback entries "
       "of /etc/hosts"},
      {"ip6-loopback",
       "Invalid hostname \"ip6-loopback\": reserved for the loopback entries "
       "of /etc/hosts"},
      {"caf\xc3\xa9.fr",
       "Invalid hostname \"caf\\xc3\\xa9.fr\": character \"\\xc3\" not allowed (letters, "
       "digits, '-' and '.' only)"},
  };
  for (const RejectCase& c : cases) {
    auto name = NormalizeHostname(c.input);
    ASSERT_FALSE(name) << c.input << " accepted as " << *name;
    EXPECT_EQ(name.error().Render(), c.message);
    EXPECT_EQ(name.error().Render().find('\n'), std::string::npos);
  }
}

TEST(HostsTest, RejectsOverlongNames) {
  const std::string label63(63, 'a');
  const std::string name = label63 + "." + label63 + "." + label63 + "." + std::string(62, 'b');
  auto result = NormalizeHostname(name);
  ASSERT_FALSE(result);
  EXPECT_NE(result.error().Render().find(": 254 characters (at most 253)"), std::string::npos)
      << result.error().Render();
  // The echoed input is cut, so the message stays readable.
  EXPECT_LT(result.error().Render().size(), 140U);
}

TEST(HostsTest, RouteAddresses) {
  EXPECT_EQ(*RouteAddress(0), "127.77.0.2");
  EXPECT_EQ(*RouteAddress(3), "127.77.0.5");
  EXPECT_EQ(*RouteAddress(kMaxRoutes - 1), "127.77.0.254");
  EXPECT_FALSE(RouteAddress(kMaxRoutes));
  auto addr = RouteInAddr(1);
  ASSERT_TRUE(addr);
  EXPECT_EQ(ntohl(addr->s_addr), 0x7f4d0003U);  // 127.77.0.3
  EXPECT_EQ(RouteInAddr(999).error().Render(), "Route index 999 out of range (at most 253 routes)");
}

TEST(HostsTest, RendersHostsFile) {
  const std::vector<HostRoute> routes = {
      {"api.anthropic.com", 443},
      {"GitHub.com.", 443},
      {"statsig.anthropic.com", 8443},
  };
  auto hosts = RenderHostsFile(routes);
  ASSERT_TRUE(hosts) << hosts.error().Render();
  EXPECT_EQ(*hosts,
            "# Generated by ateam-sandbox: each allowed host has its own loopback address.\n"
            "127.0.0.1 localhost\n"
            "::1 localhost ip6-localhost ip6-loopback\n"
            "127.77.0.2 api.anthropic.com\n"
            "127.77.0.3 github.com\n"
            "127.77.0.4 statsig.anthropic.com\n");
}

TEST(HostsTest, RendersLoopbackLinesWithoutRoutes) {
  auto hosts = RenderHostsFile({});
  ASSERT_TRUE(hosts);
  EXPECT_NE(hosts->find("\n127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n"),
            std::string::npos);
  EXPECT_EQ(hosts->find("127.77."), std::string::npos);
}

TEST(HostsTest, RejectsBadRouteLists) {
  const std::vector<HostRoute> duplicate = {{"a.example", 443}, {"A.example.", 80}};
  EXPECT_EQ(RenderHostsFile(duplicate).error().Render(), "Route a.example is given twice");
  const std::vector<HostRoute> port0 = {{"a.example", 0}};
  EXPECT_EQ(ValidateRoutes(port0).error().Render(), "Route a.example: port 0 is not valid");
  const std::vector<HostRoute> bad = {{"a.example", 443}, {"b_c", 443}};
  EXPECT_FALSE(RenderHostsFile(bad));

  std::vector<HostRoute> many;
  // Appended rather than `"h" + std::to_string(i)`: GCC 12 at -O3 warns falsely
  // (-Wrestrict) on a literal inserted in front of a temporary string.
  for (size_t i = 0; i <= kMaxRoutes; ++i) {
    std::string name = "h";
    name += std::to_string(i);
    name += ".x";
    many.push_back({name, 443});
  }
  EXPECT_EQ(ValidateRoutes(many).error().Render(), "Too many routes: 254 (at most 253)");
  many.pop_back();
  auto hosts = RenderHostsFile(many);
  ASSERT_TRUE(hosts);
  EXPECT_NE(hosts->find("127.77.0.254 h252.x\n"), std::string::npos);
}

}  // namespace
}  // namespace sbx::netns
