#include "relay/client_hello.h"

#include <algorithm>

namespace sbx::relay {
namespace {

constexpr uint8_t kHandshakeRecord = 22;     // ContentType handshake
constexpr uint8_t kClientHelloType = 1;      // HandshakeType client_hello
constexpr size_t kRecordHeaderBytes = 5;     // type, version (2), length (2)
constexpr size_t kMaxRecordPayload = 16384;  // 2^14: the most a plaintext record may carry
constexpr uint16_t kServerNameExtension = 0;
constexpr uint8_t kHostNameType = 0;
constexpr size_t kMaxHostName = 255;  // what servers accept (OpenSSL: TLSEXT_MAXLEN_host_name)

uint8_t Byte(std::string_view data, size_t at) { return static_cast<uint8_t>(data[at]); }

// Reads big-endian fields from a byte string; every read fails once the data runs out.
class Cursor {
 public:
  explicit Cursor(std::string_view data) : data_(data) {}

  [[nodiscard]] size_t left() const { return data_.size(); }
  bool U8(size_t& value) { return Uint(1, value); }
  bool U16(size_t& value) { return Uint(2, value); }
  bool Bytes(size_t count, std::string_view& out) {
    if (count > data_.size()) return false;
    out = data_.substr(0, count);
    data_.remove_prefix(count);
    return true;
  }
  bool Skip(size_t count) {
    std::string_view ignored;
    return Bytes(count, ignored);
  }
  // A field of `count` bytes whose length is given by the `length_bytes` before it.
  bool Vector(size_t length_bytes, std::string_view& out) {
    size_t count = 0;
    return Uint(length_bytes, count) && Bytes(count, out);
  }

 private:
  bool Uint(size_t width, size_t& value) {
    if (width > data_.size()) return false;
    value = 0;
    for (size_t i = 0; i < width; ++i) value = (value << 8) | Byte(data_, i);
    data_.remove_prefix(width);
    return true;
  }

  std::string_view data_;
};

// The server_name extension's data (RFC 6066 3): a list that must hold exactly one entry, a
// host_name. Other name types were never defined, and servers disagree on how to skip them,
// so a list a server could read differently from us is refused as malformed.
bool ParseServerName(std::string_view data, std::string& host) {
  Cursor list(data);
  std::string_view entries;
  if (!list.Vector(2, entries) || list.left() != 0 || entries.empty()) return false;
  Cursor entry(entries);
  size_t type = 0;
  std::string_view name;
  if (!entry.U8(type) || type != kHostNameType || !entry.Vector(2, name) || entry.left() != 0) {
    return false;
  }
  // A NUL could end the name early for a server written in C.
  if (name.empty() || name.size() > kMaxHostName || name.find('\0') != std::string_view::npos) {
    return false;
  }
  host = std::string(name);
  return true;
}

}  // namespace

std::string_view HelloStatusName(HelloStatus status) {
  switch (status) {
    case HelloStatus::kIncomplete:
      return "incomplete";
    case HelloStatus::kComplete:
      return "complete";
    case HelloStatus::kNotTls:
      return "not-tls";
    case HelloStatus::kMalformed:
      return "malformed";
    case HelloStatus::kTooLarge:
      return "too-large";
  }
  return "unknown";
}

std::optional<ClientHelloFields> ParseClientHelloBody(std::string_view body) {
  Cursor hello(body);
  size_t version = 0;
  size_t session_id_length = 0;
  std::string_view cipher_suites;
  std::string_view compression;
  if (!hello.U16(version) || (version >> 8) != 3 || !hello.Skip(32) ||  // legacy_version, random
      !hello.U8(session_id_length) || session_id_length > 32 || !hello.Skip(session_id_length) ||
      !hello.Vector(2, cipher_suites) || cipher_suites.size() < 2 ||
      cipher_suites.size() % 2 != 0 || !hello.Vector(1, compression) || compression.empty()) {
    return std::nullopt;
  }
  ClientHelloFields fields;
  if (hello.left() == 0) return fields;  // no extensions at all (TLS 1.2 and older allow it)
  std::string_view extensions;
  if (!hello.Vector(2, extensions) || hello.left() != 0) return std::nullopt;
  Cursor list(extensions);
  bool seen_server_name = false;
  while (list.left() > 0) {
    size_t type = 0;
    std::string_view data;
    if (!list.U16(type) || !list.Vector(2, data)) return std::nullopt;
    if (type != kServerNameExtension) continue;  // GREASE and everything else: skipped
    // Two server_name extensions: we would check one and the server might use the other.
    if (seen_server_name) return std::nullopt;
    seen_server_name = true;
    std::string host;
    if (!ParseServerName(data, host)) return std::nullopt;
    fields.server_name = std::move(host);
  }
  return fields;
}

bool ServerNameMatches(std::string_view server_name, std::string_view host) {
  auto without_dot = [](std::string_view name) {
    if (!name.empty() && name.back() == '.') name.remove_suffix(1);
    return name;
  };
  server_name = without_dot(server_name);
  host = without_dot(host);
  auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
  return !server_name.empty() && server_name.size() == host.size() &&
         std::equal(server_name.begin(), server_name.end(), host.begin(),
                    [&](char a, char b) { return lower(a) == lower(b); });
}

HelloStatus ClientHelloReader::Update(std::string_view stream) {
  while (status_ == HelloStatus::kIncomplete && pos_ < stream.size()) {
    size_t before = pos_;
    status_ = pos_ == record_end_ ? ReadRecordHeader(stream) : ReadRecordPayload(stream);
    if (pos_ == before) break;  // a record header not whole yet
  }
  return status_;
}

HelloStatus ClientHelloReader::Fail(HelloStatus status) {
  server_name_.reset();
  return status;
}

HelloStatus ClientHelloReader::ReadRecordHeader(std::string_view stream) {
  size_t available = stream.size() - pos_;
  // Judged byte by byte as they come, so that a client of another protocol is told at its
  // first byte, not after five. After the first record it is a broken hello, not another
  // protocol.
  HelloStatus wrong = records_ == 0 ? HelloStatus::kNotTls : HelloStatus::kMalformed;
  if (Byte(stream, pos_) != kHandshakeRecord) return Fail(wrong);
  if (available >= 2 && Byte(stream, pos_ + 1) != 3) return Fail(wrong);
  if (available >= 3 && Byte(stream, pos_ + 2) > 4) return Fail(wrong);  // 3.0 to 3.4
  if (available < kRecordHeaderBytes) return HelloStatus::kIncomplete;
  size_t length = (size_t{Byte(stream, pos_ + 3)} << 8) | Byte(stream, pos_ + 4);
  if (length == 0 || length > kMaxRecordPayload) return Fail(HelloStatus::kMalformed);
  record_end_ = pos_ + kRecordHeaderBytes + length;
  if (record_end_ > max_bytes_) return Fail(HelloStatus::kTooLarge);
  pos_ += kRecordHeaderBytes;
  ++records_;
  if (hello_total_ != 0 && !RecordFitsHello()) return Fail(HelloStatus::kMalformed);
  return HelloStatus::kIncomplete;
}

HelloStatus ClientHelloReader::ReadRecordPayload(std::string_view stream) {
  size_t count = std::min(stream.size(), record_end_) - pos_;
  for (size_t i = 0; i < count && handshake_seen_ + i < handshake_header_.size(); ++i) {
    handshake_header_[handshake_seen_ + i] = Byte(stream, pos_ + i);
  }
  handshake_seen_ += count;
  pos_ += count;
  if (hello_total_ == 0 && handshake_seen_ >= handshake_header_.size()) {
    if (handshake_header_[0] != kClientHelloType) return Fail(HelloStatus::kMalformed);
    size_t length = (size_t{handshake_header_[1]} << 16) | (size_t{handshake_header_[2]} << 8) |
                    handshake_header_[3];
    hello_total_ = handshake_header_.size() + length;
    // Its records need at least one header more than the message itself.
    if (hello_total_ + kRecordHeaderBytes > max_bytes_) return Fail(HelloStatus::kTooLarge);
    if (!RecordFitsHello()) return Fail(HelloStatus::kMalformed);
  }
  if (hello_total_ != 0 && handshake_seen_ == hello_total_) return Finish(stream);
  return HelloStatus::kIncomplete;
}

bool ClientHelloReader::RecordFitsHello() const {
  // A record that goes on past the hello carries another handshake message in the same
  // flight: no client sends one before the server answered, so it is refused.
  return handshake_seen_ + (record_end_ - pos_) <= hello_total_;
}

HelloStatus ClientHelloReader::Finish(std::string_view stream) {
  // Every record up to pos_ has been checked; put their payloads back together.
  std::string message;
  message.reserve(hello_total_);
  for (size_t at = 0; at < pos_;) {
    size_t length = (size_t{Byte(stream, at + 3)} << 8) | Byte(stream, at + 4);
    message.append(stream.substr(at + kRecordHeaderBytes, length));
    at += kRecordHeaderBytes + length;
  }
  auto fields = ParseClientHelloBody(std::string_view(message).substr(handshake_header_.size()));
  if (!fields) return Fail(HelloStatus::kMalformed);
  server_name_ = std::move(fields->server_name);
  return HelloStatus::kComplete;
}

}  // namespace sbx::relay
