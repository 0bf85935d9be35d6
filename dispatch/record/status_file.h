// The --status-json file: checked before the dispatch starts, written after it ended,
// without ever following what the agent (or anybody) may have planted at the name.
#pragma once

#include <string>

#include "base/error.h"
#include "base/unique_fd.h"

namespace sbx::dispatch {

class StatusFile {
 public:
  // Opens the directory the file goes in, and refuses a name that exists but is not a
  // regular file (a symlink, a FIFO: opened O_NOFOLLOW | O_NONBLOCK, so nothing blocks).
  static base::Result<StatusFile> Open(const std::string& path);

  // Writes `text` to a new temporary file beside the name and renames it into place:
  // whatever is at the name by then is replaced, never written through. Nothing is written
  // when the directory is `workspace` or `out` or below them (checked by inode; the dispatch
  // refused to start with such a name already).
  [[nodiscard]] base::Status Write(const std::string& text, const std::string& workspace,
                                   const std::string& out) const;

 private:
  StatusFile(std::string path, std::string name, base::UniqueFd dir)
      : path_(std::move(path)), name_(std::move(name)), dir_(std::move(dir)) {}
  std::string path_;
  std::string name_;
  base::UniqueFd dir_;
};

}  // namespace sbx::dispatch
