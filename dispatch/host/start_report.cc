#include "dispatch/host/start_report.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

#include <fmt/format.h>

#include "dispatch/sys/caller_stderr.h"
#include "relay/endpoint.h"

namespace sbx::dispatch {
namespace {

// The report is one short line; anything longer is not the supervisor's.
constexpr size_t kMaxReport = 64;

bool IsFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && !S_ISDIR(st.st_mode);
}

std::string DirName(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// The first "DIR/name" of the colon list `path` that is a file on the host ("" when none).
std::string FindOnHost(const std::string& name, const std::string& path) {
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    const std::string dir = path.substr(start, end - start);
    if (dir.starts_with('/')) {
      std::string candidate = dir;
      candidate += "/";
      candidate += name;
      if (IsFile(candidate)) return candidate;
    }
    start = end + 1;
  }
  return "";
}

}  // namespace

base::Result<std::unique_ptr<StartReport>> StartReport::Create(relay::EventLoop* loop,
                                                               const std::string& state_dir,
                                                               std::optional<uid_t> socket_owner) {
  std::unique_ptr<StartReport> report(new StartReport(loop));
  report->socket_path_ = state_dir + "/" + kReportSocketName;
  auto endpoint = relay::Endpoint::Unix(report->socket_path_);
  if (!endpoint) return endpoint.error();
  relay::ListenOptions options;
  options.backlog = 1;
  options.unix_owner = socket_owner;
  auto listener = endpoint->Listen(options);
  if (!listener) return listener.error();
  report->listener_ = std::move(*listener);
  return report;
}

StartReport::~StartReport() {
  if (channel_) loop_->UnwatchCallback(channel_.get());
  if (listener_) loop_->UnwatchCallback(listener_.get());
}

base::Status StartReport::Start() {
  return loop_->WatchCallback(listener_.get(), EPOLLIN, [this](uint32_t) { OnConnection(); });
}

void StartReport::OnConnection() {
  base::UniqueFd channel(
      ::accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
  if (!channel && (errno == EAGAIN || errno == EINTR || errno == ECONNABORTED)) return;
  // Anyone else's connection is dropped unread; the supervisor's own is still to come.
  if (channel && gate_ != nullptr) {
    if (std::string why = gate_->Check(channel.get()); !why.empty()) {
      if (!refusal_said_) SayToCaller("refused a start report channel: " + why);
      refusal_said_ = true;  // once: a flood of connections is not a flood of lines
      return;
    }
  }
  loop_->UnwatchCallback(listener_.get());
  listener_.reset();
  if (!channel) return;
  supervisor_reached_ = true;
  channel_ = std::move(channel);
  (void)loop_->WatchCallback(channel_.get(), EPOLLIN, [this](uint32_t) { OnData(); });
}

void StartReport::OnData() {
  char buf[kMaxReport];
  ssize_t n = ::recv(channel_.get(), buf, sizeof(buf), MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (n > 0) received_.append(buf, static_cast<size_t>(n));
  const size_t newline = received_.find('\n');
  if (newline == std::string::npos && n > 0 && received_.size() < kMaxReport) return;
  constexpr std::string_view kPrefix = "exec-failed ";
  if (newline != std::string::npos && received_.starts_with(kPrefix)) {
    int err = 0;
    const char* first = received_.data() + kPrefix.size();
    const char* last = received_.data() + newline;
    auto [ptr, ec] = std::from_chars(first, last, err);
    if (ec == std::errc() && ptr == last && err > 0) exec_errno_ = err;
  }
  Close();  // the supervisor waits for this before it exits
}

void StartReport::Settle() {
  if (!listener_ || supervisor_reached_) return;
  pollfd pending{.fd = listener_.get(), .events = POLLIN, .revents = 0};
  if (::poll(&pending, 1, 0) == 1 && (pending.revents & POLLIN) != 0) supervisor_reached_ = true;
}

void StartReport::Close() {
  loop_->UnwatchCallback(channel_.get());
  channel_.reset();
}

StartFailure DescribeStartFailure(int err, const std::string& name, const std::string& cwd,
                                  const std::string& sandbox_path, const std::string& host_path) {
  StartFailure failure;
  failure.missing = err == ENOENT || err == ENOTDIR;
  failure.exit_code = failure.missing ? 127 : 126;
  const bool has_slash = name.find('/') != std::string::npos;
  if (!failure.missing) {
    failure.message = fmt::format(
        "cannot run {}: {} (it is in the sandbox, but not executable there: its mode, or a "
        "mount without exec)",
        name, std::strerror(err));  // NOLINT(concurrency-mt-unsafe): one thread
    return failure;
  }
  if (has_slash) {
    std::string relative = name;
    while (relative.starts_with("./")) relative.erase(0, 2);
    const std::string absolute = name.starts_with('/') ? name : cwd + "/" + relative;
    failure.message = fmt::format("cannot run {}: no such file in the sandbox", name);
    if (IsFile(absolute)) {
      failure.message +=
          fmt::format("; the host has it, but its directory is not in the sandbox: add --ro {}",
                      DirName(absolute));
    }
    return failure;
  }
  failure.message = fmt::format("cannot run {}: command not found in the sandbox's PATH ({})", name,
                                sandbox_path);
  const std::string found = FindOnHost(name, host_path);
  const bool on_sandbox_path =
      (":" + sandbox_path + ":").find(":" + DirName(found) + ":") != std::string::npos;
  if (!found.empty() && !on_sandbox_path) {
    failure.message += fmt::format("; the host has {}: add --ro {} and run it by that path", found,
                                   DirName(found));
  }
  return failure;
}

}  // namespace sbx::dispatch
