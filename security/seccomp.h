// Seccomp: the parent compiles policies to classic BPF with libseccomp; the child only
// installs raw programs, the same byte format bwrap's --seccomp / --add-seccomp-fd take
// (an array of struct sock_filter, 8 bytes each, e.g. from seccomp_export_bpf).
//
// The default agent policy (CompileDefaultSeccompPolicy) allows everything except named
// groups of system calls that have been used to escape or attack sandboxes (docs/seccomp.md
// says why each is there):
//   tty-inject  ioctl TIOCSTI / TIOCLINUX (CVE-2017-5226); the ioctl cmd is compared on its
//               low 32 bits only, as the kernel reads it, so high bits set in the 64-bit
//               argument do not slip past the filter (CVE-2019-10063)
//   tty-ldisc   ioctl TIOCSETD (line disciplines: n_hdlc, n_gsm use-after-frees)
//   io_uring    io_uring_setup/enter/register, ENOSYS so runtimes fall back to plain I/O
//               (io_uring operations are invisible to seccomp)
//   keyring     keyctl, add_key, request_key (kernel keyrings are not namespaced)
//   bpf, perf, userfaultfd, kexec, modules   bpf; perf_event_open; userfaultfd;
//               kexec_load/kexec_file_load; init/finit/delete_module
//   socket-families  socket/socketpair unless the family is AF_UNIX, AF_INET, AF_INET6,
//               AF_NETLINK (or AF_VSOCK, left to its own group): EAFNOSUPPORT, what a kernel
//               without the family says. An allowlist, so families added later stay out.
//   netlink     socket(AF_NETLINK) with a protocol other than NETLINK_ROUTE:
//               EPROTONOSUPPORT, what the kernel says for a netlink protocol it lacks
//   vsock       socket(AF_VSOCK): vsock ignores network namespaces (EAFNOSUPPORT)
//   ptrace      ptrace, process_vm_readv/writev, pidfd_getfd, process_madvise
//   personality personality unless PER_LINUX, PER_LINUX32, either | ADDR_NO_RANDOMIZE, or
//               the 0xffffffff query (an allowlist of values)
//   nested-userns  unshare/clone with CLONE_NEWUSER (EPERM); clone3 ENOSYS, since its
//               flags are out of seccomp's reach and libc then falls back to clone
//   syslog      syslog (the kernel log: addresses, the host's hardware and other tenants)
//   obsolete    uselib, ustat, sysfs, _sysctl, modify_ldt (ENOSYS)
// Blocked calls fail with EPERM unless said otherwise. Families, protocols, personalities
// and ioctl cmds are compared on their low 32 bits, as the kernel reads them (the netlink
// protocol on all 64: high garbage is refused). Anything that is not native x86_64
// (i386, other architectures, and the x32 ABI, syscall numbers with bit 0x40000000 set)
// kills the process: libseccomp sends both to its "bad arch" action, set to KILL_PROCESS.
// A caller can relax whole groups by name.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"

namespace sbx::security {

// One classic-BPF program: raw struct sock_filter array.
using BpfProgram = std::vector<uint8_t>;

// ---- Child side ----------------------------------------------------------------------------
// Installs `programs` in order with prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER). The kernel
// runs the most recently installed first, so every program but the last must allow prctl.
// Needs no_new_privs (set by the caller beforehand) or CAP_SYS_ADMIN. Returns 0 or an
// errno (EINVAL for an empty program or a length that is not a multiple of 8, checked for
// all programs before the first is installed). Single-threaded child; noexcept; the
// programs are passed to the kernel in place (no copy here). Irreversible.
int LoadSeccompPrograms(std::span<const BpfProgram> programs) noexcept;

// ---- Parent side ---------------------------------------------------------------------------

// Checks what LoadSeccompPrograms checks, with a message: non-empty, length a multiple of 8
// (bwrap: "Invalid seccomp data, must be multiple of 8"), at most 4096 instructions.
base::Status ValidateSeccompProgram(std::span<const uint8_t> program);

struct SeccompGroupInfo {
  std::string_view name;
  std::string_view summary;
};
// The default policy's groups, in the order they are described.
std::span<const SeccompGroupInfo> SeccompGroups();

struct SeccompPolicyOptions {
  // Group names to allow (see SeccompGroups); an unknown name is an Error.
  std::vector<std::string> relaxed_groups;
};

// Compiles the default agent policy for native x86_64 to BPF (via a memfd).
base::Result<BpfProgram> CompileDefaultSeccompPolicy(const SeccompPolicyOptions& options = {});

// A few human-readable lines for the printed plan, one per group plus the arch rule.
base::Result<std::vector<std::string>> DescribeSeccompPolicy(
    const SeccompPolicyOptions& options = {});

}  // namespace sbx::security
