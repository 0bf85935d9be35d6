#include "bench/relay_bench_procs.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace bench {

using Clock = std::chrono::steady_clock;

uint64_t PssKiB(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/smaps_rollup");
  std::string key;
  uint64_t value = 0;
  while (in >> key) {
    if (key == "Pss:") {
      in >> value;
      return value;
    }
    in.ignore(1 << 20, '\n');
  }
  return 0;
}

// The parent pid from /proc/PID/stat (after the parenthesised command name); 0 if unknown.
pid_t ParentOf(const std::filesystem::path& proc_dir) {
  std::ifstream in(proc_dir / "stat");
  std::string line;
  std::getline(in, line);
  size_t paren = line.rfind(')');
  if (paren == std::string::npos || paren + 2 > line.size()) return 0;
  std::istringstream rest(line.substr(paren + 2));
  char state = 0;
  pid_t ppid = 0;
  rest >> state >> ppid;
  return ppid;
}

// Sum of the Pss of `roots` and of their direct children (socat's per-connection forks).
uint64_t TreePssKiB(const std::set<pid_t>& roots) {
  uint64_t total = 0;
  for (pid_t root : roots) total += PssKiB(root);
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    if (roots.count(ParentOf(entry.path())) != 0) total += PssKiB(std::stoi(name));
  }
  return total;
}

pid_t Spawn(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (const auto& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);  // fork-child noise
  pid_t pid = -1;
  int err = ::posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  return err == 0 ? pid : -1;
}

void StopProcess(pid_t pid) {
  if (pid <= 0) return;
  ::kill(pid, SIGTERM);
  ::waitpid(pid, nullptr, 0);
}

// Reaps every child left, socat's per-connection forks included: the bench is their subreaper
// once socat's listeners are gone. Waits up to 3 s, then kills what still runs.
void ReapChildren() {
  auto deadline = Clock::now() + std::chrono::seconds(3);
  for (;;) {
    pid_t pid = ::waitpid(-1, nullptr, WNOHANG);
    if (pid < 0 && errno == ECHILD) return;
    if (pid > 0) continue;
    if (Clock::now() > deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    if (ParentOf(entry.path()) == ::getpid()) ::kill(std::stoi(name), SIGKILL);
  }
  while (::waitpid(-1, nullptr, 0) > 0) {
  }
}

}  // namespace bench
