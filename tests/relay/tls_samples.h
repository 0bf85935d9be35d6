// TLS ClientHello samples for the relay tests: a real one captured from openssl, and a
// builder for hand-made ones (any extensions, any record split).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sbx::relay::testing::tls {

// `openssl s_client -connect 127.0.0.1:P -servername api.example.test -tls1_3` (OpenSSL
// 3.0), as a TCP listener received it: one record, SNI api.example.test, 250 bytes.
inline constexpr char kOpensslHelloHex[] =
    "16030100f5010000f10303013780ec19bc2cad4bace8379fd20890c24d40"
    "760ba9421a868c76c575c259fb2014004086f36e4d04c97501035af30968"
    "3ce1bafc8f8a49193db0051407531b2a000813021303130100ff010000a0"
    "0000001500130000106170692e6578616d706c652e74657374000b000403"
    "000102000a00160014001d0017001e001900180100010101020103010400"
    "2300000016000000170000000d001e001c04030503060308070808080908"
    "0a080b080408050806040105010601002b0003020304002d000201010033"
    "00260024001d0020ffd650638758059b1a474eb49c17d414a543cf769a01"
    "971ab9bf395bdec51544";

inline std::string FromHex(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  }
  return out;
}

inline std::string U8(size_t v) { return {static_cast<char>(v & 0xff)}; }
inline std::string U16(size_t v) { return U8(v >> 8) + U8(v); }
inline std::string U24(size_t v) { return U8(v >> 16) + U16(v); }

inline std::string ServerNameData(const std::string& host, size_t name_type = 0) {
  std::string entry = U8(name_type) + U16(host.size()) + host;
  return U16(entry.size()) + entry;
}

using Extension = std::pair<uint16_t, std::string>;

inline Extension Sni(const std::string& host) { return {0, ServerNameData(host)}; }

// A TLS 1.3-shaped ClientHello body with the given extensions, in order.
inline std::string HelloBody(const std::vector<Extension>& extensions,
                             bool with_extensions = true) {
  std::string body = U16(0x0303) + std::string(32, 'r') + U8(32) + std::string(32, 's');
  body += U16(6) + U16(0x1301) + U16(0x1302) + U16(0x1303);  // cipher suites
  body += U8(1) + U8(0);                                     // compression: null
  if (!with_extensions) return body;
  std::string list;
  for (const auto& [type, data] : extensions) list += U16(type) + U16(data.size()) + data;
  return body + U16(list.size()) + list;
}

inline std::string HandshakeMessage(const std::string& body, uint8_t type = 1) {
  return U8(type) + U24(body.size()) + body;
}

// `message` in records of at most `record_size` payload bytes.
inline std::string Records(const std::string& message, size_t record_size = 16384,
                           uint16_t version = 0x0301) {
  std::string out;
  for (size_t at = 0; at < message.size(); at += record_size) {
    std::string part = message.substr(at, record_size);
    out += U8(22) + U16(version) + U16(part.size()) + part;
  }
  return out;
}

inline std::string Hello(const std::vector<Extension>& extensions, size_t record_size = 16384) {
  return Records(HandshakeMessage(HelloBody(extensions)), record_size);
}

inline std::string OpensslHello() { return FromHex(kOpensslHelloHex); }

}  // namespace sbx::relay::testing::tls
