// Probes for the process and file system calls the native backend makes outside any
// namespace: openat2, clone3 with CLONE_PIDFD, pidfd_open, and seccomp filters.
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/syscalls.h"
#include "base/unique_fd.h"
#include "cli/doctor/doctor_probes.h"

namespace sbx::cli::doctor {

namespace {

// glibc 2.36 does not define P_PIDFD (linux/wait.h does, but clashes with <sys/wait.h>).
constexpr auto kPPidfd = static_cast<idtype_t>(3);

Check Openat2Check() {
  base::UniqueFd root(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  open_how how{};
  how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS;
  base::UniqueFd usr(base::OpenAt2(root.get(), "usr", &how));
  if (usr) return {"openat2", CheckStatus::kOk, "RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS works", ""};
  return {"openat2", CheckStatus::kFail, fmt::format("openat2: {}", ErrnoText(errno)),
          "kernel 5.6 or newer (or allow openat2 in the container's seccomp profile)"};
}

Check Clone3Check() {
  int pidfd = -1;
  base::Clone3Args args;
  args.flags = CLONE_PIDFD;
  args.pidfd = reinterpret_cast<uint64_t>(&pidfd);
  args.exit_signal = SIGCHLD;
  const pid_t pid = base::Clone3(&args);
  if (pid == 0) ::_exit(0);
  const std::string fix =
      "kernel 5.4 or newer (or allow clone3 in the container's seccomp profile)";
  if (pid < 0 && errno == ENOSYS) {
    // Container seccomp profiles (Docker's default among them) answer clone3 with ENOSYS
    // to send callers back to clone; the runtime does so too, then takes a pidfd_open.
    return {"clone3-pidfd", CheckStatus::kInfo,
            "clone3: ENOSYS (a seccomp filter's answer, as Docker's default profile gives); "
            "run falls back to clone + pidfd_open",
            ""};
  }
  if (pid < 0) return {"clone3-pidfd", CheckStatus::kFail, "clone3: " + ErrnoText(errno), fix};
  base::UniqueFd owned(pidfd);
  // Reaping through the pidfd (P_PIDFD, 5.4) is how the monitor waits for the sandbox.
  siginfo_t info{};
  if (::waitid(kPPidfd, static_cast<id_t>(pidfd), &info, WEXITED) == 0) {
    return {"clone3-pidfd", CheckStatus::kOk, "clone3(CLONE_PIDFD) + waitid(P_PIDFD) work", ""};
  }
  const int err = errno;
  ::waitpid(pid, nullptr, 0);
  return {"clone3-pidfd", CheckStatus::kFail, "waitid(P_PIDFD): " + ErrnoText(err), fix};
}

Check PidfdOpenCheck() {
  base::UniqueFd pidfd(base::PidfdOpen(::getpid()));
  const std::string fix =
      "kernel 5.3 or newer (or allow pidfd_* in the container's seccomp profile)";
  if (!pidfd) return {"pidfd", CheckStatus::kFail, "pidfd_open: " + ErrnoText(errno), fix};
  if (base::PidfdSendSignal(pidfd.get(), 0) != 0) {
    return {"pidfd", CheckStatus::kFail, "pidfd_send_signal: " + ErrnoText(errno), fix};
  }
  return {"pidfd", CheckStatus::kOk, "pidfd_open + pidfd_send_signal work", ""};
}

void SeccompProbe(int32_t* results, int /*count*/, const void* /*arg*/) noexcept {
  results[0] = 0;
  results[1] = 0;
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    results[0] = errno;
    return;
  }
  sock_filter allow{static_cast<uint16_t>(BPF_RET | BPF_K), 0, 0, SECCOMP_RET_ALLOW};
  sock_fprog prog{1, &allow};
  if (::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) results[1] = errno;
}

}  // namespace

std::vector<Check> SyscallChecks() { return {Openat2Check(), Clone3Check(), PidfdOpenCheck()}; }

Check SeccompCheck() {
  // Mode 2 here means the doctor itself already runs under a filter (a container, or an
  // agent's sandbox): ours stacks on top, but what the outer one denies stays denied.
  const int mode = ::prctl(PR_GET_SECCOMP, 0, 0, 0, 0);
  const std::string where = mode == 2 ? " (this process already runs under a seccomp filter)" : "";
  int32_t r[2] = {0, 0};
  if (!RunProbeChild(SeccompProbe, nullptr, r, 2)) {
    return {"seccomp", CheckStatus::kFail, "the probe child died before reporting" + where,
            "a kernel with CONFIG_SECCOMP_FILTER"};
  }
  if (r[0] != 0) {
    return {"seccomp", CheckStatus::kFail, "PR_SET_NO_NEW_PRIVS: " + ErrnoText(r[0]) + where,
            "a kernel 3.5 or newer"};
  }
  if (r[1] != 0) {
    return {"seccomp", CheckStatus::kFail, "PR_SET_SECCOMP: " + ErrnoText(r[1]) + where,
            "a kernel with CONFIG_SECCOMP_FILTER=y"};
  }
  return {"seccomp", CheckStatus::kOk, "no_new_privs + a filter install" + where, ""};
}

}  // namespace sbx::cli::doctor
