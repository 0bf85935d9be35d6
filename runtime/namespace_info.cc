#include "runtime/namespace_info.h"

#include <sched.h>
#include <sys/stat.h>

#include <unistd.h>
#include <cerrno>

#include <fmt/format.h>

namespace sbx::runtime {
namespace {

struct NamespaceName {
  const char* name;
  uint64_t flag;  // 0: always reported
};
constexpr NamespaceName kNamespaces[] = {
    {"cgroup", CLONE_NEWCGROUP}, {"ipc", CLONE_NEWIPC}, {"mnt", 0},
    {"net", CLONE_NEWNET},       {"pid", CLONE_NEWPID}, {"uts", CLONE_NEWUTS}};

int WriteAll(int fd, const std::string& text) {
  for (size_t off = 0; off < text.size();) {
    ssize_t n = ::write(fd, text.data() + off, text.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    off += static_cast<size_t>(n);
  }
  return 0;
}

}  // namespace

base::Result<NamespaceIds> ReadNamespaceIds(const Plan& plan, pid_t pid) {
  NamespaceIds ids;
  ids.child_pid = pid;
  for (const auto& ns : kNamespaces) {
    if (ns.flag != 0 && (plan.clone_flags & ns.flag) == 0) continue;
    std::string path = fmt::format("/proc/{}/ns/{}", pid, ns.name);
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return base::ErrnoError("Can't stat", path);
    ids.namespaces.emplace_back(ns.name, st.st_ino);
  }
  return ids;
}

std::string RenderInfoJson(const NamespaceIds& ids) {
  std::string out = fmt::format("{{\n    \"child-pid\": {}", ids.child_pid);
  for (const auto& [name, inode] : ids.namespaces) {
    out += fmt::format(",\n    \"{}-namespace\": {}", name, inode);
  }
  out += "\n}\n";
  return out;
}

std::string RenderStatusLine(const NamespaceIds& ids) {
  std::string out = fmt::format("{{ \"child-pid\": {}", ids.child_pid);
  for (const auto& [name, inode] : ids.namespaces) {
    out += fmt::format(", \"{}-namespace\": {}", name, inode);
  }
  out += " }\n";
  return out;
}

std::string RenderExitCodeLine(int exit_code) {
  return fmt::format("{{ \"exit-code\": {} }}\n", exit_code);
}

base::Status PublishNamespaceIds(const Plan& plan, const NamespaceIds& ids) {
  if (plan.info_fd) {
    if (int err = WriteAll(*plan.info_fd, RenderInfoJson(ids))) {
      return base::Error(err, "Write to info_fd");
    }
    ::close(*plan.info_fd);
  }
  if (plan.json_status_fd) {
    if (int err = WriteAll(*plan.json_status_fd, RenderStatusLine(ids))) {
      return base::Error(err, "Write to json_status_fd");
    }
  }
  return {};
}

void PublishExitCode(const Plan& plan, int exit_code) {
  if (!plan.json_status_fd) return;
  (void)WriteAll(*plan.json_status_fd, RenderExitCodeLine(exit_code));
  ::close(*plan.json_status_fd);
}

}  // namespace sbx::runtime
