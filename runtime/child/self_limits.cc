// The limits a `run` sandbox puts on itself (SelfLimits), for the child after clone.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/child_process.h"
#include "base/unique_fd.h"
#include "runtime/child/child_steps.h"
#include "runtime/child/mount_api.h"

namespace sbx::runtime::child {
namespace {

// The /proc/sys/user/ files are per user namespace: the kernel shows and changes the table
// of the writer's own user namespace, whichever procfs the path goes through, and allows
// the write to a holder of CAP_SYS_RESOURCE there. Counts are charged up the whole chain of
// user namespaces, so a maximum here bounds what the sandbox can take of its creator's.
int WriteSysctl(int sys_fd, const SysctlSetting& setting) {
  base::UniqueFd fd(::openat(sys_fd, setting.name.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) return errno;
  char text[24];
  FormatUnsigned(text, setting.value, 10);
  size_t len = std::strlen(text);
  return ::write(fd.get(), text, len) == static_cast<ssize_t>(len) ? 0 : errno;
}

}  // namespace

StepResult ApplySelfLimits(const SelfLimits& limits, int proc_fd) noexcept {
  if (!limits.sysctls.empty()) {
    base::UniqueFd sys(::openat(proc_fd, "sys", O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!sys) return {errno, Stage::kNone, 0};
    for (size_t i = 0; i < limits.sysctls.size(); ++i) {
      if (int err = WriteSysctl(sys.get(), limits.sysctls[i])) {
        return {err, Stage::kNone, static_cast<uint32_t>(i)};
      }
    }
  }
  for (size_t i = 0; i < limits.rlimits.size(); ++i) {
    if (int err = base::LowerRlimit(limits.rlimits[i].resource, limits.rlimits[i].value)) {
      return {err, Stage::kNone, static_cast<uint32_t>(limits.sysctls.size() + i)};
    }
  }
  return {};
}

}  // namespace sbx::runtime::child
