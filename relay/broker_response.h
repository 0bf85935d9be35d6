// BrokerResponseWatcher: follows the upstream's responses on a broker route (nodejs
// http-parser), only to know where each one ends and its status; the bytes themselves go to
// the agent as they come, unchanged: the upstream is the server whose certificate the relay
// checked. Interim 1xx responses (100 Continue) are passed on and not counted as the end.
// Caller: the loop thread; pure.
#pragma once

#include <http_parser.h>

#include <cstddef>
#include <string_view>

namespace sbx::relay {

class BrokerResponseWatcher {
 public:
  BrokerResponseWatcher();
  BrokerResponseWatcher(const BrokerResponseWatcher&) = delete;
  BrokerResponseWatcher& operator=(const BrokerResponseWatcher&) = delete;

  // The next response answers a HEAD request: it has no body whatever its headers say.
  void ExpectHeadResponse(bool head) { head_ = head; }
  // Follows `bytes`; false when they are not a well-formed response (then close).
  bool Watch(std::string_view bytes);
  // The upstream closed: ends a response framed by the close. False when one was cut short.
  bool WatchEnd();

  // A final response ended since the last TakeComplete(); returns and clears that.
  bool TakeComplete();
  // The status of the last final response begun (0 before one).
  [[nodiscard]] int status() const { return status_; }
  // Whether the upstream keeps the connection after the last complete response.
  [[nodiscard]] bool keep_alive() const { return keep_alive_; }
  // A response has begun and not yet ended.
  [[nodiscard]] bool in_response() const { return in_response_; }

 private:
  static int OnMessageBegin(http_parser* parser);
  static int OnHeadersComplete(http_parser* parser);
  static int OnMessageComplete(http_parser* parser);

  http_parser parser_{};
  http_parser_settings settings_{};
  bool head_ = false;
  bool complete_ = false;
  bool in_response_ = false;
  bool keep_alive_ = true;
  int status_ = 0;
};

}  // namespace sbx::relay
