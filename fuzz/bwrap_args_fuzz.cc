// Fuzzes the bwrap command-line parser (cli::ParseBwrapArgs): the input is argv, cut at NUL.
//
// `--args FD` and `--add-seccomp-fd FD` make the parser read and close FD. The word after
// either option is therefore replaced by a fresh memfd holding that word's bytes, so the
// fuzzer also drives the nested `--args` data and the seccomp reader, and the parser can
// never close one of libFuzzer's own descriptors.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cli/bwrap_parser.h"
#include "fuzz/fuzz_input.h"

namespace {

int MemfdWith(const std::string& bytes) {
  int fd = ::memfd_create("bwrap-args-fuzz", MFD_CLOEXEC);
  if (fd < 0) return -1;
  if (::write(fd, bytes.data(), bytes.size()) != static_cast<ssize_t>(bytes.size()) ||
      ::lseek(fd, 0, SEEK_SET) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

sbx::runtime::HostFacts UnprivilegedHost() {
  sbx::runtime::HostFacts host;
  host.uid = 1000;
  host.gid = 1000;
  host.euid = 1000;
  host.cwd = "/home/user";
  return host;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return -1;  // the parser is linear; long inputs only slow the search
  std::vector<std::string> args =
      sbx::fuzz::SplitOnNul(std::string_view(reinterpret_cast<const char*>(data), size));
  std::vector<int> fds;
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] != "--args" && args[i] != "--add-seccomp-fd") continue;
    int fd = MemfdWith(args[i + 1]);
    if (fd < 0) return 0;
    fds.push_back(fd);
    args[i + 1] = std::to_string(fd);
    ++i;
  }
  const std::vector<std::string> environment = {"PATH=/usr/bin:/bin", "HOME=/home/user"};
  sbx::cli::BwrapParse parse = sbx::cli::ParseBwrapArgs(args, environment, UnprivilegedHost());

  // What a caller relies on: a fatal outcome always says why, and no line is empty or
  // spans two lines (each is printed with one newline).
  if (parse.outcome == sbx::cli::BwrapOutcome::kFatal) {
    sbx::fuzz::Check(!parse.diagnostics.empty(), "kFatal without a diagnostic");
  }
  for (const std::string& line : parse.diagnostics) {
    sbx::fuzz::Check(line.find("bwrap: ") != std::string::npos, "diagnostic without 'bwrap: '");
  }
  // The fds the parse did not reach are still ours.
  for (int fd : fds) {
    if (::fcntl(fd, F_GETFD) >= 0) ::close(fd);
  }
  return 0;
}
