#include "tests/cli/bwrap_test_util.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <span>

namespace sbx::cli::testing {
namespace {

void WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n <= 0) std::abort();  // test setup failure
    data.remove_prefix(static_cast<size_t>(n));
  }
}

}  // namespace

runtime::HostFacts UserHost() {
  runtime::HostFacts host;
  host.uid = host.euid = 1000;
  host.gid = 1000;
  return host;
}

runtime::HostFacts RootHost() {
  runtime::HostFacts host;
  host.uid = host.euid = 0;
  host.gid = 0;
  return host;
}

runtime::HostFacts SetuidHost() {
  runtime::HostFacts host = UserHost();
  host.euid = 0;
  return host;
}

BwrapParse Parse(const std::vector<std::string>& args, std::vector<std::string> env,
                 const runtime::HostFacts& host) {
  return ParseBwrapArgs(std::span<const std::string>(args), std::move(env), host);
}

int PipeWithData(std::string_view data) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) std::abort();
  WriteAll(fds[1], data);
  ::close(fds[1]);
  return fds[0];
}

int MemfdWithData(std::string_view data) {
  const int fd = ::memfd_create("bwrap-test", MFD_CLOEXEC);
  if (fd < 0) std::abort();
  WriteAll(fd, data);
  if (::lseek(fd, 0, SEEK_SET) != 0) std::abort();
  return fd;
}

int ClosedFd() {
  for (int fd = 900;; ++fd) {
    if (!IsOpen(fd)) return fd;
  }
}

bool IsOpen(int fd) { return ::fcntl(fd, F_GETFD) >= 0; }

}  // namespace sbx::cli::testing
