#include "relay/ledger_throttle.h"

namespace sbx::relay {

void LedgerThrottle::TakeSummary(Window& window, std::vector<LedgerEntry>& out) {
  if (window.held_count == 0) return;
  LedgerEntry summary = window.held;
  summary.count = window.held_count;
  summary.record.duration =
      std::chrono::duration_cast<std::chrono::milliseconds>(window.last - summary.record.start);
  out.push_back(std::move(summary));
  window.held_count = 0;
}

std::vector<LedgerEntry> LedgerThrottle::Admit(const LedgerEntry& entry) {
  std::vector<LedgerEntry> out;
  auto now = entry.record.start;
  const bool dialed = entry.record.dialed;
  auto [it, fresh] = windows_.try_emplace({entry.route, entry.record.end, dialed});
  Window& window = it->second;
  if (fresh || now - window.start >= kWindow || now < window.start) {
    TakeSummary(window, out);
    window.start = now;
    window.written = 0;
  }
  if (window.written < (dialed ? kDialedBurst : kBurst)) {
    ++window.written;
    out.push_back(entry);
  } else {
    if (window.held_count == 0) {
      window.held = entry;
    } else {
      window.held.record.bytes_up += entry.record.bytes_up;
      window.held.record.bytes_down += entry.record.bytes_down;
    }
    ++window.held_count;
    window.last = now;
  }
  return out;
}

std::vector<LedgerEntry> LedgerThrottle::Flush() {
  std::vector<LedgerEntry> out;
  for (auto& [key, window] : windows_) TakeSummary(window, out);
  return out;
}

}  // namespace sbx::relay
