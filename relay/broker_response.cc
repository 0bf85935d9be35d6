#include "relay/broker_response.h"

namespace sbx::relay {

namespace {

BrokerResponseWatcher* Self(http_parser* parser) {
  return static_cast<BrokerResponseWatcher*>(parser->data);
}

}  // namespace

BrokerResponseWatcher::BrokerResponseWatcher() {
  http_parser_init(&parser_, HTTP_RESPONSE);
  parser_.data = this;
  http_parser_settings_init(&settings_);
  settings_.on_message_begin = &OnMessageBegin;
  settings_.on_headers_complete = &OnHeadersComplete;
  settings_.on_message_complete = &OnMessageComplete;
}

bool BrokerResponseWatcher::Watch(std::string_view bytes) {
  if (bytes.empty()) return true;
  size_t parsed = http_parser_execute(&parser_, &settings_, bytes.data(), bytes.size());
  return HTTP_PARSER_ERRNO(&parser_) == HPE_OK && parsed == bytes.size();
}

bool BrokerResponseWatcher::WatchEnd() {
  http_parser_execute(&parser_, &settings_, nullptr, 0);
  return HTTP_PARSER_ERRNO(&parser_) == HPE_OK && !in_response_;
}

bool BrokerResponseWatcher::TakeComplete() {
  bool complete = complete_;
  complete_ = false;
  return complete;
}

int BrokerResponseWatcher::OnMessageBegin(http_parser* parser) {
  Self(parser)->in_response_ = true;
  return 0;
}

int BrokerResponseWatcher::OnHeadersComplete(http_parser* parser) {
  BrokerResponseWatcher* self = Self(parser);
  if (parser->status_code >= 200) self->status_ = parser->status_code;
  // 1: this response has no body (http-parser's way to be told about HEAD).
  return self->head_ && parser->status_code >= 200 ? 1 : 0;
}

int BrokerResponseWatcher::OnMessageComplete(http_parser* parser) {
  BrokerResponseWatcher* self = Self(parser);
  self->in_response_ = false;
  // An interim response (100 Continue, 103 Early Hints) is followed by the real one.
  if (parser->status_code >= 200) {
    self->complete_ = true;
    self->keep_alive_ = http_should_keep_alive(parser) != 0;
  }
  return 0;
}

}  // namespace sbx::relay
