#include "relay/broker_request.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

namespace sbx::relay {

namespace {

// Below a request's own framing headers: the headers of one hop only (RFC 9110 7.6.1), and
// the ones the relay writes itself.
constexpr std::array<std::string_view, 11> kDropped = {
    "connection",        "keep-alive", "proxy-connection",    "te",
    "trailer",           "upgrade",    "proxy-authorization", "proxy-authenticate",
    "transfer-encoding", "host",       "content-length"};

// Room Feed() keeps in the output per call in a body: the chunk lines the relay writes for
// the pieces a call cuts a chunk into, and the last chunk.
constexpr size_t kBodyRoom = 64;
constexpr size_t kMaxLoggedPath = 256;

char LowerAscii(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool EqualsIgnoringCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return LowerAscii(x) == LowerAscii(y);
         });
}

std::string_view TrimBlanks(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

// Host as the agent may send it for http://HOST/: the name, in any case, with or without a
// trailing dot, and with or without the default port.
bool HostMatches(std::string_view value, std::string_view host) {
  if (value.ends_with(":80")) value.remove_suffix(3);
  if (value.ends_with('.')) value.remove_suffix(1);
  return EqualsIgnoringCase(value, host);
}

// Whether `list` (a Connection header's value) names `name` among its comma-separated tokens.
bool ListNames(std::string_view list, std::string_view name) {
  while (!list.empty()) {
    size_t comma = list.find(',');
    std::string_view token = TrimBlanks(list.substr(0, comma));
    if (EqualsIgnoringCase(token, name)) return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

// RFC 9110 5.6.2 tchar.
bool IsTokenChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

BrokerRequestRewriter* Self(http_parser* parser) {
  return static_cast<BrokerRequestRewriter*>(parser->data);
}

}  // namespace

std::string_view BrokerRefusalName(BrokerRefusal refusal) {
  switch (refusal) {
    case BrokerRefusal::kNone:
      return "none";
    case BrokerRefusal::kHeadTooLarge:
      return "head-too-large";
    case BrokerRefusal::kMalformed:
      return "bad-request";
    case BrokerRefusal::kWrongHost:
      return "wrong-host";
    case BrokerRefusal::kUnsupported:
      return "unsupported-request";
    case BrokerRefusal::kExpectation:
      return "bad-expect";
    case BrokerRefusal::kBadBody:
      return "bad-body";
  }
  return "unknown";
}

int RefusalStatus(BrokerRefusal refusal) {
  switch (refusal) {
    case BrokerRefusal::kHeadTooLarge:
      return 431;
    case BrokerRefusal::kMalformed:
      return 400;
    case BrokerRefusal::kWrongHost:
      return 421;
    case BrokerRefusal::kUnsupported:
      return 501;
    case BrokerRefusal::kExpectation:
      return 417;
    case BrokerRefusal::kNone:
    case BrokerRefusal::kBadBody:
      break;
  }
  return 0;
}

BrokerRequestRewriter::BrokerRequestRewriter(std::string_view host, std::string_view header,
                                             std::string_view secret)
    : host_(host), header_(header), secret_(secret) {
  http_parser_init(&parser_, HTTP_REQUEST);
  parser_.data = this;
  http_parser_settings_init(&settings_);
  settings_.on_message_begin = &OnMessageBegin;
  settings_.on_url = &OnUrl;
  settings_.on_header_field = &OnHeaderField;
  settings_.on_header_value = &OnHeaderValue;
  settings_.on_headers_complete = &OnHeadersComplete;
  settings_.on_body = &OnBody;
  settings_.on_message_complete = &OnMessageComplete;
}

BrokerRequestRewriter::Scan BrokerRequestRewriter::ScanHeadByte(char c) {
  if (first_byte_) {
    first_byte_ = false;
    // http-parser skips empty lines before a request; a relay that passes requests on
    // takes none.
    if (c == '\r' || c == '\n' || c == ' ' || c == '\t') return Scan::kBad;
  }
  if (last_was_cr_ && c != '\n') return Scan::kBad;  // a bare CR
  if (c == '\r') {
    last_was_cr_ = true;
    return Scan::kMore;
  }
  if (c == '\n') {
    if (!last_was_cr_) return Scan::kBad;  // a bare LF
    last_was_cr_ = false;
    if (line_start_) return Scan::kEnd;  // the empty line: the head ends here
    line_start_ = true;
    return Scan::kMore;
  }
  // A line that starts with a blank continues the previous header (obs-fold, RFC 9112
  // 5.2): refused, since the two ends of a relay could join it differently.
  if (line_start_ && (c == ' ' || c == '\t')) return Scan::kBad;
  line_start_ = false;
  return Scan::kMore;
}

size_t BrokerRequestRewriter::Feed(std::string_view in, SecretQueue& out) {
  out_ = &out;
  size_t taken = 0;
  while (taken < in.size() && (state_ == State::kHead || state_ == State::kBody)) {
    std::string_view rest = in.substr(taken);
    size_t limit = 0;
    if (state_ == State::kHead) {
      if (out.room() < kHeadRoom) break;
      // One byte past the bound, so that a head that does not end within it is seen.
      limit = std::min(rest.size(), kMaxHeadBytes + 1 - head_bytes_);
      // What the scan sees must be what the parser parses: stop at the head's end.
      size_t scanned = 0;
      Scan scan = Scan::kMore;
      while (scanned < limit && scan == Scan::kMore) scan = ScanHeadByte(rest[scanned++]);
      if (scan == Scan::kBad) {
        Refuse(BrokerRefusal::kMalformed);
        break;
      }
      limit = scanned;
    } else {
      if (out.room() <= kBodyRoom) break;
      limit = std::min(rest.size(), out.room() - kBodyRoom);
    }
    const bool in_head = state_ == State::kHead;
    size_t parsed = http_parser_execute(&parser_, &settings_, rest.data(), limit);
    taken += parsed;
    bytes_in_ += parsed;
    if (in_head && state_ == State::kHead) head_bytes_ += parsed;
    const auto err = HTTP_PARSER_ERRNO(&parser_);
    if (err == HPE_PAUSED) {
      http_parser_pause(&parser_, 0);
      continue;
    }
    if (state_ == State::kRefused) break;
    if (err != HPE_OK) {
      Refuse(state_ == State::kHead ? BrokerRefusal::kMalformed : BrokerRefusal::kBadBody);
      break;
    }
    if (state_ == State::kHead && head_bytes_ > kMaxHeadBytes) {
      Refuse(BrokerRefusal::kHeadTooLarge);
      break;
    }
    if (parsed < limit) break;  // not expected without an error: never spin
  }
  out_ = nullptr;
  return taken;
}

void BrokerRequestRewriter::FinishInput() {
  if (state_ == State::kHead && started()) {
    Refuse(BrokerRefusal::kMalformed);
  } else if (state_ == State::kBody) {
    Refuse(BrokerRefusal::kBadBody);
  }
}

void BrokerRequestRewriter::NextMessage() {
  if (state_ != State::kComplete) return;
  state_ = State::kHead;
  head_bytes_ = 0;
  line_start_ = false;
  last_was_cr_ = false;
  first_byte_ = true;
  bytes_in_ = 0;
}

void BrokerRequestRewriter::NameRequest() {
  // The parser knows the method once the target began.
  if (url_.empty() || !path_.empty()) return;
  method_ = http_method_str(static_cast<http_method>(parser_.method));
  const size_t query = url_.find_first_of("?#");
  std::string_view path = std::string_view(url_).substr(0, query);
  for (char c : path.substr(0, kMaxLoggedPath)) {
    path_.push_back(c > 0x20 && c < 0x7f && c != '"' && c != '\\' ? c : '?');
  }
}

void BrokerRequestRewriter::Refuse(BrokerRefusal refusal) {
  NameRequest();
  state_ = State::kRefused;
  refusal_ = refusal;
}

int BrokerRequestRewriter::OnMessageBegin(http_parser* parser) {
  BrokerRequestRewriter* self = Self(parser);
  self->url_.clear();
  self->headers_.clear();
  self->in_value_ = false;
  self->method_.clear();
  self->path_.clear();
  self->head_request_ = false;
  self->keep_alive_ = true;
  self->chunked_ = false;
  return 0;
}

int BrokerRequestRewriter::OnUrl(http_parser* parser, const char* at, size_t length) {
  Self(parser)->url_.append(at, length);
  return 0;
}

int BrokerRequestRewriter::OnHeaderField(http_parser* parser, const char* at, size_t length) {
  BrokerRequestRewriter* self = Self(parser);
  if (self->in_value_ || self->headers_.empty()) {
    if (self->headers_.size() >= kMaxHeaders) {
      self->Refuse(BrokerRefusal::kHeadTooLarge);
      return 1;
    }
    self->headers_.emplace_back();
    self->in_value_ = false;
  }
  self->headers_.back().first.append(at, length);
  return 0;
}

int BrokerRequestRewriter::OnHeaderValue(http_parser* parser, const char* at, size_t length) {
  BrokerRequestRewriter* self = Self(parser);
  self->in_value_ = true;
  self->headers_.back().second.append(at, length);
  return 0;
}

int BrokerRequestRewriter::OnHeadersComplete(http_parser* parser) {
  BrokerRequestRewriter* self = Self(parser);
  int verdict = self->CheckAndWriteHead();
  if (verdict != 0) return verdict;
  self->state_ = State::kBody;
  // Feed() goes on with the body under the body's bound on the output.
  http_parser_pause(parser, 1);
  return 0;
}

int BrokerRequestRewriter::CheckAndWriteHead() {
  auto refuse = [this](BrokerRefusal refusal) {
    Refuse(refusal);
    return -1;
  };
  NameRequest();
  if (parser_.http_major != 1 || parser_.http_minor != 1) {
    return refuse(BrokerRefusal::kUnsupported);
  }
  if (parser_.method == HTTP_CONNECT || url_.empty() || url_.front() != '/') {
    return refuse(BrokerRefusal::kUnsupported);
  }
  for (char c : url_) {
    if (c <= 0x20 || c >= 0x7f) return refuse(BrokerRefusal::kMalformed);
  }
  int hosts = 0;
  int lengths = 0;
  int encodings = 0;
  std::string_view connection;
  bool expect_continue = false;
  for (auto& [name, value] : headers_) {
    // http-parser takes "Name : value" with the blank in the name; a server may not.
    if (name.empty() || !std::all_of(name.begin(), name.end(), IsTokenChar)) {
      return refuse(BrokerRefusal::kMalformed);
    }
    std::string_view v = TrimBlanks(value);
    for (char c : v) {
      const auto byte = static_cast<unsigned char>(c);
      if ((byte < 0x20 && byte != '\t') || byte == 0x7f) return refuse(BrokerRefusal::kMalformed);
    }
    if (EqualsIgnoringCase(name, "host")) {
      ++hosts;
      if (!HostMatches(v, host_)) return refuse(BrokerRefusal::kWrongHost);
    } else if (EqualsIgnoringCase(name, "content-length")) {
      ++lengths;
    } else if (EqualsIgnoringCase(name, "transfer-encoding")) {
      ++encodings;
      if (!EqualsIgnoringCase(v, "chunked")) return refuse(BrokerRefusal::kMalformed);
    } else if (EqualsIgnoringCase(name, "connection")) {
      if (!connection.empty()) return refuse(BrokerRefusal::kMalformed);
      connection = v;
    } else if (EqualsIgnoringCase(name, "upgrade")) {
      return refuse(BrokerRefusal::kUnsupported);
    } else if (EqualsIgnoringCase(name, "expect")) {
      if (!EqualsIgnoringCase(v, "100-continue") || expect_continue) {
        return refuse(BrokerRefusal::kExpectation);
      }
      expect_continue = true;
    }
  }
  if (hosts != 1) return refuse(BrokerRefusal::kWrongHost);
  // One framing, given once: anything else is how requests get smuggled (RFC 9112 6.3).
  if (lengths > 1 || encodings > 1 || (lengths == 1 && encodings == 1)) {
    return refuse(BrokerRefusal::kMalformed);
  }
  if (parser_.upgrade != 0) return refuse(BrokerRefusal::kUnsupported);
  chunked_ = encodings == 1;
  head_request_ = parser_.method == HTTP_HEAD;
  keep_alive_ = http_should_keep_alive(&parser_) != 0;

  WriteHead(connection, lengths == 1);
  return 0;
}

void BrokerRequestRewriter::WriteHead(std::string_view connection, bool content_length) {
  // The head, written anew. CheckAndWriteHead runs only with kHeadRoom free in the output.
  SecretQueue& out = *out_;
  auto line = [&out](std::string_view name, std::string_view value) {
    out.Append(name);
    out.Append(": ");
    out.Append(value);
    out.Append("\r\n");
  };
  out.Append(method_);
  out.Append(" ");
  out.Append(url_);
  out.Append(" HTTP/1.1\r\n");
  line("Host", host_);
  if (!header_.empty()) line(header_, secret_);
  for (const auto& header : headers_) {
    // Not a structured binding: clang 14 can't capture one in the lambda below.
    const std::string& name = header.first;
    const std::string& value = header.second;
    const bool dropped = std::any_of(kDropped.begin(), kDropped.end(), [&](std::string_view d) {
      return EqualsIgnoringCase(name, d);
    });
    if (dropped || EqualsIgnoringCase(name, header_) || ListNames(connection, name)) continue;
    line(name, TrimBlanks(value));
  }
  if (chunked_) {
    line("Transfer-Encoding", "chunked");
  } else if (content_length) {
    line("Content-Length", fmt::format("{}", parser_.content_length));
  }
  out.Append("\r\n");
}

int BrokerRequestRewriter::OnBody(http_parser* parser, const char* at, size_t length) {
  BrokerRequestRewriter* self = Self(parser);
  SecretQueue& out = *self->out_;
  if (self->chunked_) out.Append(fmt::format("{:x}\r\n", length));
  out.Append(std::string_view(at, length));
  if (self->chunked_) out.Append("\r\n");
  return 0;
}

int BrokerRequestRewriter::OnMessageComplete(http_parser* parser) {
  BrokerRequestRewriter* self = Self(parser);
  if (self->chunked_) self->out_->Append("0\r\n\r\n");
  self->state_ = State::kComplete;
  http_parser_pause(parser, 1);
  return 0;
}

}  // namespace sbx::relay
