// ClientHelloReader: hand-built hellos split every way, a real one captured from openssl, and
// the malformed shapes that must never pass as a hello naming the route's host.
#include "relay/client_hello.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <utility>
#include <vector>

#include "tests/relay/tls_samples.h"

namespace sbx::relay {
namespace {

using namespace testing::tls;

// Feeds `stream` whole.
ClientHelloReader ReadAll(const std::string& stream, size_t max = kMaxClientHelloBytes) {
  ClientHelloReader reader(max);
  reader.Update(stream);
  return reader;
}

// Feeds growing prefixes of `stream`, cut at the given sizes; every status before the last
// cut must be kIncomplete.
ClientHelloReader ReadInChunks(const std::string& stream, const std::vector<size_t>& chunks) {
  ClientHelloReader reader;
  size_t have = 0;
  for (size_t chunk : chunks) {
    EXPECT_EQ(reader.status(), HelloStatus::kIncomplete) << "after " << have << " bytes";
    have = std::min(stream.size(), have + chunk);
    reader.Update(std::string_view(stream).substr(0, have));
  }
  return reader;
}

void ExpectHost(const ClientHelloReader& reader, const std::string& host) {
  ASSERT_EQ(reader.status(), HelloStatus::kComplete) << HelloStatusName(reader.status());
  ASSERT_TRUE(reader.server_name().has_value());
  EXPECT_EQ(*reader.server_name(), host);
}

TEST(ClientHelloTest, OpensslTls13HelloNamesItsHost) {
  std::string hello = OpensslHello();
  ASSERT_EQ(hello.size(), 250u);
  ClientHelloReader reader = ReadAll(hello);
  ExpectHost(reader, "api.example.test");
  EXPECT_EQ(reader.consumed(), 250u);
}

TEST(ClientHelloTest, OpensslHelloOneByteAtATime) {
  std::string hello = OpensslHello();
  ClientHelloReader reader = ReadInChunks(hello, std::vector<size_t>(hello.size(), 1));
  ExpectHost(reader, "api.example.test");
}

TEST(ClientHelloTest, HelloSplitAcrossManyRecordsAndReads) {
  std::vector<Extension> extensions = {{0x0a0a, ""}, {10, U16(2) + U16(29)}, Sni("a.example")};
  std::mt19937 random(7);
  for (size_t record_size : std::vector<size_t>{1, 2, 3, 4, 5, 7, 40, 1000}) {
    std::string stream = Hello(extensions, record_size);
    ExpectHost(ReadAll(stream), "a.example");
    // The same bytes, read in random pieces of 1 to 9 bytes.
    std::vector<size_t> chunks;
    for (size_t total = 0; total < stream.size(); total += chunks.back()) {
      chunks.push_back(1 + random() % 9);
    }
    ExpectHost(ReadInChunks(stream, chunks), "a.example");
  }
}

TEST(ClientHelloTest, GreaseAndOtherExtensionsBeforeAndAfterTheName) {
  std::vector<Extension> extensions = {
      {0x1a1a, U8(0)},                 // GREASE, with a byte of data
      {43, U8(2) + U16(0x0304)},       // supported_versions
      {0xfe0d, std::string(40, 'e')},  // encrypted_client_hello (GREASE-like bytes)
      Sni("api.example.com"),
      {0x2a2a, ""},                // GREASE, empty
      {41, std::string(20, 'p')},  // pre_shared_key, last as it must be
  };
  ExpectHost(ReadAll(Hello(extensions)), "api.example.com");
}

TEST(ClientHelloTest, HelloWithoutServerName) {
  ClientHelloReader no_sni = ReadAll(Hello({{10, U16(2) + U16(29)}}));
  EXPECT_EQ(no_sni.status(), HelloStatus::kComplete);
  EXPECT_FALSE(no_sni.server_name().has_value());

  ClientHelloReader no_extensions =
      ReadAll(Records(HandshakeMessage(HelloBody({}, /*with_extensions=*/false))));
  EXPECT_EQ(no_extensions.status(), HelloStatus::kComplete);
  EXPECT_FALSE(no_extensions.server_name().has_value());
}

TEST(ClientHelloTest, BytesAfterTheHelloAreLeftAlone) {
  std::string hello = Hello({Sni("api.example.com")});
  // TLS 1.3 early data (or anything) after the hello's records is not the reader's business.
  std::string stream = hello + U8(23) + U16(0x0303) + U16(3) + "abc";
  ClientHelloReader reader = ReadAll(stream);
  ExpectHost(reader, "api.example.com");
  EXPECT_EQ(reader.consumed(), hello.size());
}

TEST(ClientHelloTest, OtherProtocolsAreNotTlsFromTheirFirstByte) {
  for (const std::string& first : std::vector<std::string>{"G", "S", "\x80", "\x15", {'\0'}}) {
    EXPECT_EQ(ReadAll(first).status(), HelloStatus::kNotTls) << static_cast<int>(first[0]);
  }
  EXPECT_EQ(ReadAll("SSH-2.0-OpenSSH_9.2\r\n").status(), HelloStatus::kNotTls);
  EXPECT_EQ(ReadAll("\x16\x08").status(), HelloStatus::kNotTls);
  EXPECT_EQ(ReadAll("\x16\x03\x09").status(), HelloStatus::kNotTls);
  // One good byte is not enough to say anything yet.
  EXPECT_EQ(ReadAll("\x16").status(), HelloStatus::kIncomplete);
  EXPECT_EQ(ReadAll("").status(), HelloStatus::kIncomplete);
}

TEST(ClientHelloTest, MalformedHellosAreRefused) {
  std::string good_body = HelloBody({Sni("api.example.com")});
  std::string sni = ServerNameData("api.example.com");
  std::vector<std::pair<std::string, std::string>> cases = {
      {"server hello", Records(HandshakeMessage(good_body, 2))},
      {"empty record", U8(22) + U16(0x0301) + U16(0)},
      {"record over 2^14", U8(22) + U16(0x0301) + U16(16385)},
      {"alert between records",
       Records(HandshakeMessage(good_body).substr(0, 10)) + U8(21) + U16(0x0301) + U16(2) + "xx"},
      {"two server_name extensions", Hello({Sni("api.example.com"), Sni("other.test")})},
      {"two names in one extension",
       Hello({{0, U16(26 /* two entries of 13 */) + U8(0) + U16(10) + "a.example1" + U8(0) +
                      U16(10) + "b.example2"}})},
      {"name type 1", Hello({{0, ServerNameData("api.example.com", 1)}})},
      {"empty name", Hello({{0, ServerNameData("")}})},
      {"name with NUL", Hello({{0, ServerNameData(std::string("api.example.com\0x", 17))}})},
      {"name over 255 bytes", Hello({{0, ServerNameData(std::string(256, 'a'))}})},
      {"server_name list too short", Hello({{0, sni.substr(0, sni.size() - 1)}})},
      {"server_name list length off", Hello({{0, U16(99) + sni.substr(2)}})},
      {"extension longer than the list",
       Records(HandshakeMessage(HelloBody({}, false) + U16(4) + U16(0) + U16(9)))},
      {"extensions length off",
       Records(HandshakeMessage(HelloBody({}, false) + U16(7) + U16(5) + U16(0)))},
      {"odd cipher suites length",
       Records(HandshakeMessage(U16(0x0303) + std::string(32, 'r') + U8(0) + U16(3) + "abc" +
                                U8(1) + U8(0)))},
      {"session id over 32", Records(HandshakeMessage(U16(0x0303) + std::string(32, 'r') + U8(33) +
                                                      std::string(33, 's')))},
      {"version 2", Records(HandshakeMessage(U16(0x0200) + good_body.substr(2)))},
      {"truncated body", Records(HandshakeMessage(good_body.substr(0, 30)))},
      {"bytes after the hello in its record",
       Records(HandshakeMessage(good_body) + HandshakeMessage("x", 20))},
  };
  for (const auto& [name, stream] : cases) {
    ClientHelloReader reader = ReadAll(stream);
    EXPECT_EQ(reader.status(), HelloStatus::kMalformed)
        << name << ": " << HelloStatusName(reader.status());
    EXPECT_FALSE(reader.server_name().has_value()) << name;
  }
}

TEST(ClientHelloTest, TooLargeIsToldByTheLengthFields) {
  // The handshake header announces 20000 bytes: no need to wait for them.
  std::string header = U8(22) + U16(0x0301) + U16(4) + U8(1) + U24(20000);
  EXPECT_EQ(ReadAll(header).status(), HelloStatus::kTooLarge);
  // A smaller bound: a record that would end past it.
  std::string hello = Hello({Sni("api.example.com")});
  EXPECT_EQ(ReadAll(hello, 100).status(), HelloStatus::kTooLarge);
  // Tiny records cost 5 bytes each: within the message size, past the stream bound.
  EXPECT_EQ(ReadAll(Hello({Sni("api.example.com")}, 1), 400).status(), HelloStatus::kTooLarge);
  EXPECT_EQ(ReadAll(Hello({Sni("api.example.com")}, 1), kMaxClientHelloBytes).status(),
            HelloStatus::kComplete);
}

TEST(ClientHelloTest, TheOutcomeStaysOnceDecided) {
  std::string hello = Hello({Sni("api.example.com")});
  ClientHelloReader reader;
  reader.Update(hello);
  reader.Update(hello + "garbage");
  ExpectHost(reader, "api.example.com");
  ClientHelloReader refused;
  refused.Update("G");
  refused.Update(hello);
  EXPECT_EQ(refused.status(), HelloStatus::kNotTls);
}

TEST(ClientHelloTest, ServerNameMatchesIgnoresCaseAndOneTrailingDot) {
  EXPECT_TRUE(ServerNameMatches("api.example.com", "api.example.com"));
  EXPECT_TRUE(ServerNameMatches("API.Example.COM", "api.example.com"));
  EXPECT_TRUE(ServerNameMatches("api.example.com.", "api.example.com"));
  EXPECT_TRUE(ServerNameMatches("api.example.com", "Api.Example.Com."));
  EXPECT_FALSE(ServerNameMatches("other.test", "api.example.com"));
  EXPECT_FALSE(ServerNameMatches("api.example.co", "api.example.com"));
  EXPECT_FALSE(ServerNameMatches("xapi.example.com", "api.example.com"));
  EXPECT_FALSE(ServerNameMatches("api.example.com..", "api.example.com"));
  EXPECT_FALSE(ServerNameMatches("", ""));
  EXPECT_FALSE(ServerNameMatches(".", "."));
}

}  // namespace
}  // namespace sbx::relay
