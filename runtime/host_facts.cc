#include "runtime/host_facts.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

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

bool Maps(const std::vector<IdRange>& map, uint32_t id) {
  for (const IdRange& r : map) {
    if (id >= r.first && id - r.first < r.count) return true;
  }
  return false;
}

// The whole file, or nullopt when it cannot be read (then every id counts as mapped).
std::optional<std::string> ReadSmallFile(const char* path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

bool HostFacts::MapsUid(uid_t id) const { return Maps(uid_map, id); }
bool HostFacts::MapsGid(gid_t id) const { return Maps(gid_map, id); }

std::vector<IdRange> ParseIdMap(std::string_view text) {
  std::vector<IdRange> ranges;
  std::istringstream in{std::string(text)};
  std::string line;
  while (std::getline(in, line)) {
    unsigned long inside = 0;
    unsigned long outside = 0;
    unsigned long count = 0;
    if (std::sscanf(line.c_str(), "%lu %lu %lu", &inside, &outside, &count) != 3) continue;
    if (inside > 0xffffffffUL || count > 0xffffffffUL) continue;
    ranges.push_back({static_cast<uint32_t>(inside), static_cast<uint32_t>(count)});
  }
  return ranges;
}

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
  if (auto text = ReadSmallFile("/proc/self/uid_map")) facts.uid_map = ParseIdMap(*text);
  if (auto text = ReadSmallFile("/proc/self/gid_map")) facts.gid_map = ParseIdMap(*text);
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
