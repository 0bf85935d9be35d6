#include "dispatch/record/announce.h"

#include <unistd.h>

#include <cstdio>

#include <fmt/format.h>

namespace sbx::dispatch {

void AnnounceDispatch(const std::string& id, const std::string& workspace, const std::string& out) {
  if (::isatty(STDERR_FILENO) != 1) return;
  fmt::print(stderr, "ateam-sandbox run: dispatch {}: workspace {}, out {}\n", id, workspace, out);
}

}  // namespace sbx::dispatch
