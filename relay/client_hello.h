// ClientHelloReader: the server name (SNI) a TLS client asks for, read from the bytes it sends
// first, before anything is dialled. Nothing is decrypted (a ClientHello is plaintext) and
// nothing is changed: the caller keeps the bytes and forwards them as they came.
//
// The reader walks the TLS record layer (RFC 8446 5.1: type 22 "handshake", version 3.x, a
// length of 1..2^14) and reassembles the handshake message the records carry, which may be
// split across any number of records and arrive in any number of reads, down to one byte at
// a time. Once the whole message is there it must be a ClientHello (handshake type 1) that
// parses completely (RFC 8446 4.1.2, RFC 6066 3): every length inside it adds up, at most one
// server_name extension with at most one host_name entry (a second one could be what a
// server reads instead), and the message ends where its last record ends.
//
// Bounded: the reader never needs more than `max_bytes` bytes of the stream (records
// included); a hello that would, is kTooLarge as soon as a length field says so. Its state is
// a few counters: the bytes themselves stay with the caller, which passes the whole stream
// so far on every call. The cost is linear in the bytes, however they are split.
//
// Pure: no I/O, no allocation until the hello is complete. Fuzzed by fuzz/client_hello_fuzz.cc.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sbx::relay {

// The default bound: a ClientHello with every usual extension and a post-quantum key share is
// 2 KiB or less; 16 KiB is also what one TLS record holds, and the relay's buffer.
inline constexpr size_t kMaxClientHelloBytes = size_t{16} * 1024;

enum class HelloStatus {
  kIncomplete,  // every byte so far can start a ClientHello; more are needed
  kComplete,    // a whole, well-formed ClientHello: server_name() says what it asks for
  kNotTls,      // the stream does not start with a TLS handshake record
  kMalformed,   // TLS records, but not one well-formed ClientHello
  kTooLarge,    // the ClientHello would need more than max_bytes of the stream
};
std::string_view HelloStatusName(HelloStatus status);

class ClientHelloReader {
 public:
  explicit ClientHelloReader(size_t max_bytes = kMaxClientHelloBytes) : max_bytes_(max_bytes) {}

  // `stream`: every byte the client has sent so far, from its first one (so each call passes
  // what the last one did, plus more). Reads what is new; once the status is no longer
  // kIncomplete it stays as it is and further calls change nothing.
  HelloStatus Update(std::string_view stream);

  [[nodiscard]] HelloStatus status() const { return status_; }
  // kComplete: the host_name of the server_name extension; nullopt when the hello has none.
  [[nodiscard]] const std::optional<std::string>& server_name() const { return server_name_; }
  // kComplete: how many bytes of the stream the hello's records take. What follows (TLS 1.3
  // early data, for one) is not the reader's business.
  [[nodiscard]] size_t consumed() const { return pos_; }

 private:
  HelloStatus Fail(HelloStatus status);
  HelloStatus ReadRecordHeader(std::string_view stream);
  HelloStatus ReadRecordPayload(std::string_view stream);
  // The hello's total length is known: the current record must not run past it.
  [[nodiscard]] bool RecordFitsHello() const;
  HelloStatus Finish(std::string_view stream);

  size_t max_bytes_;
  HelloStatus status_ = HelloStatus::kIncomplete;
  size_t pos_ = 0;             // stream offset of the next byte to read
  size_t record_end_ = 0;      // stream offset where the current record's payload ends
  size_t records_ = 0;         // record headers read
  size_t handshake_seen_ = 0;  // handshake bytes read, over all records
  std::array<uint8_t, 4> handshake_header_{};  // type and 24-bit length
  size_t hello_total_ = 0;  // 4 + the hello's length, once the header is in; 0 before
  std::optional<std::string> server_name_;
};

// A ClientHello's handshake body (after the 4-byte handshake header), parsed.
struct ClientHelloFields {
  std::optional<std::string> server_name;  // the host_name entry of server_name, if any
};
// Parses one ClientHello body; nullopt when it is not well formed (see the file comment).
std::optional<ClientHelloFields> ParseClientHelloBody(std::string_view body);

// Whether the SNI `server_name` names `host`: equal ignoring ASCII case and one trailing dot
// on either side. An empty name matches nothing.
bool ServerNameMatches(std::string_view server_name, std::string_view host);

}  // namespace sbx::relay
