// BrokerRequestRewriter: the request side of a broker route (docs/tunnel.md). The agent's
// plain HTTP/1.1 bytes go in; what comes out, for the upstream's TLS, is each request
// written anew from its parsed fields (nodejs http-parser does the parsing):
//   METHOD PATH HTTP/1.1 / Host: ROUTE-HOST / HEADER: SECRET / the agent's other headers
//   minus the hop-by-hop ones / the framing the relay chose / the body, re-framed.
// No byte of the agent's request line, header block or body framing is passed on as sent,
// so the upstream can't read a request two ways: a body is sent with Content-Length when
// the agent gave one, else as chunks of the relay's own making; a chunked body's trailers
// are dropped.
//
// Refused before anything of the request is written (the connection then answers with
// RefusalStatus() and closes; nothing reaches the upstream):
//   a head over kMaxHeadBytes or kMaxHeaders, a parse error (malformed request line, bad
//   header token, bad chunk size, two Content-Length, Content-Length and Transfer-Encoding
//   together, a Transfer-Encoding other than "chunked"), a bare LF or an obsolete folded
//   header line, no Host or several, a Host other than the route's host (optionally with
//   ":80"), a target that is not origin-form ("/..."), HTTP other than 1.1, CONNECT or an
//   Upgrade, an Expect other than 100-continue.
// A request body that turns out malformed after its head was passed on (a bad chunk size)
// stops the rewriter with kBadBody: the connection is then closed, and the upstream never
// gets the end of a message it could take for a complete one.
//
// One request at a time: once a message is complete the rewriter stops taking bytes until
// NextMessage(); pipelined bytes wait where they are.
// Caller: the loop thread; pure (no I/O), so unit tests and the fuzz target drive it too.
#pragma once

#include <http_parser.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "relay/broker_memory.h"

namespace sbx::relay {

enum class BrokerRefusal {
  kNone,
  kHeadTooLarge,  // 431
  kMalformed,     // 400: what the parser or the framing checks refused
  kWrongHost,     // 421: no Host, several, or another name
  kUnsupported,   // 501: CONNECT, Upgrade, HTTP other than 1.1, absolute-form target
  kExpectation,   // 417: an Expect other than 100-continue
  kBadBody,       // the body broke after the head was sent: close, no answer
};
std::string_view BrokerRefusalName(BrokerRefusal refusal);  // the ledger's "end"
int RefusalStatus(BrokerRefusal refusal);                   // 0 for kNone and kBadBody

class BrokerRequestRewriter {
 public:
  static constexpr size_t kMaxHeadBytes = size_t{16} * 1024;
  static constexpr size_t kMaxHeaders = 100;
  // Room the output must have before Feed() takes head bytes: the rewritten head of the
  // largest head plus the secret (each header may gain ": " and the framing lines).
  static constexpr size_t kHeadRoom = 2 * kMaxHeadBytes + 8192 + 1024;

  enum class State { kHead, kBody, kComplete, kRefused };

  // `host`: the route's host (lower case, no trailing dot). `header`: the header to set
  // (empty: none), `secret` its value. Both views must outlive the rewriter.
  BrokerRequestRewriter(std::string_view host, std::string_view header, std::string_view secret);
  BrokerRequestRewriter(const BrokerRequestRewriter&) = delete;
  BrokerRequestRewriter& operator=(const BrokerRequestRewriter&) = delete;

  // Parses a prefix of `in` and appends what it yields to `out`, never more than out's
  // room (it takes fewer bytes instead). Returns how many bytes of `in` were taken; the rest
  // must be offered again. Takes nothing in kComplete and kRefused.
  size_t Feed(std::string_view in, SecretQueue& out);
  // The agent closed its side: a request cut short in its head or body is kBadBody (or, in
  // the head, kMalformed); between requests nothing changes.
  void FinishInput();
  // After kComplete: takes the next request.
  void NextMessage();

  [[nodiscard]] State state() const { return state_; }
  [[nodiscard]] BrokerRefusal refusal() const { return refusal_; }
  // Of the current (or last) request, once its head was parsed. path() has no query.
  [[nodiscard]] const std::string& method() const { return method_; }
  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] bool is_head_request() const { return head_request_; }
  // Whether the agent wants the connection kept after this request (HTTP/1.1 default).
  [[nodiscard]] bool keep_alive() const { return keep_alive_; }
  // Bytes of `in` taken for the current request.
  [[nodiscard]] uint64_t bytes_in() const { return bytes_in_; }
  // Whether any byte of the current request was taken (between requests: false).
  [[nodiscard]] bool started() const { return bytes_in_ > 0; }

 private:
  static int OnMessageBegin(http_parser* parser);
  static int OnUrl(http_parser* parser, const char* at, size_t length);
  static int OnHeaderField(http_parser* parser, const char* at, size_t length);
  static int OnHeaderValue(http_parser* parser, const char* at, size_t length);
  static int OnHeadersComplete(http_parser* parser);
  static int OnBody(http_parser* parser, const char* at, size_t length);
  static int OnMessageComplete(http_parser* parser);

  // Looks at each raw head byte before http-parser does, for what it lets through: a bare
  // CR or LF, an obsolete folded line, empty lines before the request. kEnd at the LF of
  // the empty line that ends the head.
  enum class Scan { kMore, kEnd, kBad };
  Scan ScanHeadByte(char c);
  int CheckAndWriteHead();
  // The checked head, written anew from its parsed fields with the route's Host and the
  // secret; only with kHeadRoom free in the output. `connection`: the Connection header's
  // value, whose names are dropped too.
  void WriteHead(std::string_view connection, bool content_length);
  // Sets method() and path() from what was parsed of the request line, once.
  void NameRequest();
  void Refuse(BrokerRefusal refusal);

  std::string_view host_;
  std::string_view header_;
  std::string_view secret_;
  http_parser parser_{};
  http_parser_settings settings_{};
  SecretQueue* out_ = nullptr;  // during Feed()
  State state_ = State::kHead;
  BrokerRefusal refusal_ = BrokerRefusal::kNone;
  size_t head_bytes_ = 0;
  // ScanHeadByte's state: after a CRLF (the request line is not a header line, so a blank
  // may not start it either: first_byte_ covers that), after a CR, before the first byte.
  bool line_start_ = false;
  bool last_was_cr_ = false;
  bool first_byte_ = true;
  std::string url_;
  std::vector<std::pair<std::string, std::string>> headers_;
  bool in_value_ = false;
  std::string method_;
  std::string path_;
  bool head_request_ = false;
  bool keep_alive_ = true;
  bool chunked_ = false;
  uint64_t bytes_in_ = 0;
};

}  // namespace sbx::relay
