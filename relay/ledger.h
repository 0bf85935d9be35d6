// Ledger: one JSON line per relayed connection, appended to a host-side file the sandbox can't
// see, so what a dispatch reached is on record after it ends. Example line:
//   {"route":0,"host":"api.example.com","upstream":"192.0.2.7:443",
//    "start":"2026-05-04T10:11:12.345Z","duration_ms":1520,"bytes_up":5120,
//    "bytes_down":88211,"end":"closed"}
// (one line in the file). "end" is EndReasonName(); an "sni" field follows on "sni-mismatch"
// (the name the client asked for), an "error" field with the strerror text when an errno
// ended the connection. Readiness probes are not written (see Relay).
// One dispatch writes at most kMaxLedgerBytes: the line that would pass the cap is replaced
// by {"ledger":"capped","bytes_written":N,"start":...} and nothing more is written.
// Caller: the loop thread; Append blocks only as long as a write to a local file does.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "base/error.h"
#include "base/unique_fd.h"
#include "relay/connection.h"

namespace sbx::relay {

inline constexpr uint64_t kMaxLedgerBytes = 64ULL << 20;

struct LedgerEntry {
  int route = 0;
  std::string host;      // the route's host name
  std::string upstream;  // the pinned address dialled, "192.0.2.7:443"
  ConnectionRecord record;
  // More than 1: a summary of this many like connections (LedgerThrottle), from `start`
  // over `duration_ms`; written as a "count" field.
  long long count = 1;
};

// "2026-05-04T10:11:12.345Z": RFC 3339, UTC, milliseconds.
std::string FormatRfc3339Utc(std::chrono::system_clock::time_point time);
// The entry as one JSON object followed by '\n'.
std::string FormatLedgerLine(const LedgerEntry& entry);

class Ledger {
 public:
  // Opens `path` for appending, creating it with mode 0600; refuses anything but the
  // caller's own regular file at the name, and a directory others could swap it in
  // (base/output_file.h).
  static base::Result<Ledger> Open(const std::string& path, uint64_t max_bytes = kMaxLedgerBytes);

  // Writes the line with one write(2) on an O_APPEND file, so lines written by several
  // dispatches to the same file never interleave. Past the cap, nothing (see above).
  base::Status Append(const LedgerEntry& entry);

 private:
  Ledger(base::UniqueFd fd, std::string path, uint64_t max_bytes)
      : fd_(std::move(fd)), path_(std::move(path)), max_bytes_(max_bytes) {}
  base::Status WriteLine(const std::string& line);

  base::UniqueFd fd_;
  std::string path_;
  uint64_t max_bytes_;
  uint64_t written_ = 0;
  bool capped_ = false;
};

}  // namespace sbx::relay
