// Parent side of seccomp: the default agent policy as data, compiled with libseccomp.
#include <sched.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "base/c_handle.h"
#include "base/unique_fd.h"
#include "security/seccomp.h"

namespace sbx::security {
namespace {

// One blocked call; with an argument filter it only matches when the argument's low 32 bits
// equal `arg_value` (the kernel reads ioctl cmds and socket families as 32-bit ints, so a
// 64-bit compare could be bypassed by setting high bits: CVE-2019-10063).
struct Rule {
  const char* syscall;
  int arg_index = -1;  // -1: any arguments
  uint32_t arg_value = 0;
  const char* arg_label = nullptr;
  uint32_t arg_mask = 0xffffffffU;  // bits of the argument compared with arg_value
  int err = 0;                      // errno for this rule; 0: the group's
};

struct Group {
  SeccompGroupInfo info;
  int err;  // errno returned by blocked calls
  std::span<const Rule> rules;
};

constexpr Rule kTtyInject[] = {{"ioctl", 1, TIOCSTI, "TIOCSTI"},
                               {"ioctl", 1, TIOCLINUX, "TIOCLINUX"}};
constexpr Rule kIoUring[] = {{"io_uring_setup"}, {"io_uring_enter"}, {"io_uring_register"}};
constexpr Rule kKeyring[] = {{"keyctl"}, {"add_key"}, {"request_key"}};
constexpr Rule kBpf[] = {{"bpf"}};
constexpr Rule kPerf[] = {{"perf_event_open"}};
constexpr Rule kUserfaultfd[] = {{"userfaultfd"}};
constexpr Rule kKexec[] = {{"kexec_load"}, {"kexec_file_load"}};
constexpr Rule kModules[] = {{"init_module"}, {"finit_module"}, {"delete_module"}};
constexpr Rule kVsock[] = {{"socket", 0, AF_VSOCK, "AF_VSOCK"}};
// A nested user namespace gives its creator every capability over the namespaced kernel
// interfaces (nf_tables, mounts of many file systems, ...), the usual way in for local
// privilege escalations. clone3 passes its flags in memory, which seccomp cannot read: it
// gets ENOSYS, and libc falls back to clone, whose flags are an argument.
constexpr Rule kNestedUserns[] = {{"unshare", 0, CLONE_NEWUSER, "CLONE_NEWUSER", CLONE_NEWUSER},
                                  {"clone", 0, CLONE_NEWUSER, "CLONE_NEWUSER", CLONE_NEWUSER},
                                  {"clone3", -1, 0, nullptr, 0xffffffffU, ENOSYS}};
constexpr Rule kPtrace[] = {{"ptrace"}, {"process_vm_readv"}, {"process_vm_writev"}};

constexpr Group kGroups[] = {
    {{"tty-inject", "terminal input injection through the controlling tty"}, EPERM, kTtyInject},
    {{"io_uring", "io_uring, whose operations seccomp cannot see"}, ENOSYS, kIoUring},
    {{"keyring", "kernel keyrings, which are not namespaced"}, EPERM, kKeyring},
    {{"bpf", "eBPF programs and maps"}, EPERM, kBpf},
    {{"perf", "performance counters"}, EPERM, kPerf},
    {{"userfaultfd", "userfaultfd, a tool for kernel race exploits"}, EPERM, kUserfaultfd},
    {{"kexec", "loading a new kernel"}, EPERM, kKexec},
    {{"modules", "loading and unloading kernel modules"}, EPERM, kModules},
    {{"vsock", "vsock sockets, which ignore network namespaces"}, EAFNOSUPPORT, kVsock},
    {{"nested-userns", "new user namespaces (--allow-nested-userns relaxes it)"},
     EPERM,
     kNestedUserns},
    {{"ptrace", "tracing and reading the memory of other processes"}, EPERM, kPtrace},
};
constexpr size_t kGroupCount = sizeof(kGroups) / sizeof(kGroups[0]);

using SeccompCtx = base::CHandle<void, seccomp_release>;

// relaxed[i] is true when group i is allowed.
base::Result<std::vector<bool>> RelaxedGroups(const SeccompPolicyOptions& options) {
  std::vector<bool> relaxed(kGroupCount, false);
  for (const std::string& name : options.relaxed_groups) {
    size_t i = 0;
    while (i < kGroupCount && kGroups[i].info.name != name) ++i;
    if (i == kGroupCount) {
      std::string message = "unknown seccomp group \"" + name + "\" (known: ";
      for (size_t j = 0; j < kGroupCount; ++j) {
        if (j != 0) message += ", ";
        message += kGroups[j].info.name;
      }
      message += ")";
      return base::Error::Message(std::move(message));
    }
    relaxed[i] = true;
  }
  return relaxed;
}

base::Status AddRule(scmp_filter_ctx ctx, const Rule& rule, int group_err) {
  const int err = rule.err != 0 ? rule.err : group_err;
  const int nr = seccomp_syscall_resolve_name(rule.syscall);
  if (nr == __NR_SCMP_ERROR) {
    return base::Error::Message(std::string("seccomp: unknown system call ") + rule.syscall);
  }
  // _exact: fail rather than let libseccomp rewrite the rule for another ABI.
  int rc = 0;
  if (rule.arg_index < 0) {
    rc = seccomp_rule_add_exact_array(ctx, SCMP_ACT_ERRNO(err), nr, 0, nullptr);
  } else {
    const scmp_arg_cmp cmp{.arg = static_cast<unsigned int>(rule.arg_index),
                           .op = SCMP_CMP_MASKED_EQ,
                           .datum_a = rule.arg_mask,
                           .datum_b = rule.arg_value};
    rc = seccomp_rule_add_exact_array(ctx, SCMP_ACT_ERRNO(err), nr, 1, &cmp);
  }
  if (rc < 0) return base::Error(-rc, "seccomp: can't add a rule for", rule.syscall);
  return {};
}

base::Result<BpfProgram> ExportBpf(scmp_filter_ctx ctx) {
  base::UniqueFd fd(memfd_create("sbx-seccomp-bpf", MFD_CLOEXEC));
  if (!fd) return base::ErrnoError("Can't create memfd for", "seccomp BPF");
  if (int rc = seccomp_export_bpf(ctx, fd.get()); rc < 0) {
    return base::Error(-rc, "seccomp_export_bpf");
  }
  struct stat st {};
  if (fstat(fd.get(), &st) != 0) return base::ErrnoError("Can't stat", "seccomp BPF memfd");
  BpfProgram program(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < program.size()) {
    const ssize_t n =
        pread(fd.get(), program.data() + done, program.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return base::ErrnoError("Can't read", "seccomp BPF memfd");
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  program.resize(done);
  if (auto ok = ValidateSeccompProgram(program); !ok) return ok.error();
  return program;
}

// The rules that return the group's errno, or with `own_errno` those with their own.
std::string DescribeRules(const Group& group, bool own_errno = false) {
  std::string out;
  for (const Rule& rule : group.rules) {
    if ((rule.err != 0) != own_errno) continue;
    if (!out.empty()) out += ", ";
    out += rule.syscall;
    if (rule.arg_label != nullptr) out += std::string("(") + rule.arg_label + ")";
  }
  return out;
}

}  // namespace

std::span<const SeccompGroupInfo> SeccompGroups() {
  static const std::vector<SeccompGroupInfo> infos = [] {
    std::vector<SeccompGroupInfo> out;
    for (const Group& group : kGroups) out.push_back(group.info);
    return out;
  }();
  return infos;
}

base::Result<BpfProgram> CompileDefaultSeccompPolicy(const SeccompPolicyOptions& options) {
  auto relaxed = RelaxedGroups(options);
  if (!relaxed) return relaxed.error();
  // The x32 and foreign-arch rule below relies on libseccomp's x86_64 code generation.
  if (seccomp_arch_native() != SCMP_ARCH_X86_64) {
    return base::Error::Message("the default seccomp policy supports x86_64 hosts only");
  }
  SeccompCtx ctx(seccomp_init(SCMP_ACT_ALLOW));
  if (!ctx) return base::Error(ENOMEM, "seccomp_init");
  // libseccomp jumps to the bad-arch action both for another arch and for x32 syscall
  // numbers (bit 0x40000000) on x86_64. Its default is KILL (the thread); kill the process.
  if (int rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
      rc < 0) {
    return base::Error(-rc, "seccomp: can't set the bad-arch action");
  }
  for (size_t i = 0; i < kGroupCount; ++i) {
    if ((*relaxed)[i]) continue;
    for (const Rule& rule : kGroups[i].rules) {
      if (auto ok = AddRule(ctx.get(), rule, kGroups[i].err); !ok) return ok.error();
    }
  }
  return ExportBpf(ctx.get());
}

base::Result<std::vector<std::string>> DescribeSeccompPolicy(const SeccompPolicyOptions& options) {
  auto relaxed = RelaxedGroups(options);
  if (!relaxed) return relaxed.error();
  std::vector<std::string> lines;
  lines.emplace_back(
      "seccomp: default allow; i386, other architectures and the x32 ABI kill the process");
  for (size_t i = 0; i < kGroupCount; ++i) {
    const Group& group = kGroups[i];
    std::string line = "seccomp: " + std::string(group.info.name) + ": ";
    if ((*relaxed)[i]) {
      line += "relaxed, allowed: " + DescribeRules(group);
    } else {
      const char* err_name = strerrorname_np(group.err);
      line += DescribeRules(group) + " -> " + (err_name != nullptr ? err_name : "error");
      if (group.rules[0].arg_label != nullptr) line += " (argument compared on 32 bits)";
      for (const Rule& rule : group.rules) {
        if (rule.err == 0) continue;
        const char* own = strerrorname_np(rule.err);
        line += std::string("; ") + rule.syscall + " -> " + (own != nullptr ? own : "error");
      }
    }
    lines.push_back(std::move(line));
  }
  return lines;
}

}  // namespace sbx::security
