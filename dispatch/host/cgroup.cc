#include "dispatch/host/cgroup.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include <fmt/format.h>

namespace sbx::dispatch {
namespace {

constexpr const char* kCgroupRoot = "/sys/fs/cgroup";
constexpr uint64_t kCpuPeriodUs = 100000;

bool IsFsType(const std::string& path, long magic) {
  struct statfs fs {};
  return ::statfs(path.c_str(), &fs) == 0 && static_cast<long>(fs.f_type) == magic;
}

// /proc/self/cgroup: "0::/path" for v2, "N:memory:/path" (or "N:cpu,cpuacct:/path") for v1.
struct OwnCgroups {
  std::optional<std::string> unified;
  std::map<std::string, std::string> v1;  // controller -> path
};

OwnCgroups ReadOwnCgroups() {
  OwnCgroups own;
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    auto first = line.find(':');
    auto second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    std::string controllers = line.substr(first + 1, second - first - 1);
    std::string path = line.substr(second + 1);
    if (controllers.empty()) {
      own.unified = path;
      continue;
    }
    std::stringstream list(controllers);
    std::string controller;
    while (std::getline(list, controller, ',')) own.v1[controller] = path;
  }
  return own;
}

std::string Join(const std::string& base, const std::string& path) {
  return path == "/" ? base : base + path;
}

base::Status WriteText(const std::string& path, const std::string& text) {
  base::UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd || ::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
    return base::ErrnoError("Can't write " + text + " to", path);
  }
  return {};
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream out;
  out << in.rdbuf();
  return out.str();
}

bool HasWord(const std::string& text, const std::string& word) {
  std::stringstream words(text);
  std::string w;
  while (words >> w) {
    if (w == word) return true;
  }
  return false;
}

// The number after `key` in a "key value" per line file.
uint64_t KeyedValue(const std::string& text, const std::string& key) {
  std::stringstream lines(text);
  std::string k;
  uint64_t v = 0;
  while (lines >> k >> v) {
    if (k == key) return v;
  }
  return 0;
}

base::Status MakeDir(const std::string& path) {
  if (::mkdir(path.c_str(), 0755) != 0) return base::ErrnoError("Can't create cgroup", path);
  return {};
}

std::string CpuQuota(double cpus) {
  return fmt::format("{}", static_cast<uint64_t>(cpus * static_cast<double>(kCpuPeriodUs)));
}

// The caller's v2 cgroup directory when it can hold the dispatch's cgroup, or why not.
base::Result<std::string> UsableV2Parent(const OwnCgroups& own) {
  std::string unified_root;
  if (IsFsType(kCgroupRoot, CGROUP2_SUPER_MAGIC)) {
    unified_root = kCgroupRoot;
  } else if (IsFsType(std::string(kCgroupRoot) + "/unified", CGROUP2_SUPER_MAGIC)) {
    unified_root = std::string(kCgroupRoot) + "/unified";
  }
  if (unified_root.empty() || !own.unified) return base::Error::Message("no cgroup v2");
  const std::string parent = Join(unified_root, *own.unified);
  const std::string available = ReadText(parent + "/cgroup.controllers");
  if (!HasWord(available, "memory") || !HasWord(available, "pids")) {
    return base::Error::Message(
        fmt::format("cgroup v2 {} offers no memory or pids controller", parent));
  }
  if (::access(parent.c_str(), W_OK) != 0 ||
      ::access((parent + "/cgroup.procs").c_str(), W_OK) != 0) {
    return base::Error::Message(
        fmt::format("cgroup v2 {} is not delegated to this caller", parent));
  }
  return parent;
}

// The v1 directories (memory, pids) a root caller's dispatch cgroups go under, or why not.
base::Result<std::vector<std::string>> UsableV1Parents(const OwnCgroups& own, bool root_caller) {
  if (!root_caller) return base::Error::Message("cgroup v1 needs a root caller");
  std::vector<std::string> parents;
  for (const char* controller : {"memory", "pids"}) {
    const std::string mount = std::string(kCgroupRoot) + "/" + controller;
    auto path = own.v1.find(controller);
    if (path == own.v1.end() || !IsFsType(mount, CGROUP_SUPER_MAGIC)) {
      return base::Error::Message(fmt::format("no cgroup v1 {} controller", controller));
    }
    parents.push_back(Join(mount, path->second));
  }
  return parents;
}

}  // namespace

void RemoveCgroupDirs(const std::vector<std::string>& dirs, int seconds) {
  for (const auto& dir : dirs) {
    for (int round = 0; round < seconds * 20; ++round) {
      if (::rmdir(dir.c_str()) == 0 || errno == ENOENT) break;
      // Processes left behind (the sandbox's pid 1 is gone, so they are dying anyway).
      std::ifstream procs(dir + "/cgroup.procs");
      pid_t pid = 0;
      while (procs >> pid) ::kill(pid, SIGKILL);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
}

base::Result<std::string> DispatchCgroup::Probe(bool root_caller) {
  const OwnCgroups own = ReadOwnCgroups();
  auto v2 = UsableV2Parent(own);
  if (v2) return "v2 under " + *v2 + " (its other processes must move out first)";
  auto v1 = UsableV1Parents(own, root_caller);
  if (v1) return fmt::format("v1 under {}", fmt::join(*v1, ", "));
  return base::Error::Message(v2.error().Render() + "; " + v1.error().Render());
}

base::Result<DispatchCgroup> DispatchCgroup::Create(const std::string& id,
                                                    const CgroupLimits& limits, bool root_caller) {
  const OwnCgroups own = ReadOwnCgroups();
  const std::string name = "ateam-sandbox-" + id;
  std::string why_not_v2;
  if (auto parent = UsableV2Parent(own); !parent) {
    why_not_v2 = parent.error().Render();
  } else {
    bool cpu = HasWord(ReadText(*parent + "/cgroup.controllers"), "cpu");
    auto cgroup = CreateV2(*parent, name, limits, cpu);
    if (cgroup) return cgroup;
    why_not_v2 = cgroup.error().Render();
  }
  if (auto parents = UsableV1Parents(own, root_caller); !parents) {
    return base::Error::Message(why_not_v2 + "; " + parents.error().Render());
  }
  auto cgroup = CreateV1(own.v1, name, limits);
  if (cgroup) return cgroup;
  return base::Error::Message(why_not_v2 + "; " + cgroup.error().Render());
}

base::Result<DispatchCgroup> DispatchCgroup::CreateV2(const std::string& parent,
                                                      const std::string& name,
                                                      const CgroupLimits& limits, bool cpu) {
  std::string enable = "+memory +pids";
  if (cpu && limits.cpus) enable += " +cpu";
  const std::string subtree = parent + "/cgroup.subtree_control";
  if (auto st = WriteText(subtree, enable); !st) {
    if (st.error().err() != EBUSY) return st.error();
    // Controllers are only for cgroups without processes of their own: move `run` into a
    // leaf, which works when nothing else lives in the caller's cgroup.
    const std::string leaf = parent + "/ateam-sandbox-run-" + name.substr(14);
    if (auto made = MakeDir(leaf); !made) return made.error();
    if (auto moved = WriteText(leaf + "/cgroup.procs", "0"); !moved) {
      ::rmdir(leaf.c_str());
      return moved.error();
    }
    if (auto again = WriteText(subtree, enable); !again) {
      (void)WriteText(parent + "/cgroup.procs", "0");
      ::rmdir(leaf.c_str());
      return base::Error::Message(fmt::format(
          "cgroup v2 {} holds other processes (run under `systemd-run --user --scope -p "
          "Delegate=yes`)",
          parent));
    }
  }
  DispatchCgroup cgroup;
  cgroup.v2_ = true;
  const std::string dir = parent + "/" + name;
  if (auto st = MakeDir(dir); !st) return st.error();
  cgroup.dirs_.push_back(dir);
  if (auto st = WriteText(dir + "/memory.max", std::to_string(limits.memory)); !st)
    return st.error();
  (void)WriteText(dir + "/memory.swap.max", "0");  // absent without swap accounting
  if (auto st = WriteText(dir + "/pids.max", std::to_string(limits.pids)); !st) return st.error();
  if (cpu && limits.cpus) {
    if (auto st = WriteText(dir + "/cpu.max",
                            CpuQuota(*limits.cpus) + " " + std::to_string(kCpuPeriodUs));
        !st) {
      return st.error();
    }
  }
  base::UniqueFd procs(::open((dir + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC));
  if (!procs) return base::ErrnoError("Can't open", dir + "/cgroup.procs");
  cgroup.procs_.push_back(std::move(procs));
  return cgroup;
}

base::Result<DispatchCgroup> DispatchCgroup::CreateV1(const std::map<std::string, std::string>& own,
                                                      const std::string& name,
                                                      const CgroupLimits& limits) {
  DispatchCgroup cgroup;
  std::vector<std::string> controllers = {"memory", "pids"};
  if (limits.cpus) controllers.emplace_back("cpu");
  for (const auto& controller : controllers) {
    const std::string mount = std::string(kCgroupRoot) + "/" + controller;
    auto path = own.find(controller);
    if (path == own.end() || !IsFsType(mount, CGROUP_SUPER_MAGIC)) {
      return base::Error::Message(fmt::format("no cgroup v1 {} controller", controller));
    }
    const std::string dir = Join(mount, path->second) + "/" + name;
    if (auto st = MakeDir(dir); !st) return st.error();
    cgroup.dirs_.push_back(dir);
  }
  const std::string& memory = cgroup.dirs_[0];
  if (auto st = WriteText(memory + "/memory.limit_in_bytes", std::to_string(limits.memory)); !st) {
    return st.error();
  }
  // memory + swap at the same bound: no swap. Absent without swap accounting.
  (void)WriteText(memory + "/memory.memsw.limit_in_bytes", std::to_string(limits.memory));
  if (auto st = WriteText(cgroup.dirs_[1] + "/pids.max", std::to_string(limits.pids)); !st) {
    return st.error();
  }
  if (limits.cpus) {
    const std::string& cpu = cgroup.dirs_[2];
    if (auto st = WriteText(cpu + "/cpu.cfs_period_us", std::to_string(kCpuPeriodUs)); !st) {
      return st.error();
    }
    if (auto st = WriteText(cpu + "/cpu.cfs_quota_us", CpuQuota(*limits.cpus)); !st) {
      return st.error();
    }
  }
  for (const auto& dir : cgroup.dirs_) {
    base::UniqueFd procs(::open((dir + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC));
    if (!procs) return base::ErrnoError("Can't open", dir + "/cgroup.procs");
    cgroup.procs_.push_back(std::move(procs));
  }
  return cgroup;
}

DispatchCgroup::~DispatchCgroup() { Remove(); }

std::vector<int> DispatchCgroup::ProcsFds() const {
  std::vector<int> fds;
  for (const auto& fd : procs_) fds.push_back(fd.get());
  return fds;
}

std::string DispatchCgroup::Describe() const {
  std::string dirs;
  for (const auto& dir : dirs_) dirs += (dirs.empty() ? "" : ", ") + dir;
  return fmt::format("{} {}", v2_ ? "v2" : "v1", dirs);
}

uint64_t DispatchCgroup::OomKills() const {
  if (dirs_.empty()) return 0;
  const std::string file = v2_ ? "/memory.events" : "/memory.oom_control";
  return KeyedValue(ReadText(dirs_[0] + file), "oom_kill");
}

void DispatchCgroup::Remove() {
  procs_.clear();
  if (dirs_.empty()) return;
  RemoveCgroupDirs(dirs_, 5);
  dirs_.clear();
}

}  // namespace sbx::dispatch
