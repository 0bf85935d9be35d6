#include "dispatch/record/record.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include <fmt/format.h>

#include "dispatch/git/workspace.h"
#include "dispatch/host/dir.h"
#include "dispatch/record/status_json.h"
#include "dispatch/sys/caller_stderr.h"

namespace sbx::dispatch {
namespace {

// A JSON string starting at text[*i] (the opening quote), unescaped; *i ends past the
// closing quote. nullopt when it is not one.
std::optional<std::string> ReadJsonString(std::string_view text, size_t* i) {
  if (*i >= text.size() || text[*i] != '"') return std::nullopt;
  std::string out;
  for (size_t k = *i + 1; k < text.size(); ++k) {
    char c = text[k];
    if (c == '"') {
      *i = k + 1;
      return out;
    }
    if (c != '\\') {
      out += c;
      continue;
    }
    if (++k == text.size()) return std::nullopt;
    switch (text[k]) {
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
        if (k + 4 >= text.size()) return std::nullopt;
        unsigned value = 0;
        for (size_t d = 1; d <= 4; ++d) {
          char h = text[k + d];
          value *= 16;
          if (h >= '0' && h <= '9') {
            value += static_cast<unsigned>(h - '0');
          } else if (h >= 'a' && h <= 'f') {
            value += static_cast<unsigned>(h - 'a' + 10);
          } else if (h >= 'A' && h <= 'F') {
            value += static_cast<unsigned>(h - 'A' + 10);
          } else {
            return std::nullopt;
          }
        }
        k += 4;
        out += value < 0x80 ? static_cast<char>(value) : '?';
        break;
      }
      default:
        out += text[k];  // \" \\ \/
    }
  }
  return std::nullopt;
}

void SkipBlanks(std::string_view text, size_t* i) {
  while (*i < text.size() && (text[*i] == ' ' || text[*i] == '\n')) ++*i;
}

// The `labels` object starting at text[*i] ('{'): its string members, *i past its '}'.
// nullopt (and *i unchanged) when it is anything else.
std::optional<std::vector<DispatchLabel>> ReadLabels(std::string_view text, size_t* i) {
  size_t k = *i;
  if (k >= text.size() || text[k] != '{') return std::nullopt;
  ++k;
  std::vector<DispatchLabel> labels;
  SkipBlanks(text, &k);
  while (k < text.size() && text[k] != '}') {
    if (!labels.empty()) {
      if (text[k] != ',') return std::nullopt;
      ++k;
      SkipBlanks(text, &k);
    }
    auto key = ReadJsonString(text, &k);
    if (!key) return std::nullopt;
    SkipBlanks(text, &k);
    if (k == text.size() || text[k] != ':') return std::nullopt;
    ++k;
    SkipBlanks(text, &k);
    auto value = ReadJsonString(text, &k);
    if (!value) return std::nullopt;
    labels.push_back({std::move(*key), std::move(*value)});
    SkipBlanks(text, &k);
  }
  if (k == text.size()) return std::nullopt;
  *i = k + 1;
  return labels;
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
  int depth = 0;
  char last = 0;  // the last structural character seen: '{', '[', ',' or ':'
  size_t i = 0;
  while (i < text.size()) {
    char c = text[i];
    if (c == '"') {
      // At depth 1, a string after '{' or ',' is a key of the top-level object.
      const bool key = depth == 1 && (last == '{' || last == ',');
      auto name = ReadJsonString(text, &i);
      if (!name) return std::nullopt;
      if (!key) continue;
      SkipBlanks(text, &i);
      if (i == text.size() || text[i] != ':') return std::nullopt;
      ++i;
      SkipBlanks(text, &i);
      last = ':';
      if (*name == "labels") {
        if (auto labels = ReadLabels(text, &i)) record.labels = std::move(*labels);
      } else if (i < text.size() && text[i] == '"') {
        auto value = ReadJsonString(text, &i);
        if (!value) return std::nullopt;
        std::string* field = *name == "reason"       ? &record.reason
                             : *name == "error"      ? &record.error
                             : *name == "started_at" ? &record.started_at
                             : *name == "workspace"  ? &record.workspace
                             : *name == "out"        ? &record.out
                                                     : nullptr;
        if (field != nullptr) *field = std::move(*value);
        if (*name == "reason") has_reason = true;
      } else if (*name == "exit_code") {
        int code = 0;
        size_t start = i;
        bool negative = i < text.size() && text[i] == '-';
        if (negative) ++i;
        while (i < text.size() && text[i] >= '0' && text[i] <= '9' && code < 100000) {
          code = code * 10 + (text[i++] - '0');
        }
        if (i > start + (negative ? 1 : 0)) record.exit_code = negative ? -code : code;
      }
      continue;
    }
    if (c == '{' || c == '[') ++depth;
    if (c == '}' || c == ']') --depth;
    if (c == '{' || c == '[' || c == ',' || c == ':') last = c;
    ++i;
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

void DispatchDirEnd::WriteRunning(const DispatchResult& result) {
  if (!dir_fd_) return;
  DispatchResult running = result;
  running.reason = DispatchReason::kRunning;
  if (auto written = WriteDispatchRecord(dir_fd_.get(), RenderStatusJson(running)); !written) {
    SayToCaller(fmt::format("{} ({})", written.error().Render(), path_));
  }
}

void DispatchDirEnd::Finish(const DispatchResult& result) {
  if (!dir_fd_) return;
  struct stat st {};
  // A removed directory has no links left: the run's own cleanup took it.
  if (::fstat(dir_fd_.get(), &st) != 0 || st.st_nlink == 0) return;
  if (remove_) {
    if (auto removed = RemoveDispatchDir(root_fd_.get(), id_, run_as_); !removed) {
      SayToCaller(fmt::format("--rm: {} ({})", removed.error().Render(), path_));
    }
    return;
  }
  if (auto written = WriteDispatchRecord(dir_fd_.get(), RenderStatusJson(result)); !written) {
    SayToCaller(fmt::format("{} ({})", written.error().Render(), path_));
  }
}

}  // namespace sbx::dispatch
