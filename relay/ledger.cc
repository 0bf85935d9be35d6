#include "relay/ledger.h"

#include "base/output_file.h"

#include "base/json.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>

namespace sbx::relay {
namespace {

void AppendField(std::string& out, std::string_view name, std::string_view value) {
  out += out.size() > 1 ? ",\"" : "\"";
  out += name;
  out += "\":";
  out += base::JsonQuote(value);
}

void AppendField(std::string& out, std::string_view name, long long value) {
  out += out.size() > 1 ? ",\"" : "\"";
  out += name;
  out += "\":";
  out += std::to_string(value);
}

}  // namespace

std::string FormatRfc3339Utc(std::chrono::system_clock::time_point time) {
  auto ms_total = std::chrono::duration_cast<std::chrono::milliseconds>(time.time_since_epoch());
  auto secs = std::chrono::floor<std::chrono::seconds>(ms_total);
  auto ms = (ms_total - secs).count();
  auto t = static_cast<std::time_t>(secs.count());
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[96];  // room for any int the format could print, as the compiler checks
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  return buf;
}

std::string FormatLedgerLine(const LedgerEntry& entry) {
  const ConnectionRecord& r = entry.record;
  std::string out = "{";
  AppendField(out, "route", entry.route);
  AppendField(out, "host", entry.host);
  AppendField(out, "upstream", entry.upstream);
  AppendField(out, "start", FormatRfc3339Utc(r.start));
  AppendField(out, "duration_ms", static_cast<long long>(r.duration.count()));
  AppendField(out, "bytes_up", static_cast<long long>(r.bytes_up));
  AppendField(out, "bytes_down", static_cast<long long>(r.bytes_down));
  AppendField(out, "end", EndReasonName(r.end));
  // The name a refused ClientHello asked for: the agent's bytes, quoted like any string.
  if (!r.sni.empty()) AppendField(out, "sni", r.sni);
  // A broker route's request: what was asked and answered, never a header.
  if (!r.method.empty()) AppendField(out, "method", r.method);
  if (!r.path.empty()) AppendField(out, "path", r.path);
  if (r.status != 0) AppendField(out, "status", r.status);
  if (!r.refusal.empty()) AppendField(out, "refusal", r.refusal);
  if (!r.detail.empty()) AppendField(out, "error", r.detail);
  if (r.err != 0) {
    AppendField(out, "error", std::strerror(r.err));  // NOLINT(concurrency-mt-unsafe)
  }
  if (entry.count > 1) AppendField(out, "count", entry.count);
  out += "}\n";
  return out;
}

base::Result<Ledger> Ledger::Open(const std::string& path, uint64_t max_bytes) {
  // The caller's own regular file, or a new one (base/output_file.h): a FIFO, a symlink or
  // another user's file planted at the name is refused, never written through.
  auto file = base::OutputFile::Prepare("--ledger", path);
  if (!file) return file.error();
  auto fd = file->OpenForAppend(0600);
  if (!fd) return fd.error();
  return Ledger(std::move(*fd), path, max_bytes);
}

base::Status Ledger::Append(const LedgerEntry& entry) {
  if (capped_) return {};
  std::string line = FormatLedgerLine(entry);
  if (written_ + line.size() > max_bytes_) {
    capped_ = true;
    std::string last = "{";
    AppendField(last, "ledger", "capped");
    AppendField(last, "bytes_written", static_cast<long long>(written_));
    AppendField(last, "start", FormatRfc3339Utc(entry.record.start));
    last += "}\n";
    return WriteLine(last);
  }
  written_ += line.size();
  return WriteLine(line);
}

base::Status Ledger::WriteLine(const std::string& line) {
  ssize_t n;
  do {
    n = ::write(fd_.get(), line.data(), line.size());
  } while (n < 0 && errno == EINTR);
  if (n < 0) return base::ErrnoError("Can't write ledger", path_);
  if (static_cast<size_t>(n) != line.size()) {
    return base::Error(EIO, "Short write to ledger", path_);
  }
  return {};
}

}  // namespace sbx::relay
