#include "dispatch/dispatch_record.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include <fmt/format.h>

#include "dispatch/dispatch_dir.h"
#include "dispatch/workspace.h"

namespace sbx::dispatch {
namespace {

// A JSON string's body from `text` (which starts after the opening quote) up to the closing
// quote, unescaped; nullopt when it is not one.
std::optional<std::string> UnquoteJson(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '"') return out;
    if (c != '\\') {
      out += c;
      continue;
    }
    if (++i == text.size()) return std::nullopt;
    switch (text[i]) {
      case 'n':
        out += '\n';
        break;
      case 't':
        out += '\t';
        break;
      case 'r':
        out += '\r';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'u': {
        // The writer escapes only control characters this way (base/json.h).
        if (i + 4 >= text.size()) return std::nullopt;
        unsigned value = 0;
        for (size_t k = 1; k <= 4; ++k) {
          char h = text[i + k];
          value *= 16;
          if (h >= '0' && h <= '9')
            value += static_cast<unsigned>(h - '0');
          else if (h >= 'a' && h <= 'f')
            value += static_cast<unsigned>(h - 'a' + 10);
          else if (h >= 'A' && h <= 'F')
            value += static_cast<unsigned>(h - 'A' + 10);
          else
            return std::nullopt;
        }
        i += 4;
        out += value < 0x80 ? static_cast<char>(value) : '?';
        break;
      }
      default:
        out += text[i];  // \" \\ \/
    }
  }
  return std::nullopt;
}

}  // namespace

base::Status WriteDispatchRecord(int dir_fd, const std::string& text) {
  std::string temp = fmt::format(".{}.{}.tmp", kDispatchRecordName, NewDispatchId());
  base::UniqueFd fd(
      ::openat(dir_fd, temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) return base::ErrnoError("Can't write the dispatch's", kDispatchRecordName);
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd.get(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = n < 0 ? errno : EIO;
      ::unlinkat(dir_fd, temp.c_str(), 0);
      return base::Error(err, "Can't write the dispatch's", kDispatchRecordName);
    }
    done += static_cast<size_t>(n);
  }
  if (::renameat(dir_fd, temp.c_str(), dir_fd, kDispatchRecordName) != 0) {
    int err = errno;
    ::unlinkat(dir_fd, temp.c_str(), 0);
    return base::Error(err, "Can't write the dispatch's", kDispatchRecordName);
  }
  return {};
}

std::optional<DispatchRecord> ParseDispatchRecord(std::string_view text) {
  DispatchRecord record;
  bool has_reason = false;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    // Top-level fields only: two spaces, then the key.
    if (!line.starts_with("  \"") || line.starts_with("   ")) continue;
    size_t key_end = line.find("\": ", 3);
    if (key_end == std::string_view::npos) continue;
    std::string_view key = line.substr(3, key_end - 3);
    std::string_view value = line.substr(key_end + 3);
    if (value.ends_with(',')) value.remove_suffix(1);
    if (key == "exit_code") {
      int code = 0;
      bool digits = !value.empty();
      bool negative = value.starts_with('-');
      for (char c : value.substr(negative ? 1 : 0)) {
        if (c < '0' || c > '9' || code > 100000) {
          digits = false;
          break;
        }
        code = code * 10 + (c - '0');
      }
      if (digits) record.exit_code = negative ? -code : code;
      continue;
    }
    std::string* field = key == "reason"       ? &record.reason
                         : key == "error"      ? &record.error
                         : key == "started_at" ? &record.started_at
                         : key == "workspace"  ? &record.workspace
                         : key == "out"        ? &record.out
                                               : nullptr;
    if (field == nullptr || !value.starts_with('"')) continue;
    auto unquoted = UnquoteJson(value.substr(1));
    if (!unquoted) continue;
    *field = std::move(*unquoted);
    if (key == "reason") has_reason = true;
  }
  if (!has_reason) return std::nullopt;
  return record;
}

base::Status DispatchDirEnd::Hold(const DispatchDirs& dirs, const RunAsIds& run_as, bool remove) {
  if (dirs.made_dir.empty() || !dirs.dir_fd) return {};
  root_fd_.reset(::fcntl(dirs.root_fd.get(), F_DUPFD_CLOEXEC, 3));
  dir_fd_.reset(::fcntl(dirs.dir_fd.get(), F_DUPFD_CLOEXEC, 3));
  if (!root_fd_ || !dir_fd_) return base::ErrnoError("Can't keep the dispatch directory open");
  id_ = dirs.made_dir;
  path_ = dirs.made_path;
  run_as_ = run_as;
  remove_ = remove;
  return {};
}

void DispatchDirEnd::Finish(const DispatchResult& result) {
  if (!dir_fd_) return;
  struct stat st {};
  // A removed directory has no links left: the run's own cleanup took it.
  if (::fstat(dir_fd_.get(), &st) != 0 || st.st_nlink == 0) return;
  if (remove_) {
    if (auto removed = RemoveDispatchDir(root_fd_.get(), id_, run_as_); !removed) {
      fmt::print(stderr, "ateam-sandbox run: --rm: {} ({})\n", removed.error().Render(), path_);
    }
    return;
  }
  if (auto written = WriteDispatchRecord(dir_fd_.get(), RenderStatusJson(result)); !written) {
    fmt::print(stderr, "ateam-sandbox run: {} ({})\n", written.error().Render(), path_);
  }
}

}  // namespace sbx::dispatch
