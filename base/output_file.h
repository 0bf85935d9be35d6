// Files `run` and `harvest` write for their caller (--patch, harvest -o, --ledger,
// --status-json, --id-file), made without trusting the directory they go in: another user
// may have planted something at the name (a FIFO that hangs the writer, a file of theirs
// that would receive the caller's data), or be able to swap entries in the directory.
//
// The directory is opened once and checked: owned by the caller or root, and not writable
// by others unless sticky (as /tmp is), so nobody else can rename or remove what we make
// there. An existing entry at the name must be the caller's own regular file; anything
// else is refused, never opened for writing (no symlink is followed, no FIFO is opened).
// Whole files are written to a new temporary file beside the name and renamed into place
// at the end, so a failed step leaves the old file (or none), never a partial one.
#pragma once

#include <string>

#include "base/error.h"
#include "base/unique_fd.h"

namespace sbx::base {

class OutputFile {
 public:
  // Checks the directory and the name for `flag` (named in every error); nothing is
  // created yet.
  static Result<OutputFile> Prepare(const std::string& flag, const std::string& path);

  // A new temporary file beside the name (O_EXCL, mode `mode`), for one whole write.
  Result<UniqueFd> CreateTemp(mode_t mode);
  // fsyncs `fd` and renames the temporary file onto the name: whatever was planted there
  // since Prepare is replaced, never written through (in a sticky directory, the kernel
  // refuses a non-root caller the replacement of another user's file).
  Status Commit(int fd);
  // Removes the temporary file, if one was made and not committed.
  void Abort();

  // Opens the name for appending (--ledger): the caller's own regular file as it is, or a
  // new one made with O_EXCL, so whatever is there is never written through.
  [[nodiscard]] Result<UniqueFd> OpenForAppend(mode_t mode) const;

  [[nodiscard]] int dir_fd() const { return dir_.get(); }
  [[nodiscard]] const std::string& path() const { return path_; }

  OutputFile(OutputFile&&) noexcept = default;
  OutputFile& operator=(OutputFile&&) noexcept = default;
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  ~OutputFile() { Abort(); }

 private:
  OutputFile(std::string flag, std::string path, std::string name, UniqueFd dir)
      : flag_(std::move(flag)),
        path_(std::move(path)),
        name_(std::move(name)),
        dir_(std::move(dir)) {}
  // The entry at the name: absent, or the caller's own regular file.
  [[nodiscard]] Status CheckName() const;

  std::string flag_;
  std::string path_;
  std::string name_;
  UniqueFd dir_;
  std::string temp_;  // the temporary file's name while it exists
};

}  // namespace sbx::base
