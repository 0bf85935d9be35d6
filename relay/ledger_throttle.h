// LedgerThrottle: keeps the ledger growing no faster than a bounded rate, whatever the agent
// does. Per route, end reason and whether the connection reached its upstream, only the
// first few of each one-second window are written one by one: kBurst of those that never
// did (refused at the route socket, shed by a limit: they cost the agent nothing but a
// connect), kDialedBurst of those that did (a connect-and-close loop on a tcp route costs
// little more). The rest of the window becomes one summary line with a "count" field and
// the bytes of all of them, written when the next window starts or when the relay ends
// (Flush). Time is taken from the records themselves, so the decision is the same for the
// same records.
// Caller: HostRelay, on the loop thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "relay/ledger.h"

namespace sbx::relay {

class LedgerThrottle {
 public:
  static constexpr int kBurst = 8;
  static constexpr int kDialedBurst = 64;
  static constexpr std::chrono::seconds kWindow{1};

  // The lines to write now for `entry` (none, itself, or a summary followed by itself).
  std::vector<LedgerEntry> Admit(const LedgerEntry& entry);
  // The summaries still held back.
  std::vector<LedgerEntry> Flush();

 private:
  struct Window {
    std::chrono::system_clock::time_point start;
    int written = 0;
    LedgerEntry held;  // the first held-back entry
    long long held_count = 0;
    std::chrono::system_clock::time_point last;
  };
  static void TakeSummary(Window& window, std::vector<LedgerEntry>& out);

  std::map<std::tuple<int, EndReason, bool>, Window> windows_;
};

}  // namespace sbx::relay
