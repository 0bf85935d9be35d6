#include "integration/run/run_support.h"

#include <dirent.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace sbx::integration::run {
namespace {

std::string EnvOr(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : fallback;
}

bool InPath(const std::string& tool) {
  return RunCommand({"sh", "-c", "command -v " + tool}).exit_code == 0;
}

}  // namespace

std::string AteamPath() { return EnvOr("SBX_ATEAM", SBX_DEFAULT_ATEAM); }
std::string Backend() { return EnvOr("SBX_RUN_BACKEND", "native"); }
std::string NetClientPath() { return EnvOr("SBX_RUN_NETCLIENT", SBX_DEFAULT_NETCLIENT); }

Args RunArgv(const Args& options, const Args& command) {
  Args argv = {AteamPath(), "run",           "--backend", Backend(),
               "--ro",      ProbeHostPath(), "--ro",      NetClientPath()};
  argv.insert(argv.end(), options.begin(), options.end());
  argv.emplace_back("--");
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

RunResult RunAteam(const Args& options, const Args& command, const RunOptions& run) {
  return RunCommand(RunArgv(options, command), run);
}

RootTempDir::RootTempDir() {
  struct stat tmp {};
  std::string templ =
      std::string(stat("/tmp", &tmp) == 0 && tmp.st_uid == 0 ? "/tmp" : "/var/tmp") +
      "/sbx-root-XXXXXX";
  if (mkdtemp(templ.data()) == nullptr) std::abort();
  chmod(templ.c_str(), 0755);
  path_ = templ;
}

RootTempDir::~RootTempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

RunOptions WithEnv(std::vector<std::string> env) {
  RunOptions options;
  options.extra_env = std::move(env);
  return options;
}

RunOptions WithTimeout(std::chrono::milliseconds timeout) {
  RunOptions options;
  options.timeout = timeout;
  return options;
}

std::string MissingPrerequisite(const std::vector<std::string>& tools) {
  if (auto reason = SandboxUnavailableReason()) return *reason;
  for (const std::string& path : {AteamPath(), ProbeHostPath(), NetClientPath()}) {
    if (access(path.c_str(), X_OK) != 0) return path + " is not executable by this user";
  }
  if (Backend() == "bwrap" && access("/usr/bin/bwrap", X_OK) != 0) return "no /usr/bin/bwrap";
  for (const std::string& tool : tools) {
    if (!InPath(tool)) return tool + " is not installed";
  }
  return "";
}

void HandToSandboxUser(const std::string& dir) {
  if (getuid() != 0) return;
  if (chown(dir.c_str(), 65534, 65534) != 0) std::abort();
}

std::vector<int> ProcessesMatching(const std::string& needle) {
  std::vector<int> pids;
  DIR* dir = opendir("/proc");
  if (dir == nullptr) return pids;
  while (dirent* entry = readdir(dir)) {
    int pid = std::atoi(entry->d_name);
    if (pid <= 0 || pid == getpid()) continue;
    auto cmdline = ReadFile("/proc/" + std::string(entry->d_name) + "/cmdline");
    if (!cmdline) continue;
    for (char& c : *cmdline) c = c == '\0' ? ' ' : c;
    if (cmdline->find(needle) != std::string::npos) pids.push_back(pid);
  }
  closedir(dir);
  return pids;
}

std::string SubordinateRange(const char* file) {
  const passwd* pw = getpwuid(getuid());
  if (pw == nullptr) return "";
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    const std::string prefix = std::string(pw->pw_name) + ":";
    if (!line.starts_with(prefix)) continue;
    std::string rest = line.substr(prefix.size());
    std::replace(rest.begin(), rest.end(), ':', ',');
    return rest;
  }
  return "";
}

uid_t UidOfProcess(int pid) {
  const std::string status = ReadFile("/proc/" + std::to_string(pid) + "/status").value_or("");
  const auto at = status.find("\nUid:");
  return at == std::string::npos ? 0 : static_cast<uid_t>(std::stoul(status.substr(at + 5)));
}

std::string FormatHash(uint64_t hash) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(hash));
  return buf;
}

namespace {

// Binds `fd` to 127.0.0.1 with a kernel-chosen port and returns the port.
int BindLoopbackTcp(int fd) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    std::abort();
  }
  return ntohs(addr.sin_port);
}

}  // namespace

int FreePort() {
  Fd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  return BindLoopbackTcp(fd.get());  // released when fd closes
}

// Without SO_REUSEADDR the bound socket keeps every other bind off the port, and a port with
// no listener answers a SYN with a reset.
ClosedPort::ClosedPort()
    : fd_(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)), port_(BindLoopbackTcp(fd_.get())) {}

bool MakeTestCertificates(const std::string& dir) {
  std::string script =
      "set -e; cd " + dir +
      "\nopenssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 "
      "-subj /CN=sbx-test-ca 2>/dev/null"
      "\nopenssl req -newkey rsa:2048 -nodes -keyout srv.key -out srv.csr "
      "-subj /CN=api.example.test 2>/dev/null"
      "\nprintf 'subjectAltName=DNS:api.example.test\\n' > ext"
      "\nopenssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out srv.pem "
      "-days 2 -extfile ext 2>/dev/null\nchmod a+r *\n";
  return RunCommand({"sh", "-c", script}).exit_code == 0;
}

std::vector<std::string> DirectoryEntries(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string name = e->d_name;
      if (name != "." && name != "..") names.push_back(name);
    }
    closedir(d);
  }
  return names;
}

int MakeOneCommitRepository(const std::string& path) {
  if (int rc = RunCommand({"git", "init", "-q", path}).exit_code; rc != 0) return rc;
  return RunCommand({"git", "-C", path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q",
                     "--allow-empty", "-m", "x"})
      .exit_code;
}

int CountLines(const std::string& text, const std::string& needle) {
  int n = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    if (text.substr(start, end - start).find(needle) != std::string::npos) ++n;
    start = end + 1;
  }
  return n;
}

}  // namespace sbx::integration::run
