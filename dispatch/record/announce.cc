#include "dispatch/record/announce.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include <fmt/format.h>

#include "dispatch/sys/caller_stderr.h"

namespace sbx::dispatch {

base::Status WriteIdFile(base::OutputFile& file, const std::string& id) {
  auto fd = file.CreateTemp(0644);
  if (!fd) return fd.error();
  const std::string text = id + "\n";
  if (::write(fd->get(), text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
    int err = errno;
    file.Abort();
    return base::Error(err != 0 ? err : EIO, "--id-file", file.path());
  }
  return file.Commit(fd->get());
}

void AnnounceDispatch(const std::string& id, const std::string& workspace, const std::string& out) {
  if (::isatty(STDERR_FILENO) != 1) return;
  NoticeToCaller(fmt::format("dispatch {}: workspace {}, out {}", id, workspace, out));
}

}  // namespace sbx::dispatch
