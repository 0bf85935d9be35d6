// Helpers shared by the bwrap parser tests: fixed hosts, a one-line Parse() and fds
// holding test data (the parser consumes --args and --add-seccomp-fd fds).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "cli/bwrap_parser.h"
#include "runtime/host_facts.h"

namespace sbx::cli::testing {

// uid/gid 1000, not setuid: bwrap implies a user namespace.
runtime::HostFacts UserHost();
// uid/gid 0.
runtime::HostFacts RootHost();
// uid 1000 with euid 0: bwrap's setuid mode.
runtime::HostFacts SetuidHost();

BwrapParse Parse(const std::vector<std::string>& args, std::vector<std::string> env = {},
                 const runtime::HostFacts& host = UserHost());

// A pipe whose read end holds `data` (small data only: one pipe buffer) with the write
// end closed. Returns the read end; the caller hands it to the parser, which closes it.
int PipeWithData(std::string_view data);
// A memfd holding `data` at offset 0, for data larger than a pipe buffer.
int MemfdWithData(std::string_view data);
// A file descriptor number that is certainly not open.
int ClosedFd();
bool IsOpen(int fd);

}  // namespace sbx::cli::testing
