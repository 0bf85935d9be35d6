// Parent side of seccomp: the default agent policy as data, compiled with libseccomp.
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <string>
#include <utility>

#include "base/c_handle.h"
#include "base/unique_fd.h"
#include "security/seccomp.h"

namespace sbx::security {
namespace {

// A comparison of one argument: by default its low 32 bits must equal `value` (the kernel
// reads ioctl cmds, socket families and protocols as 32-bit ints, so a 64-bit compare could
// be bypassed by setting high bits: CVE-2019-10063); with `not_equal`, all 64 bits must
// differ from it (high garbage then counts as different, which only ever blocks more).
struct ArgCmp {
  int index = -1;  // -1: no comparison
  uint32_t value = 0;
  bool not_equal = false;
  uint32_t mask = 0xffffffffU;  // the bits compared (equality only), e.g. one clone flag
};

// One blocked call, with up to two argument comparisons that must all hold (libseccomp
// allows one comparison per argument in a rule).
struct Rule {
  const char* syscall;
  ArgCmp first{};
  ArgCmp second{};
  const char* label = nullptr;  // the argument condition, for the description
  int err = 0;                  // errno for this rule; 0: the group's
};

// An argument allowlist: `syscall` is refused unless the low 32 bits of argument
// `arg_index` are one of `allowed`. libseccomp cannot say this in a default-allow filter
// (no ALLOW rule beside an ALLOW default, one comparison per argument), so allowlists are
// compiled by hand into a prefix that runs before libseccomp's program (AllowlistPrefix).
struct Allowlist {
  const char* syscall;
  int arg_index;
  std::span<const uint32_t> allowed;
  const char* label;  // the allowed values, for the description
};

struct Group {
  SeccompGroupInfo info;
  int err;  // errno returned by blocked calls
  std::span<const Rule> rules;
  std::span<const Allowlist> allowlists = {};
};

constexpr Rule kTtyInject[] = {{"ioctl", {1, TIOCSTI}, {}, "TIOCSTI"},
                               {"ioctl", {1, TIOCLINUX}, {}, "TIOCLINUX"}};
// Line disciplines are kernel code reached from any tty the agent opens (its own ptys);
// n_hdlc and n_gsm have had use-after-free bugs (CVE-2017-2636, CVE-2023-6546).
constexpr Rule kTtyLdisc[] = {{"ioctl", {1, TIOCSETD}, {}, "TIOCSETD"}};
constexpr Rule kIoUring[] = {{"io_uring_setup"}, {"io_uring_enter"}, {"io_uring_register"}};
constexpr Rule kKeyring[] = {{"keyctl"}, {"add_key"}, {"request_key"}};
constexpr Rule kBpf[] = {{"bpf"}};
constexpr Rule kPerf[] = {{"perf_event_open"}};
constexpr Rule kUserfaultfd[] = {{"userfaultfd"}};
constexpr Rule kKexec[] = {{"kexec_load"}, {"kexec_file_load"}};
constexpr Rule kModules[] = {{"init_module"}, {"finit_module"}, {"delete_module"}};
// AF_VSOCK passes the family allowlist so that relaxing "vsock" alone is enough to get it.
constexpr uint32_t kSocketFamilies[] = {AF_UNIX, AF_INET, AF_INET6, AF_NETLINK, AF_VSOCK};
constexpr Allowlist kSocketAllowlists[] = {
    {"socket", 0, kSocketFamilies, "AF_UNIX, AF_INET, AF_INET6, AF_NETLINK, AF_VSOCK"},
    {"socketpair", 0, kSocketFamilies, "AF_UNIX, AF_INET, AF_INET6, AF_NETLINK, AF_VSOCK"}};
constexpr Rule kNetlink[] = {{"socket",
                              {0, AF_NETLINK},
                              {2, 0 /* NETLINK_ROUTE */, true},
                              "AF_NETLINK, protocol other than NETLINK_ROUTE"}};
constexpr Rule kVsock[] = {{"socket", {0, AF_VSOCK}, {}, "AF_VSOCK"}};
// A nested user namespace gives its creator every capability over the namespaced kernel
// interfaces (nf_tables, mounts of many file systems, ...), the usual way in for local
// privilege escalations. clone3 passes its flags in memory, which seccomp cannot read: it
// gets ENOSYS, and libc falls back to clone, whose flags are an argument.
constexpr Rule kNestedUserns[] = {
    {"unshare", {0, CLONE_NEWUSER, false, CLONE_NEWUSER}, {}, "CLONE_NEWUSER"},
    {"clone", {0, CLONE_NEWUSER, false, CLONE_NEWUSER}, {}, "CLONE_NEWUSER"},
    {"clone3", {}, {}, nullptr, ENOSYS}};
constexpr Rule kPtrace[] = {
    {"ptrace"}, {"process_vm_readv"}, {"process_vm_writev"}, {"pidfd_getfd"}, {"process_madvise"}};
// personality(2) values in use: the 0xffffffff query (sanitizers, gdb, setarch), PER_LINUX,
// PER_LINUX32 (linux32/setarch i686) and ADDR_NO_RANDOMIZE with either (setarch -R, gdb,
// ThreadSanitizer re-executing itself). ADDR_NO_RANDOMIZE only weakens the layout of the
// agent's own processes. Refused: READ_IMPLIES_EXEC, MMAP_PAGE_ZERO, ADDR_COMPAT_LAYOUT, the
// address limits, UNAME26 and other execution domains, old exploit aids.
constexpr uint32_t kNoRandomize = ADDR_NO_RANDOMIZE;
constexpr uint32_t kPersonalities[] = {PER_LINUX, PER_LINUX32, PER_LINUX | kNoRandomize,
                                       PER_LINUX32 | kNoRandomize, 0xffffffffU};
constexpr Allowlist kPersonalityAllowlists[] = {
    {"personality", 0, kPersonalities,
     "PER_LINUX, PER_LINUX32, either with ADDR_NO_RANDOMIZE, 0xffffffff"}};
constexpr Rule kSyslog[] = {{"syslog"}};
constexpr Rule kObsolete[] = {{"uselib"}, {"ustat"}, {"sysfs"}, {"_sysctl"}, {"modify_ldt"}};

constexpr Group kGroups[] = {
    {{"tty-inject", "terminal input injection through the controlling tty"}, EPERM, kTtyInject},
    {{"tty-ldisc", "changing a tty's line discipline"}, EPERM, kTtyLdisc},
    {{"io_uring", "io_uring, whose operations seccomp cannot see"}, ENOSYS, kIoUring},
    {{"keyring", "kernel keyrings, which are not namespaced"}, EPERM, kKeyring},
    {{"bpf", "eBPF programs and maps"}, EPERM, kBpf},
    {{"perf", "performance counters"}, EPERM, kPerf},
    {{"userfaultfd", "userfaultfd, a tool for kernel race exploits"}, EPERM, kUserfaultfd},
    {{"kexec", "loading a new kernel"}, EPERM, kKexec},
    {{"modules", "loading and unloading kernel modules"}, EPERM, kModules},
    {{"socket-families", "socket families other than unix, inet, inet6 and netlink"},
     EAFNOSUPPORT,
     {},
     kSocketAllowlists},
    {{"netlink", "netlink protocols other than NETLINK_ROUTE"}, EPROTONOSUPPORT, kNetlink},
    {{"vsock", "vsock sockets, which ignore network namespaces"}, EAFNOSUPPORT, kVsock},
    {{"nested-userns", "new user namespaces (--allow-nested-userns relaxes it)"},
     EPERM,
     kNestedUserns},
    {{"ptrace", "tracing and reading the memory of other processes"}, EPERM, kPtrace},
    {{"personality", "personality flags other than the ones in use"},
     EPERM,
     {},
     kPersonalityAllowlists},
    {{"syslog", "reading and clearing the kernel log"}, EPERM, kSyslog},
    {{"obsolete", "obsolete calls no current program needs"}, ENOSYS, kObsolete},
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

scmp_arg_cmp ToScmp(const ArgCmp& cmp) {
  if (cmp.not_equal) {
    return {.arg = static_cast<unsigned int>(cmp.index),
            .op = SCMP_CMP_NE,
            .datum_a = cmp.value,
            .datum_b = 0};
  }
  return {.arg = static_cast<unsigned int>(cmp.index),
          .op = SCMP_CMP_MASKED_EQ,
          .datum_a = cmp.mask,
          .datum_b = cmp.value};
}

base::Result<int> ResolveSyscall(const char* name) {
  const int nr = seccomp_syscall_resolve_name(name);
  if (nr == __NR_SCMP_ERROR) {
    return base::Error::Message(std::string("seccomp: unknown system call ") + name);
  }
  return nr;
}

base::Status AddRule(scmp_filter_ctx ctx, const Rule& rule, int group_err) {
  const int err = rule.err != 0 ? rule.err : group_err;
  auto nr = ResolveSyscall(rule.syscall);
  if (!nr) return nr.error();
  scmp_arg_cmp cmps[2];
  unsigned int count = 0;
  for (const ArgCmp* cmp : {&rule.first, &rule.second}) {
    if (cmp->index >= 0) cmps[count++] = ToScmp(*cmp);
  }
  // _exact: fail rather than let libseccomp rewrite the rule for another ABI.
  const int rc = seccomp_rule_add_exact_array(ctx, SCMP_ACT_ERRNO(err), *nr, count, cmps);
  if (rc < 0) return base::Error(-rc, "seccomp: can't add a rule for", rule.syscall);
  return {};
}

// The allowlists of the groups in force, as classic BPF placed before libseccomp's program:
//
//     ld arch; jne X86_64 -> END          (other arches: libseccomp's program kills)
//   per allowlist:
//     ld nr; jne NR -> next allowlist
//     ld low word of the argument
//     jeq ALLOWED_1 -> END ... jeq ALLOWED_n -> END
//     ret ERRNO(err)
//   END: libseccomp's program, which still applies its own rules to the allowed calls
//
// Classic BPF jumps are relative and forward only, so the concatenation is one valid
// program. x32 numbers (bit 0x40000000) never equal NR and reach libseccomp's kill.
base::Result<std::vector<sock_filter>> AllowlistPrefix(const std::vector<bool>& relaxed) {
  struct Block {
    uint32_t nr;
    const Allowlist* list;
    int err;
  };
  std::vector<Block> blocks;
  size_t length = 2;
  for (size_t i = 0; i < kGroupCount; ++i) {
    if (relaxed[i]) continue;
    for (const Allowlist& list : kGroups[i].allowlists) {
      auto nr = ResolveSyscall(list.syscall);
      if (!nr) return nr.error();
      blocks.push_back({static_cast<uint32_t>(*nr), &list, kGroups[i].err});
      length += 4 + list.allowed.size();
    }
  }
  if (blocks.empty()) return std::vector<sock_filter>{};
  // Jump offsets are 8 bits; the tables above are far smaller than that.
  if (length > 255) return base::Error::Message("seccomp: allowlist prefix too long");
  std::vector<sock_filter> out;
  auto to_end = [&] { return static_cast<uint8_t>(length - out.size() - 1); };
  out.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)));
  out.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, to_end()));
  for (const Block& block : blocks) {
    const size_t rest = 2 + block.list->allowed.size();  // after the jeq: skip to the next
    out.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)));
    out.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, block.nr, 0, static_cast<uint8_t>(rest)));
    // x86_64 is little-endian: the low word of args[i] comes first.
    const auto arg =
        static_cast<uint32_t>(offsetof(seccomp_data, args) +
                              sizeof(uint64_t) * static_cast<size_t>(block.list->arg_index));
    out.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, arg));
    for (uint32_t value : block.list->allowed) {
      out.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, value, to_end(), 0));
    }
    out.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (static_cast<uint32_t>(block.err) &
                                                                 SECCOMP_RET_DATA)));
  }
  return out;
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

std::string DescribeRules(const Group& group) {
  std::string out;
  for (const Rule& rule : group.rules) {
    if (rule.err != 0) continue;  // listed apart, with its own errno
    if (!out.empty()) out += ", ";
    out += rule.syscall;
    if (rule.label != nullptr) out += std::string("(") + rule.label + ")";
  }
  for (const Allowlist& list : group.allowlists) {
    if (!out.empty()) out += ", ";
    out += std::string(list.syscall) + "(unless " + list.label + ")";
  }
  return out;
}

bool ComparesArguments(const Group& group) {
  return !group.allowlists.empty() || (!group.rules.empty() && group.rules[0].label != nullptr);
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
  auto prefix = AllowlistPrefix(*relaxed);
  if (!prefix) return prefix.error();
  auto program = ExportBpf(ctx.get());
  if (!program) return program.error();
  const auto* bytes = reinterpret_cast<const uint8_t*>(prefix->data());
  program->insert(program->begin(), bytes, bytes + prefix->size() * sizeof(sock_filter));
  if (auto ok = ValidateSeccompProgram(*program); !ok) return ok.error();
  return program;
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
      if (ComparesArguments(group)) line += " (argument compared on 32 bits)";
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
