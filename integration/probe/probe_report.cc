// `probe report`: everything the sandbox looks like from inside, one `key: value` per line,
// each key printed once and in a fixed order, so the harness can parse it into a map.
// Multi-valued facts get a key per element: `env.NAME`, `fd.N`, `link.NAME`, `mount.PATH`,
// `ns.TYPE`. A fact that cannot be read (e.g. /proc not mounted) prints `unavailable`.
#include <arpa/inet.h>
#include <dirent.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

extern char** environ;

namespace sbx::probe {
namespace {

constexpr char kUnavailable[] = "unavailable";

// Values are single-line: an embedded newline (possible in env values) prints as `\n`.
void Put(const std::string& key, const std::string& value) {
  std::string flat;
  for (char c : value) flat += c == '\n' ? std::string("\\n") : std::string(1, c);
  std::printf("%s: %s\n", key.c_str(), flat.c_str());
}

std::string Join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (const std::string& part : parts) out += (out.empty() ? "" : sep) + part;
  return out;
}

// Lines of a small text file with runs of blanks collapsed ("0  1000   1" -> "0 1000 1").
std::vector<std::string> ReadLines(const char* path, bool* ok) {
  std::ifstream in(path);
  *ok = in.is_open();
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::vector<std::string> parts;
    for (std::string w; words >> w;) parts.push_back(w);
    lines.push_back(Join(parts, " "));
  }
  return lines;
}

void PutFile(const std::string& key, const char* path) {
  bool ok = false;
  std::vector<std::string> lines = ReadLines(path, &ok);
  Put(key, ok ? Join(lines, ";") : kUnavailable);
}

std::string ReadLink(const std::string& path) {
  char buf[4096];
  ssize_t n = readlink(path.c_str(), buf, sizeof buf - 1);
  return n >= 0 ? std::string(buf, n) : kUnavailable;
}

// Directory entries without "." and "..", sorted; `ok` false if it cannot be opened.
std::vector<std::string> ListDir(const char* path, bool* ok, int* listing_fd = nullptr) {
  std::vector<std::string> names;
  DIR* dir = opendir(path);
  *ok = dir != nullptr;
  if (dir == nullptr) return names;
  if (listing_fd != nullptr) *listing_fd = dirfd(dir);
  while (dirent* entry = readdir(dir)) {
    std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

void ReportIdentity() {
  Put("uid", std::to_string(getuid()));
  Put("euid", std::to_string(geteuid()));
  Put("gid", std::to_string(getgid()));
  Put("egid", std::to_string(getegid()));
  std::vector<gid_t> groups(NGROUPS_MAX);
  int n = getgroups(static_cast<int>(groups.size()), groups.data());
  groups.resize(n > 0 ? n : 0);
  std::sort(groups.begin(), groups.end());
  std::vector<std::string> names;
  for (gid_t g : groups) names.push_back(std::to_string(g));
  Put("groups", Join(names, " "));
  PutFile("uid_map", "/proc/self/uid_map");
  PutFile("gid_map", "/proc/self/gid_map");
  PutFile("setgroups", "/proc/self/setgroups");
}

// Capability sets, NoNewPrivs and Seccomp copied from /proc/self/status.
void ReportStatus() {
  static constexpr const char* kKeys[] = {"CapInh", "CapPrm",     "CapEff", "CapBnd",
                                          "CapAmb", "NoNewPrivs", "Seccomp"};
  std::map<std::string, std::string> status;
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);) {
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    size_t start = line.find_first_not_of(" \t", colon + 1);
    status[line.substr(0, colon)] = start == std::string::npos ? "" : line.substr(start);
  }
  for (const char* key : kKeys) {
    auto it = status.find(key);
    Put(key, it != status.end() ? it->second : kUnavailable);
  }
}

void ReportProcess() {
  Put("pid", std::to_string(getpid()));
  Put("ppid", std::to_string(getppid()));
  Put("pgid", std::to_string(getpgid(0)));
  Put("sid", std::to_string(getsid(0)));
  bool ok = false;
  std::vector<std::string> pids;
  for (const std::string& name : ListDir("/proc", &ok)) {
    if (name.find_first_not_of("0123456789") == std::string::npos) pids.push_back(name);
  }
  std::sort(pids.begin(), pids.end(),
            [](const std::string& a, const std::string& b) { return std::stol(a) < std::stol(b); });
  Put("pids", ok ? Join(pids, " ") : kUnavailable);
  for (const char* ns : {"cgroup", "ipc", "mnt", "net", "pid", "user", "uts"}) {
    Put(std::string("ns.") + ns, ReadLink(std::string("/proc/self/ns/") + ns));
  }
  char host[256] = {};
  Put("hostname", gethostname(host, sizeof host - 1) == 0 ? host : kUnavailable);
  char cwd[4096];
  Put("cwd", getcwd(cwd, sizeof cwd) != nullptr ? cwd : kUnavailable);
}

void ReportEnv() {
  std::map<std::string, std::string> env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    std::string kv = *entry;
    size_t eq = kv.find('=');
    env[kv.substr(0, eq)] = eq == std::string::npos ? "" : kv.substr(eq + 1);
  }
  Put("env", std::to_string(env.size()));
  for (const auto& [key, value] : env) Put("env." + key, value);
}

// Open descriptors, excluding the one opendir() uses for the listing itself. Pipe and
// socket inode numbers vary from run to run, so only their kind is printed.
void ReportFds() {
  bool ok = false;
  int listing_fd = -1;
  std::vector<std::string> names = ListDir("/proc/self/fd", &ok, &listing_fd);
  if (!ok) {
    Put("fds", kUnavailable);
    return;
  }
  std::vector<int> fds;
  for (const std::string& name : names) {
    if (std::atoi(name.c_str()) != listing_fd) fds.push_back(std::atoi(name.c_str()));
  }
  std::sort(fds.begin(), fds.end());
  std::vector<std::string> numbers;
  for (int fd : fds) numbers.push_back(std::to_string(fd));
  Put("fds", Join(numbers, " "));
  for (int fd : fds) {
    std::string target = ReadLink("/proc/self/fd/" + std::to_string(fd));
    for (const char* kind : {"pipe:", "socket:"}) {
      if (target.rfind(kind, 0) == 0) target = std::string(kind, std::strlen(kind) - 1);
    }
    Put("fd." + std::to_string(fd), target);
  }
}

// Links via ioctls on an AF_INET socket (no sysfs needed): `FLAG,FLAG ADDRESS|none`.
void ReportLinks() {
  int sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  struct if_nameindex* links = if_nameindex();
  if (sock < 0 || links == nullptr) {
    Put("links", kUnavailable);
    if (sock >= 0) close(sock);
    return;
  }
  static constexpr std::pair<int, const char*> kFlags[] = {
      {IFF_UP, "UP"},           {IFF_BROADCAST, "BROADCAST"}, {IFF_LOOPBACK, "LOOPBACK"},
      {IFF_POINTOPOINT, "P2P"}, {IFF_RUNNING, "RUNNING"},     {IFF_NOARP, "NOARP"},
      {IFF_PROMISC, "PROMISC"}, {IFF_MULTICAST, "MULTICAST"}};
  std::vector<std::string> names;
  std::vector<std::string> lines;
  for (struct if_nameindex* entry = links; entry->if_index != 0; ++entry) {
    names.emplace_back(entry->if_name);
    ifreq req{};
    std::strncpy(req.ifr_name, entry->if_name, IFNAMSIZ - 1);
    std::vector<std::string> flags;
    if (ioctl(sock, SIOCGIFFLAGS, &req) == 0) {
      for (const auto& [bit, name] : kFlags) {
        if ((req.ifr_flags & bit) != 0) flags.emplace_back(name);
      }
    }
    std::string address = "none";
    if (ioctl(sock, SIOCGIFADDR, &req) == 0) {
      char text[INET_ADDRSTRLEN] = {};
      auto* in = reinterpret_cast<sockaddr_in*>(&req.ifr_addr);
      if (inet_ntop(AF_INET, &in->sin_addr, text, sizeof text) != nullptr) address = text;
    }
    lines.push_back("link." + std::string(entry->if_name) + ": " +
                    (flags.empty() ? "-" : Join(flags, ",")) + " " + address);
  }
  if_freenameindex(links);
  close(sock);
  std::sort(names.begin(), names.end());
  std::sort(lines.begin(), lines.end());
  Put("links", Join(names, " "));
  for (const std::string& line : lines) std::printf("%s\n", line.c_str());
}

std::vector<std::string> Split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  std::istringstream in(text);
  for (std::string part; std::getline(in, part, sep);) parts.push_back(part);
  return parts;
}

// One mountinfo line -> `mount.<point>` = `<fstype> <ro|rw>[,nosuid][,nodev][,noexec]`,
// plus ` size=..,mode=..` for tmpfs (what --size and --perms control).
std::pair<std::string, std::string> NormalizeMount(const std::string& line) {
  std::vector<std::string> fields = Split(line, ' ');
  auto dash = std::find(fields.begin(), fields.end(), "-");
  if (fields.size() < 6 || dash == fields.end() || dash + 1 == fields.end()) return {};
  const std::string& point = fields[4];
  std::string fstype = *(dash + 1);
  std::vector<std::string> flags;
  for (const std::string& opt : Split(fields[5], ',')) {
    if (opt == "ro" || opt == "rw" || opt == "nosuid" || opt == "nodev" || opt == "noexec") {
      flags.push_back(opt);
    }
  }
  std::string value = fstype + " " + Join(flags, ",");
  if (fstype == "tmpfs" && dash + 3 < fields.end()) {
    std::vector<std::string> extra;
    for (const std::string& opt : Split(*(dash + 3), ',')) {
      if (opt.rfind("size=", 0) == 0 || opt.rfind("mode=", 0) == 0) extra.push_back(opt);
    }
    if (!extra.empty()) value += " " + Join(extra, ",");
  }
  return {point, value};
}

// Later lines win: a mount stacked on the same point hides the earlier one.
void ReportMounts() {
  std::ifstream in("/proc/self/mountinfo");
  if (!in.is_open()) {
    Put("mounts", kUnavailable);
    return;
  }
  std::map<std::string, std::string> mounts;
  for (std::string line; std::getline(in, line);) {
    auto [point, value] = NormalizeMount(line);
    if (!point.empty()) mounts[point] = value;
  }
  Put("mounts", std::to_string(mounts.size()));
  for (const auto& [point, value] : mounts) Put("mount." + point, value);
}

void ReportDev() {
  bool ok = false;
  std::vector<std::string> names = ListDir("/dev", &ok);
  Put("dev", ok ? Join(names, " ") : kUnavailable);
}

}  // namespace

int RunReport(const char* argv0) {
  Put("argv0", argv0);
  ReportIdentity();
  ReportStatus();
  ReportProcess();
  ReportEnv();
  ReportFds();
  ReportLinks();
  ReportMounts();
  ReportDev();
  return 0;
}

}  // namespace sbx::probe
