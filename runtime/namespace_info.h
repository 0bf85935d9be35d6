// The --info-fd and --json-status-fd documents, written by the monitor exactly as bwrap
// writes them (docs/bwrap-behaviour.md).
#pragma once

#include <sys/types.h>

#include <string>

#include "base/error.h"
#include "runtime/plan.h"

namespace sbx::runtime {

struct NamespaceIds {
  pid_t child_pid = 0;
  // name ("cgroup", "ipc", "mnt", "net", "pid", "uts") and inode, in bwrap's order.
  std::vector<std::pair<std::string, uint64_t>> namespaces;
};

// Reads /proc/PID/ns/* for the namespaces the plan creates (mnt always).
base::Result<NamespaceIds> ReadNamespaceIds(const Plan& plan, pid_t pid);

// Pretty-printed for --info-fd; one line for --json-status-fd.
std::string RenderInfoJson(const NamespaceIds& ids);
std::string RenderStatusLine(const NamespaceIds& ids);
std::string RenderExitCodeLine(int exit_code);

// Writes and closes --info-fd, and writes the first --json-status-fd line.
base::Status PublishNamespaceIds(const Plan& plan, const NamespaceIds& ids);
// Writes the exit-code line to --json-status-fd and closes it.
void PublishExitCode(const Plan& plan, int exit_code);

}  // namespace sbx::runtime
