#include "tests/netns/ns_child.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>

#include "base/unique_fd.h"

namespace sbx::netns::testing {
namespace {

constexpr std::string_view kSkipPrefix = "SKIP:";
constexpr std::string_view kNotePrefix = "NOTE:";

std::string ErrnoText(const std::string& what) { return what + ": " + std::strerror(errno); }

bool WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

std::string ReadAll(int fd) {
  std::string out;
  char buf[512];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return out;
    out.append(buf, static_cast<size_t>(n));
  }
}

std::string WriteFile(const char* path, const std::string& text) {
  base::UniqueFd fd(::open(path, O_WRONLY | O_CLOEXEC));
  if (!fd) return ErrnoText(std::string("open ") + path);
  if (!WriteAll(fd.get(), text)) return ErrnoText(std::string("write ") + path);
  return {};
}

}  // namespace

std::string SkipReason(const std::string& reason) { return std::string(kSkipPrefix) + reason; }
std::string Note(const std::string& note) { return std::string(kNotePrefix) + note; }

ChildOutcome RunInChild(const std::function<std::string()>& body) {
  auto pipe = base::MakePipe();
  if (!pipe) return {ChildOutcome::Kind::kFailed, pipe.error().Render()};
  const pid_t pid = ::fork();
  if (pid < 0) return {ChildOutcome::Kind::kFailed, ErrnoText("fork")};
  if (pid == 0) {
    pipe->read_end.reset();
    const std::string result = body();
    // "R" marks a complete report, so a crash before it is told apart from a pass.
    const bool sent = WriteAll(pipe->write_end.get(), "R" + result);
    ::_exit(sent ? 0 : 1);
  }
  pipe->write_end.reset();
  std::string report = ReadAll(pipe->read_end.get());
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || report.empty() || report[0] != 'R') {
    return {ChildOutcome::Kind::kFailed,
            "child died (status " + std::to_string(status) + "), report: " + report};
  }
  std::string_view text = std::string_view(report).substr(1);
  if (text.starts_with(kSkipPrefix)) {
    return {ChildOutcome::Kind::kSkipped, std::string(text.substr(kSkipPrefix.size()))};
  }
  if (text.starts_with(kNotePrefix)) {
    return {ChildOutcome::Kind::kPassed, std::string(text.substr(kNotePrefix.size()))};
  }
  if (text.empty()) return {ChildOutcome::Kind::kPassed, {}};
  return {ChildOutcome::Kind::kFailed, std::string(text)};
}

std::string EnterUserAndNetNs(bool write_id_map) {
  const uid_t uid = ::geteuid();
  const gid_t gid = ::getegid();
  if (::unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0) {
    return SkipReason(
        ErrnoText("user namespaces unavailable: unshare(CLONE_NEWUSER|CLONE_NEWNET)"));
  }
  if (!write_id_map) return {};
  if (auto err = WriteFile("/proc/self/setgroups", "deny"); !err.empty()) return err;
  if (auto err = WriteFile("/proc/self/gid_map", "0 " + std::to_string(gid) + " 1"); !err.empty()) {
    return err;
  }
  return WriteFile("/proc/self/uid_map", "0 " + std::to_string(uid) + " 1");
}

std::string EnterNestedUserNs() {
  if (::unshare(CLONE_NEWUSER) != 0) {
    return SkipReason(ErrnoText("nested user namespaces unavailable: unshare(CLONE_NEWUSER)"));
  }
  return {};
}

}  // namespace sbx::netns::testing
