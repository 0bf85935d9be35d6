// LedgerThrottle: keeps the ledger growing no faster than the agent's real traffic. Every
// connection that reached its upstream is written as it is. Connections that never did
// (refused at the route socket, shed by a limit) cost the agent nothing but a connect, so
// per route and end reason only the first kBurst of each one-second window are written one
// by one; the rest of the window becomes one summary line with a "count" field, written when
// the next window starts or when the relay ends (Flush). Time is taken from the records
// themselves, so the decision is the same for the same records.
// Caller: HostRelay, on the loop thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <utility>
#include <vector>

#include "relay/ledger.h"

namespace sbx::relay {

class LedgerThrottle {
 public:
  static constexpr int kBurst = 8;
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

  std::map<std::pair<int, EndReason>, Window> windows_;
};

}  // namespace sbx::relay
