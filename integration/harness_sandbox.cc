// The bwrap-specific half of the harness: the command under test, profiles, probe output
// parsing, host facts, temp dirs and loopback sockets.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "integration/harness.h"

namespace sbx::integration {

const Args& BwrapPrefix() {
  static const Args prefix = [] {
    const char* env = std::getenv("SBX_BWRAP");
    Args words = Words(env != nullptr && *env != '\0' ? env : SBX_DEFAULT_BWRAP);
    return words;
  }();
  return prefix;
}

std::string ProbeHostPath() {
  const char* env = std::getenv("SBX_PROBE");
  return env != nullptr && *env != '\0' ? env : SBX_DEFAULT_PROBE;
}

const std::string& BwrapVersion() {
  static const std::string version = [] {
    RunResult r = RunCommand(BwrapArgv({"--version"}, {}));
    std::string out = r.out.substr(0, r.out.find('\n'));
    constexpr std::string_view kPrefix = "bubblewrap ";
    return r.exit_code == 0 && out.rfind(kPrefix, 0) == 0 ? out.substr(kPrefix.size())
                                                          : std::string();
  }();
  return version;
}

bool IsBwrap080() { return BwrapVersion() == "0.8.0"; }

Args BaseProfile() {
  return {"--ro-bind", "/usr",    "/usr", "--symlink", "usr/bin",       "/bin",
          "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64",     "/lib64",
          "--ro-bind", "/etc",    "/etc", "--ro-bind", ProbeHostPath(), kProbe};
}

Args TypicalProfile() {
  Args profile = BaseProfile();
  profile.insert(profile.end(), {"--proc", "/proc", "--dev", "/dev"});
  return profile;
}

Args BwrapArgv(const Args& options, const Args& command) {
  Args argv = BwrapPrefix();
  argv.insert(argv.end(), options.begin(), options.end());
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

RunResult RunProbe(const Args& options, const Args& probe_args, const RunOptions& run,
                   const Args& profile) {
  Args all = profile;
  all.insert(all.end(), options.begin(), options.end());
  Args command = {kProbe};
  command.insert(command.end(), probe_args.begin(), probe_args.end());
  return RunCommand(BwrapArgv(all, command), run);
}

Report ParseReport(std::string_view text) {
  Report report;
  std::istringstream in{std::string(text)};
  for (std::string line; std::getline(in, line);) {
    size_t sep = line.find(": ");
    if (sep == std::string::npos) {
      if (!line.empty() && line.back() == ':') report[line.substr(0, line.size() - 1)] = "";
      continue;
    }
    report[line.substr(0, sep)] = line.substr(sep + 2);
  }
  return report;
}

std::string Get(const Report& report, const std::string& key) {
  auto it = report.find(key);
  return it != report.end() ? it->second : "<missing " + key + ">";
}

std::vector<std::string> Words(std::string_view text) {
  std::vector<std::string> words;
  std::istringstream in{std::string(text)};
  for (std::string word; in >> word;) words.push_back(word);
  return words;
}

bool Contains(const std::vector<std::string>& words, std::string_view word) {
  return std::find(words.begin(), words.end(), word) != words.end();
}

bool IsRoot() { return geteuid() == 0; }

std::string HostNamespace(const std::string& type) {
  std::error_code ec;
  auto target = std::filesystem::read_symlink("/proc/self/ns/" + type, ec);
  return ec ? "unavailable" : target.string();
}

std::string HostStatus(const std::string& key) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(key + ":", 0) != 0) continue;
    size_t start = line.find_first_not_of(" \t", key.size() + 1);
    return start == std::string::npos ? "" : line.substr(start);
  }
  return "unavailable";
}

std::optional<std::string> SandboxUnavailableReason() {
  static const std::optional<std::string> reason = []() -> std::optional<std::string> {
    if (IsRoot()) return std::nullopt;
    // Try in a throwaway child: unshare(CLONE_NEWUSER) would change this process for good.
    pid_t pid = fork();
    if (pid == 0) _exit(unshare(CLONE_NEWUSER) == 0 ? 0 : errno);
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) {
      return "could not fork to test user namespaces";
    }
    if (WEXITSTATUS(status) == 0) return std::nullopt;
    return std::string("unprivileged user namespaces are unavailable: unshare(CLONE_NEWUSER): ") +
           std::strerror(WEXITSTATUS(status));
  }();
  return reason;
}

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string templ =
      std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/sbx-integ-XXXXXX";
  if (mkdtemp(templ.data()) == nullptr) std::abort();
  chmod(templ.c_str(), 0755);
  path_ = templ;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string TempDir::Sub(std::string_view name) const { return path_ + "/" + std::string(name); }

void WriteFile(const std::string& path, std::string_view content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
}

std::optional<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in.is_open()) return std::nullopt;
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

std::string ReadAll(int fd) {
  std::string data;
  char buf[4096];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    data.append(buf, n);
  }
  return data;
}

namespace {

// Binds `fd` to 127.0.0.1 with a kernel-chosen port and returns the port.
int BindLoopback(int fd) {
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

TcpListener::TcpListener()
    : fd_(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)),
      port_(BindLoopback(fd_.get())) {
  if (listen(fd_.get(), 8) != 0) std::abort();
}

std::optional<std::string> TcpListener::AcceptAndRead() {
  Fd conn(accept4(fd_.get(), nullptr, nullptr, SOCK_CLOEXEC));
  if (conn.get() < 0) return std::nullopt;
  return ReadAll(conn.get());  // the probe has closed its end: this ends at EOF
}

UdpReceiver::UdpReceiver()
    : fd_(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)), port_(BindLoopback(fd_.get())) {}

std::optional<std::string> UdpReceiver::Receive() {
  char buf[512];
  ssize_t n = recv(fd_.get(), buf, sizeof buf, MSG_DONTWAIT);
  if (n < 0) return std::nullopt;
  return std::string(buf, n);
}

std::vector<std::string> UdpReceiver::ReceiveUntilMarker(const std::string& marker) {
  Fd sender(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  to.sin_port = htons(static_cast<uint16_t>(port_));
  if (sendto(sender.get(), marker.data(), marker.size(), 0, reinterpret_cast<sockaddr*>(&to),
             sizeof to) != static_cast<ssize_t>(marker.size())) {
    std::abort();
  }
  std::vector<std::string> before;
  for (;;) {
    pollfd p{fd_.get(), POLLIN, 0};
    if (poll(&p, 1, 10000) != 1) std::abort();  // watchdog: the marker never came
    std::optional<std::string> datagram = Receive();
    if (!datagram) continue;
    if (*datagram == marker) return before;
    before.push_back(std::move(*datagram));
  }
}

}  // namespace sbx::integration
