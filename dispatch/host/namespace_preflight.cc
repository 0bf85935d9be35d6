#include "dispatch/host/namespace_preflight.h"

#include <sched.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#include <fmt/format.h>

#include "base/child_process.h"

namespace sbx::dispatch {

namespace {

// The child's report names the step that failed: PreflightStep's value.
[[noreturn]] void PreflightChild(const base::ChildReport& report) noexcept {
  // MS_SLAVE first so the test mounts stay in this namespace. An LSM that strips the new
  // namespace of its capabilities refuses the tmpfs; masked /proc paths (a container
  // runtime's over-mounts) make the kernel refuse a fresh /proc.
  if (::mount(nullptr, "/", nullptr, MS_SLAVE | MS_REC, nullptr) != 0 ||
      ::mount("tmpfs", "/tmp", "tmpfs", 0, nullptr) != 0) {
    report.Fail(static_cast<uint32_t>(PreflightStep::kMount), errno);
  }
  if (::mount("proc", "/tmp", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
    report.Fail(static_cast<uint32_t>(PreflightStep::kProc), errno);
  }
  ::_exit(0);
}

}  // namespace

std::string NamespaceRefusedMessage(PreflightStep step, int err) {
  const char* what = step == PreflightStep::kCreate  ? "create the sandbox's namespaces"
                     : step == PreflightStep::kMount ? "mount in the sandbox's namespaces"
                                                     : "mount a fresh /proc for the sandbox";
  return fmt::format(
      "can't {} ({}): run `ateam-sandbox doctor` for what blocks it and how to fix it", what,
      std::strerror(err));  // NOLINT(concurrency-mt-unsafe): one thread sets up
}

base::Status CheckNamespacesAllowed() {
  auto report = base::ChildReport::Open();
  if (!report) return report.error();
  // clone3, else plain clone where container seccomp profiles answer clone3 with ENOSYS,
  // as the launcher does. The child makes only raw system calls.
  const pid_t pid = base::CloneProcess(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID, nullptr);
  if (pid < 0) return base::Error::Message(NamespaceRefusedMessage(PreflightStep::kCreate, errno));
  if (pid == 0) {
    report->CloseReadEnd();
    PreflightChild(*report);
  }
  report->CloseWriteEnd();
  auto failure = report->Read();
  while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  if (!failure) return failure.error();
  if (!*failure) return {};
  return base::Error::Message(
      NamespaceRefusedMessage(static_cast<PreflightStep>((*failure)->step), (*failure)->err));
}

}  // namespace sbx::dispatch
