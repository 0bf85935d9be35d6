// bwrap: the bubblewrap-compatible executable. The same sources as `ateam-sandbox bwrap`,
// with the face fixed at build time instead of chosen from argv[0]: a program that
// re-executes itself through /proc/self/exe, or a packager who installs it under another
// name (bwrap.real, a versioned symlink), still gets bwrap.
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/bwrap_command.h"

namespace {

int Main(int argc, char** argv) {
  // Nothing here may run with more privilege than its caller: a setuid install would
  // hand the caller's choice of mounts to root (bwrap's setuid CVE history).
  if (::getuid() != ::geteuid() || ::getgid() != ::getegid()) {
    fmt::print(stderr, "bwrap: refusing to run setuid or setgid\n");
    return 1;
  }
  std::vector<std::string> args(argv + (argc > 0 ? 1 : 0), argv + argc);
  return sbx::cli::RunBwrapCommand(argc > 0 ? argv[0] : "bwrap", args);
}

}  // namespace

// The command reports its own errors; an exception reaching here is an allocation failure
// or a bug, and still ends with one line and bwrap's failure code.
int main(int argc, char** argv) {
  try {
    return Main(argc, argv);
  } catch (const std::exception& e) {
    // stdio, not fmt: nothing in a handler may throw again.
    std::fprintf(stderr, "bwrap: internal error: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "bwrap: internal error\n");
  }
  return 1;
}
