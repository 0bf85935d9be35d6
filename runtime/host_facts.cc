#include "runtime/host_facts.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>

#include "security/capabilities.h"

namespace sbx::runtime {
namespace {

// Reads a small decimal /proc value; `fallback` when it cannot be read.
long ReadProcNumber(const char* path, long fallback) {
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fallback;
  char buf[32];
  ssize_t n = ::read(fd, buf, sizeof(buf) - 1);
  ::close(fd);
  if (n <= 0) return fallback;
  buf[n] = '\0';
  return std::strtol(buf, nullptr, 10);
}

}  // namespace

base::Result<HostFacts> ProbeHostFacts() {
  HostFacts facts;
  facts.uid = ::getuid();
  facts.gid = ::getgid();
  facts.euid = ::geteuid();
  if (security::CapSets sets; security::ReadCapSets(&sets) == 0) {
    facts.effective_caps = sets.effective;
    facts.permitted_caps = sets.permitted;
  }
  facts.cap_last_cap = static_cast<int>(ReadProcNumber("/proc/sys/kernel/cap_last_cap", 40));
  facts.overflow_uid = static_cast<uid_t>(ReadProcNumber("/proc/sys/kernel/overflowuid", 65534));
  facts.overflow_gid = static_cast<gid_t>(ReadProcNumber("/proc/sys/kernel/overflowgid", 65534));
  facts.user_namespaces = ::access("/proc/self/ns/user", F_OK) == 0 &&
                          ReadProcNumber("/proc/sys/user/max_user_namespaces", 1) > 0;
  facts.cgroup_namespaces = ::access("/proc/self/ns/cgroup", F_OK) == 0;
  char cwd[PATH_MAX];
  if (::getcwd(cwd, sizeof(cwd)) != nullptr) facts.cwd = cwd;
  if (::isatty(STDOUT_FILENO) == 1) {
    char tty[PATH_MAX];
    if (::ttyname_r(STDOUT_FILENO, tty, sizeof(tty)) == 0) facts.stdout_tty = tty;
  }
  if (::access("/proc/self/status", R_OK) != 0) return base::ErrnoError("Can't open /proc");
  return facts;
}

}  // namespace sbx::runtime
