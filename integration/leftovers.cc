#include "integration/leftovers.h"

#include <dirent.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <set>
#include <sstream>

#include "integration/harness.h"

namespace sbx::integration {
namespace {

// The flag of a task that has begun to exit (include/linux/sched.h).
constexpr unsigned long kPfExiting = 0x4;
constexpr unsigned long kSigkillBit = 1UL << (SIGKILL - 1);

struct Child {
  pid_t pid = -1;
  bool dying = false;
};

// "SigPnd:\t0000000000000100" -> the mask, 0 when missing.
unsigned long PendingMask(const std::string& status, const std::string& key) {
  size_t at = status.find("\n" + key + ":");
  if (at == std::string::npos) return 0;
  return std::strtoul(status.c_str() + at + key.size() + 2, nullptr, 16);
}

// The children of this process now, from /proc/PID/stat (its ppid is the thread group id,
// so a child forked by any thread of this process counts).
std::vector<Child> Children() {
  std::vector<Child> children;
  DIR* dir = opendir("/proc");
  if (dir == nullptr) return children;
  const pid_t self = getpid();
  while (dirent* entry = readdir(dir)) {
    auto pid = static_cast<pid_t>(std::atoi(entry->d_name));
    if (pid <= 0) continue;
    std::optional<std::string> stat = ReadFile("/proc/" + std::string(entry->d_name) + "/stat");
    // The command name may hold blanks and parentheses: the fields start after the last ')'.
    size_t fields_at = stat ? stat->rfind(')') : std::string::npos;
    if (fields_at == std::string::npos) continue;
    std::istringstream fields(stat->substr(fields_at + 1));
    std::string state;
    long ppid = 0;
    long skip = 0;
    unsigned long flags = 0;
    // state ppid pgrp session tty_nr tpgid flags
    if (!(fields >> state >> ppid >> skip >> skip >> skip >> skip >> flags) || ppid != self) {
      continue;
    }
    std::string status = ReadFile("/proc/" + std::string(entry->d_name) + "/status").value_or("");
    bool killed =
        ((PendingMask(status, "SigPnd") | PendingMask(status, "ShdPnd")) & kSigkillBit) != 0;
    children.push_back({pid, state == "Z" || state == "X" || (flags & kPfExiting) != 0 || killed});
  }
  closedir(dir);
  return children;
}

std::string CmdlineOf(pid_t pid) {
  std::string cmdline = ReadFile("/proc/" + std::to_string(pid) + "/cmdline").value_or("");
  while (!cmdline.empty() && cmdline.back() == '\0') cmdline.pop_back();
  for (char& c : cmdline) c = c == '\0' ? ' ' : c;
  return cmdline.empty() ? "(no command line)" : cmdline;
}

}  // namespace

void BecomeSubreaper() {
  if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
    std::fprintf(stderr, "integration harness: PR_SET_CHILD_SUBREAPER: %s\n", std::strerror(errno));
    std::abort();
  }
}

std::vector<Leftover> EndLeftovers(const std::vector<pid_t>& spare) {
  std::vector<Leftover> leftovers;
  std::set<pid_t> seen;
  // Each round kills the children found and reaps those that are gone, without blocking:
  // the pid 1 of a pid namespace does not finish exiting before its namespace's zombies are
  // reaped, and those may be children of this process too. A killed child's orphans are a
  // later round's children. The deadline only bounds a process that ignores SIGKILL.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    bool reaped = false;
    bool waiting = false;
    for (const Child& child : Children()) {
      if (std::find(spare.begin(), spare.end(), child.pid) != spare.end()) continue;
      if (!child.dying && seen.insert(child.pid).second) {
        leftovers.push_back({child.pid, CmdlineOf(child.pid)});
      }
      // One this caller may not signal (a set-user-ID program of another uid) is reported
      // and not waited for.
      if (kill(child.pid, SIGKILL) != 0 && !child.dying) continue;
      waiting = true;
      reaped |= waitpid(child.pid, nullptr, WNOHANG | __WALL) == child.pid;
    }
    if (!waiting || std::chrono::steady_clock::now() > deadline) break;
    if (!reaped) usleep(1000);
  }
  return leftovers;
}

}  // namespace sbx::integration
