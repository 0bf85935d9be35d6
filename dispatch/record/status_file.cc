#include "dispatch/record/status_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "base/safe_path.h"

namespace sbx::dispatch {

base::Result<StatusFile> StatusFile::Open(const std::string& path) {
  auto file = base::OutputFile::Prepare("--status-json", path);
  if (!file) return file.error();
  return StatusFile(std::move(*file));
}

base::Status StatusFile::Write(const std::string& text, const std::string& workspace,
                               const std::string& out) {
  for (const std::string& top : {workspace, out}) {
    struct stat st {};
    if (top.empty() || ::stat(top.c_str(), &st) != 0) continue;
    // The dispatch refused such a name before it started, with its own line; nothing is
    // written there.
    auto below = base::IsDirBelow(file_.dir_fd(), st);
    if (!below || *below) return {};
  }
  auto fd = file_.CreateTemp(0644);
  if (!fd) return fd.error();
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd->get(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      file_.Abort();
      return base::Error(err, "Can't write", file_.path());
    }
    done += static_cast<size_t>(n);
  }
  return file_.Commit(fd->get());
}

}  // namespace sbx::dispatch
