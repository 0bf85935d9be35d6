#include "dispatch/record/announce.h"

#include <unistd.h>

#include <cstdio>

#include <fmt/format.h>

#include "dispatch/sys/caller_stderr.h"

namespace sbx::dispatch {

void AnnounceDispatch(const std::string& id, const std::string& workspace, const std::string& out) {
  if (::isatty(STDERR_FILENO) != 1) return;
  SayToCaller(fmt::format("dispatch {}: workspace {}, out {}", id, workspace, out));
}

}  // namespace sbx::dispatch
