// Fuzzes a broker route's request side (relay::BrokerRequestRewriter, over nodejs
// http-parser): any bytes, fed in pieces of any size, with the output drained as the relay
// drains it. Whatever comes out must be requests of the relay's own writing: each head
// starts with a method and origin-form target, carries Host and the secret exactly once,
// never two framings, and no line that is not CRLF-ended; a refused head writes nothing.
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_input.h"
#include "fuzz/json_check.h"
#include "relay/broker_request.h"
#include "relay/broker_response.h"

namespace {

constexpr std::string_view kSecretLine = "x-api-key: sk-fuzz-secret\r\n";

size_t Count(std::string_view text, std::string_view what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string_view::npos; at = text.find(what, at + 1)) {
    ++n;
  }
  return n;
}

void CheckHead(std::string_view head) {
  sbx::fuzz::Check(head.find(" /") != std::string_view::npos, "head without an origin-form target");
  sbx::fuzz::Check(Count(head, "\r\nHost: api.fuzz.test\r\n") == 1, "Host not written once");
  // Whole lines: an agent's "Trx-api-key: ..." only ends like the secret's line.
  sbx::fuzz::Check(Count(head, std::string("\r\n").append(kSecretLine)) == 1,
                   "secret not written once");
  sbx::fuzz::Check(Count(head, "\n") == Count(head, "\r\n"), "a bare LF in a written head");
  // Header lines by their whole name, in any case: a name that only contains a framing
  // header's name ("Transfer-Transfer-Encoding") frames nothing.
  std::string lower(head);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  sbx::fuzz::Check(
      !(Count(lower, "\r\ncontent-length:") > 0 && Count(lower, "\r\ntransfer-encoding:") > 0),
      "two framings written");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 65536) return -1;
  sbx::fuzz::InputReader input(data, size);
  const size_t piece = 1 + input.Byte() % 64;
  const bool response_side = input.Byte() % 4 == 0;
  std::string_view rest = input.Rest();

  if (response_side) {
    sbx::relay::BrokerResponseWatcher watcher;
    watcher.ExpectHeadResponse(piece % 2 == 0);
    while (!rest.empty()) {
      std::string_view part = rest.substr(0, piece);
      if (!watcher.Watch(part)) return 0;
      watcher.TakeComplete();
      rest.remove_prefix(part.size());
    }
    watcher.WatchEnd();
    return 0;
  }

  sbx::relay::BrokerRequestRewriter rewriter("api.fuzz.test", "x-api-key", "sk-fuzz-secret");
  auto queue = sbx::relay::SecretQueue::Make(sbx::relay::BrokerRequestRewriter::kHeadRoom + 4096);
  if (!queue) return 0;
  std::string written;
  bool head_expected = true;
  while (!rest.empty()) {
    const auto before = rewriter.state();
    size_t taken = rewriter.Feed(rest.substr(0, piece), *queue);
    std::string_view out = queue->pending();
    if (head_expected && rewriter.state() != sbx::relay::BrokerRequestRewriter::State::kHead &&
        rewriter.state() != sbx::relay::BrokerRequestRewriter::State::kRefused) {
      const size_t end = out.find("\r\n\r\n");
      sbx::fuzz::Check(end != std::string_view::npos, "a head without its end");
      CheckHead(out.substr(0, end + 4));
      head_expected = false;
    }
    if (before == sbx::relay::BrokerRequestRewriter::State::kHead &&
        rewriter.state() == sbx::relay::BrokerRequestRewriter::State::kRefused) {
      if (rewriter.refusal() == sbx::relay::BrokerRefusal::kBadBody) {
        // The head passed and went out, then its body broke within the same piece.
        const size_t end = out.find("\r\n\r\n");
        sbx::fuzz::Check(end != std::string_view::npos, "a body refused before its head");
        CheckHead(out.substr(0, end + 4));
      } else {
        sbx::fuzz::Check(out.empty(), "a refused head wrote bytes");
      }
    }
    queue->Consume(queue->size());
    rest.remove_prefix(taken);
    if (rewriter.state() == sbx::relay::BrokerRequestRewriter::State::kComplete) {
      rewriter.NextMessage();
      head_expected = true;
    } else if (rewriter.state() == sbx::relay::BrokerRequestRewriter::State::kRefused ||
               taken == 0) {
      break;
    }
  }
  rewriter.FinishInput();
  return 0;
}
