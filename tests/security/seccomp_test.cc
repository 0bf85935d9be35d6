// The default seccomp policy, checked in user space with the BPF evaluator, plus two tests
// that really install programs in a forked child.
#include "security/seccomp.h"

#include <linux/filter.h>
#include <linux/netlink.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <string>
#include <vector>

#include "tests/support/bpf_eval.h"

namespace sbx::security {
namespace {

using testing::EvalBpfBytes;
using testing::MakeSeccompData;
using testing::SeccompAction;
using testing::SeccompData;

constexpr uint64_t kHighBits = 0xdeadbeef00000000ULL;
constexpr int kX32Bit = 0x40000000;

class DefaultPolicyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto program = CompileDefaultSeccompPolicy();
    ASSERT_TRUE(program) << program.error().Render();
    program_ = std::move(*program);
  }

  [[nodiscard]] uint32_t Eval(const seccomp_data& data) const {
    auto ret = EvalBpfBytes(program_, data);
    EXPECT_TRUE(ret) << ret.error().Render();
    return ret ? *ret : 0xffffffffU;
  }
  void ExpectErrno(const seccomp_data& data, int err) const {
    const uint32_t ret = Eval(data);
    EXPECT_EQ(SeccompAction(ret), SECCOMP_RET_ERRNO) << "nr " << data.nr;
    EXPECT_EQ(SeccompData(ret), static_cast<uint32_t>(err)) << "nr " << data.nr;
  }
  void ExpectAllowed(const seccomp_data& data) const {
    EXPECT_EQ(Eval(data), SECCOMP_RET_ALLOW) << "nr " << data.nr;
  }
  void ExpectKilled(const seccomp_data& data) const {
    EXPECT_EQ(Eval(data), SECCOMP_RET_KILL_PROCESS) << "nr " << data.nr;
  }

  BpfProgram program_;
};

TEST_F(DefaultPolicyTest, IsWellFormed) {
  EXPECT_FALSE(program_.empty());
  EXPECT_EQ(program_.size() % sizeof(sock_filter), 0U);
  EXPECT_TRUE(ValidateSeccompProgram(program_));
}

TEST_F(DefaultPolicyTest, BlocksTheListedSystemCalls) {
  for (int nr :
       {SYS_keyctl, SYS_add_key, SYS_request_key, SYS_bpf, SYS_perf_event_open, SYS_userfaultfd,
        SYS_kexec_load, SYS_kexec_file_load, SYS_init_module, SYS_finit_module, SYS_delete_module,
        SYS_ptrace, SYS_process_vm_readv, SYS_process_vm_writev}) {
    ExpectErrno(MakeSeccompData(nr), EPERM);
  }
}

TEST_F(DefaultPolicyTest, IoUringFailsWithEnosysSoProgramsFallBack) {
  for (int nr : {SYS_io_uring_setup, SYS_io_uring_enter, SYS_io_uring_register}) {
    ExpectErrno(MakeSeccompData(nr), ENOSYS);
  }
}

TEST_F(DefaultPolicyTest, BlocksTtyInjectionOn32Bits) {
  ExpectErrno(MakeSeccompData(SYS_ioctl, {0, TIOCSTI}), EPERM);
  ExpectErrno(MakeSeccompData(SYS_ioctl, {0, TIOCLINUX}), EPERM);
  // CVE-2019-10063: the kernel ignores the high half of the cmd; so must the filter.
  ExpectErrno(MakeSeccompData(SYS_ioctl, {0, kHighBits | TIOCSTI}), EPERM);
  ExpectErrno(MakeSeccompData(SYS_ioctl, {0, kHighBits | TIOCLINUX}), EPERM);
  // Other ioctls stay allowed, whatever the fd.
  ExpectAllowed(MakeSeccompData(SYS_ioctl, {0, TCGETS}));
  ExpectAllowed(MakeSeccompData(SYS_ioctl, {1, TIOCGWINSZ}));
  ExpectAllowed(MakeSeccompData(SYS_ioctl, {0, FIONREAD}));
}

TEST_F(DefaultPolicyTest, SocketFamiliesAreAnAllowlist) {
  for (int nr : {SYS_socket, SYS_socketpair}) {
    ExpectAllowed(MakeSeccompData(nr, {AF_UNIX, SOCK_STREAM, 0}));
    ExpectAllowed(MakeSeccompData(nr, {AF_INET, SOCK_STREAM, 0}));
    ExpectAllowed(MakeSeccompData(nr, {AF_INET6, SOCK_DGRAM, 0}));
    ExpectAllowed(MakeSeccompData(nr, {AF_NETLINK, SOCK_RAW, NETLINK_ROUTE}));
    for (uint64_t family :
         {uint64_t{AF_UNSPEC}, uint64_t{AF_PACKET}, uint64_t{AF_KEY}, uint64_t{AF_ALG},
          uint64_t{AF_BLUETOOTH}, uint64_t{AF_APPLETALK}, uint64_t{AF_CAN}, uint64_t{AF_TIPC},
          uint64_t{AF_RDS}, uint64_t{AF_XDP}, uint64_t{AF_MCTP}, uint64_t{46}, uint64_t{1000},
          uint64_t{0xffffffff}, kHighBits | AF_PACKET}) {
      ExpectErrno(MakeSeccompData(nr, {family, SOCK_RAW, 0}), EAFNOSUPPORT);
    }
    // The kernel reads the family as an int: high bits do not change what is created.
    ExpectAllowed(MakeSeccompData(nr, {kHighBits | AF_UNIX, SOCK_STREAM, 0}));
  }
}

TEST_F(DefaultPolicyTest, NetlinkOnlyForRoute) {
  ExpectErrno(MakeSeccompData(SYS_socket, {AF_NETLINK, SOCK_RAW, NETLINK_AUDIT}), EPROTONOSUPPORT);
  ExpectErrno(MakeSeccompData(SYS_socket, {AF_NETLINK, SOCK_DGRAM, NETLINK_KOBJECT_UEVENT}),
              EPROTONOSUPPORT);
  ExpectErrno(MakeSeccompData(SYS_socket, {AF_NETLINK, SOCK_RAW, NETLINK_NETFILTER}),
              EPROTONOSUPPORT);
  ExpectErrno(MakeSeccompData(SYS_socket, {AF_NETLINK, SOCK_RAW, NETLINK_GENERIC}),
              EPROTONOSUPPORT);
  // The protocol is compared on 64 bits: garbage above bit 31 is refused, never let through.
  ExpectErrno(MakeSeccompData(SYS_socket, {AF_NETLINK, SOCK_RAW, kHighBits}), EPROTONOSUPPORT);
  ExpectAllowed(MakeSeccompData(SYS_socket, {AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, 0}));
  ExpectAllowed(MakeSeccompData(SYS_socket, {kHighBits | AF_NETLINK, SOCK_RAW, 0}));
}

TEST_F(DefaultPolicyTest, BlocksVsock) {
  ExpectErrno(MakeSeccompData(SYS_socket, {AF_VSOCK, SOCK_STREAM, 0}), EAFNOSUPPORT);
  ExpectErrno(MakeSeccompData(SYS_socket, {kHighBits | AF_VSOCK, SOCK_STREAM, 0}), EAFNOSUPPORT);
}

TEST_F(DefaultPolicyTest, PersonalityOnlyWithTheValuesInUse) {
  for (uint64_t value : {uint64_t{PER_LINUX}, uint64_t{PER_LINUX32}, uint64_t{ADDR_NO_RANDOMIZE},
                         uint64_t{PER_LINUX32} | ADDR_NO_RANDOMIZE, uint64_t{0xffffffff}}) {
    ExpectAllowed(MakeSeccompData(SYS_personality, {value}));
  }
  for (uint64_t value :
       {uint64_t{READ_IMPLIES_EXEC}, uint64_t{MMAP_PAGE_ZERO}, uint64_t{ADDR_COMPAT_LAYOUT},
        uint64_t{ADDR_LIMIT_32BIT}, uint64_t{ADDR_LIMIT_3GB}, uint64_t{UNAME26}, uint64_t{PER_BSD},
        uint64_t{PER_SVR4}, uint64_t{ADDR_NO_RANDOMIZE} | READ_IMPLIES_EXEC,
        uint64_t{0xfffffffe}}) {
    ExpectErrno(MakeSeccompData(SYS_personality, {value}), EPERM);
  }
}

TEST_F(DefaultPolicyTest, BlocksSyslogLineDisciplinesAndObsoleteCalls) {
  ExpectErrno(MakeSeccompData(SYS_syslog, {3 /* SYSLOG_ACTION_READ_ALL */}), EPERM);
  ExpectErrno(MakeSeccompData(SYS_ioctl, {0, TIOCSETD}), EPERM);
  ExpectErrno(MakeSeccompData(SYS_ioctl, {0, kHighBits | TIOCSETD}), EPERM);
  ExpectAllowed(MakeSeccompData(SYS_ioctl, {0, TIOCGETD}));
  for (int nr : {SYS_uselib, SYS_ustat, SYS_sysfs, SYS__sysctl, SYS_modify_ldt}) {
    ExpectErrno(MakeSeccompData(nr), ENOSYS);
  }
  for (int nr : {SYS_pidfd_getfd, SYS_process_madvise}) ExpectErrno(MakeSeccompData(nr), EPERM);
}

TEST_F(DefaultPolicyTest, AllowsOrdinarySystemCalls) {
  for (int nr : {SYS_read, SYS_write, SYS_openat, SYS_close, SYS_mmap, SYS_getpid, SYS_clone,
                 SYS_execve, SYS_prctl, SYS_seccomp, SYS_unshare, SYS_mount, SYS_exit_group}) {
    ExpectAllowed(MakeSeccompData(nr));
  }
}

TEST_F(DefaultPolicyTest, DeniesNestedUserNamespaces) {
  ExpectErrno(MakeSeccompData(SYS_unshare, {CLONE_NEWUSER}), EPERM);
  ExpectErrno(MakeSeccompData(SYS_unshare, {CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWNS}), EPERM);
  ExpectErrno(MakeSeccompData(SYS_clone, {CLONE_NEWUSER | SIGCHLD}), EPERM);
  ExpectErrno(MakeSeccompData(SYS_clone, {kHighBits | CLONE_NEWUSER}), EPERM);
  // clone3's flags are in memory: the call answers ENOSYS and libc falls back to clone.
  ExpectErrno(MakeSeccompData(SYS_clone3), ENOSYS);
  // Other namespaces and plain forks stay allowed (they need capabilities anyway).
  ExpectAllowed(MakeSeccompData(SYS_unshare, {CLONE_NEWNET}));
  ExpectAllowed(MakeSeccompData(SYS_clone, {CLONE_VM | CLONE_FS | CLONE_FILES | SIGCHLD}));
  ExpectAllowed(MakeSeccompData(SYS_setns, {3, CLONE_NEWNET}));
}

TEST(SeccompPolicyTest, NestedUserNamespacesCanBeRelaxed) {
  auto program = CompileDefaultSeccompPolicy({.relaxed_groups = {"nested-userns"}});
  ASSERT_TRUE(program) << program.error().Render();
  for (const auto& data :
       {MakeSeccompData(SYS_unshare, {CLONE_NEWUSER}), MakeSeccompData(SYS_clone, {CLONE_NEWUSER}),
        MakeSeccompData(SYS_clone3)}) {
    EXPECT_EQ(*EvalBpfBytes(*program, data), SECCOMP_RET_ALLOW) << data.nr;
  }
}

TEST_F(DefaultPolicyTest, KillsX32AndForeignArchitectures) {
  // x32 numbers on the x86_64 arch: getpid and keyctl alike.
  ExpectKilled(MakeSeccompData(kX32Bit | SYS_getpid));
  ExpectKilled(MakeSeccompData(kX32Bit | 39));
  ExpectKilled(MakeSeccompData(kX32Bit | SYS_keyctl));
  ExpectKilled(MakeSeccompData(SYS_getpid, {}, AUDIT_ARCH_I386));
  ExpectKilled(MakeSeccompData(20 /* i386 getpid */, {}, AUDIT_ARCH_I386));
  ExpectKilled(MakeSeccompData(SYS_getpid, {}, AUDIT_ARCH_AARCH64));
}

TEST(SeccompPolicyTest, RelaxedGroupsAreAllowed) {
  auto program = CompileDefaultSeccompPolicy({.relaxed_groups = {"keyring", "ptrace"}});
  ASSERT_TRUE(program) << program.error().Render();
  for (int nr : {SYS_keyctl, SYS_add_key, SYS_request_key, SYS_ptrace, SYS_process_vm_readv}) {
    EXPECT_EQ(*EvalBpfBytes(*program, MakeSeccompData(nr)), SECCOMP_RET_ALLOW) << nr;
  }
  // The other groups stay blocked.
  EXPECT_EQ(SeccompAction(*EvalBpfBytes(*program, MakeSeccompData(SYS_bpf))), SECCOMP_RET_ERRNO);
  EXPECT_EQ(*EvalBpfBytes(*program, MakeSeccompData(kX32Bit | SYS_keyctl)),
            SECCOMP_RET_KILL_PROCESS);
}

// Each socket group is relaxed on its own: vsock and the other families are separate.
TEST(SeccompPolicyTest, SocketGroupsRelaxIndependently) {
  auto eval = [](const BpfProgram& program, const seccomp_data& data) {
    auto ret = EvalBpfBytes(program, data);
    EXPECT_TRUE(ret) << ret.error().Render();
    return ret ? *ret : 0U;
  };
  auto vsock = CompileDefaultSeccompPolicy({.relaxed_groups = {"vsock"}});
  ASSERT_TRUE(vsock) << vsock.error().Render();
  EXPECT_EQ(eval(*vsock, MakeSeccompData(SYS_socket, {AF_VSOCK})), SECCOMP_RET_ALLOW);
  EXPECT_EQ(SeccompData(eval(*vsock, MakeSeccompData(SYS_socket, {AF_PACKET}))),
            static_cast<uint32_t>(EAFNOSUPPORT));
  auto families = CompileDefaultSeccompPolicy({.relaxed_groups = {"socket-families"}});
  ASSERT_TRUE(families) << families.error().Render();
  EXPECT_EQ(eval(*families, MakeSeccompData(SYS_socket, {AF_PACKET})), SECCOMP_RET_ALLOW);
  EXPECT_EQ(eval(*families, MakeSeccompData(SYS_socketpair, {AF_ALG})), SECCOMP_RET_ALLOW);
  EXPECT_EQ(SeccompData(eval(*families, MakeSeccompData(SYS_socket, {AF_VSOCK}))),
            static_cast<uint32_t>(EAFNOSUPPORT));
  EXPECT_EQ(SeccompData(eval(*families, MakeSeccompData(SYS_socket, {AF_NETLINK, 0, 9}))),
            static_cast<uint32_t>(EPROTONOSUPPORT));
  // The prefix still hands foreign arches and x32 to libseccomp's kill.
  EXPECT_EQ(eval(*vsock, MakeSeccompData(SYS_socket, {AF_PACKET}, AUDIT_ARCH_I386)),
            SECCOMP_RET_KILL_PROCESS);
  EXPECT_EQ(eval(*vsock, MakeSeccompData(kX32Bit | SYS_socket, {AF_PACKET})),
            SECCOMP_RET_KILL_PROCESS);
  auto netlink = CompileDefaultSeccompPolicy({.relaxed_groups = {"netlink", "personality"}});
  ASSERT_TRUE(netlink) << netlink.error().Render();
  EXPECT_EQ(eval(*netlink, MakeSeccompData(SYS_socket, {AF_NETLINK, 0, 9})), SECCOMP_RET_ALLOW);
  EXPECT_EQ(eval(*netlink, MakeSeccompData(SYS_personality, {READ_IMPLIES_EXEC})),
            SECCOMP_RET_ALLOW);
  EXPECT_EQ(SeccompAction(eval(*netlink, MakeSeccompData(SYS_socket, {AF_KEY}))),
            SECCOMP_RET_ERRNO);
}

TEST(SeccompPolicyTest, EveryGroupCanBeRelaxed) {
  std::vector<std::string> all;
  for (const SeccompGroupInfo& group : SeccompGroups()) all.emplace_back(group.name);
  EXPECT_EQ(all.size(), 17U);
  auto program = CompileDefaultSeccompPolicy({.relaxed_groups = all});
  ASSERT_TRUE(program) << program.error().Render();
  EXPECT_EQ(*EvalBpfBytes(*program, MakeSeccompData(SYS_ioctl, {0, TIOCSTI})), SECCOMP_RET_ALLOW);
  EXPECT_EQ(*EvalBpfBytes(*program, MakeSeccompData(SYS_io_uring_setup)), SECCOMP_RET_ALLOW);
  EXPECT_EQ(*EvalBpfBytes(*program, MakeSeccompData(SYS_socket, {AF_VSOCK})), SECCOMP_RET_ALLOW);
  EXPECT_EQ(*EvalBpfBytes(*program, MakeSeccompData(SYS_socket, {AF_PACKET})), SECCOMP_RET_ALLOW);
  EXPECT_EQ(*EvalBpfBytes(*program, MakeSeccompData(SYS_personality, {READ_IMPLIES_EXEC})),
            SECCOMP_RET_ALLOW);
  // The architecture rule is not a group.
  EXPECT_EQ(*EvalBpfBytes(*program, MakeSeccompData(SYS_getpid, {}, AUDIT_ARCH_I386)),
            SECCOMP_RET_KILL_PROCESS);
}

TEST(SeccompPolicyTest, UnknownGroupIsAClearError) {
  auto program = CompileDefaultSeccompPolicy({.relaxed_groups = {"keyring", "iouring"}});
  ASSERT_FALSE(program);
  const std::string message = program.error().Render();
  EXPECT_NE(message.find("unknown seccomp group \"iouring\""), std::string::npos) << message;
  EXPECT_NE(message.find("io_uring"), std::string::npos) << message;
  EXPECT_FALSE(DescribeSeccompPolicy({.relaxed_groups = {"nope"}}));
}

TEST(SeccompPolicyTest, DescribesEveryGroup) {
  auto lines = DescribeSeccompPolicy({.relaxed_groups = {"ptrace"}});
  ASSERT_TRUE(lines) << lines.error().Render();
  ASSERT_EQ(lines->size(), 1 + SeccompGroups().size());
  EXPECT_EQ((*lines)[0],
            "seccomp: default allow; i386, other architectures and the x32 ABI kill the process");
  EXPECT_EQ((*lines)[1],
            "seccomp: tty-inject: ioctl(TIOCSTI), ioctl(TIOCLINUX) -> EPERM (argument compared "
            "on 32 bits)");
  EXPECT_EQ((*lines)[3],
            "seccomp: io_uring: io_uring_setup, io_uring_enter, io_uring_register "
            "-> ENOSYS");
  EXPECT_EQ((*lines)[10],
            "seccomp: socket-families: socket(unless AF_UNIX, AF_INET, AF_INET6, AF_NETLINK, "
            "AF_VSOCK), socketpair(unless AF_UNIX, AF_INET, AF_INET6, AF_NETLINK, AF_VSOCK) -> "
            "EAFNOSUPPORT (argument compared on 32 bits)");
  EXPECT_EQ((*lines)[13],
            "seccomp: nested-userns: unshare(CLONE_NEWUSER), clone(CLONE_NEWUSER) -> EPERM "
            "(argument compared on 32 bits); clone3 -> ENOSYS");
  EXPECT_EQ((*lines)[14],
            "seccomp: ptrace: relaxed, allowed: ptrace, process_vm_readv, process_vm_writev, "
            "pidfd_getfd, process_madvise");
  EXPECT_EQ(lines->back(),
            "seccomp: obsolete: uselib, ustat, sysfs, _sysctl, modify_ldt -> ENOSYS");
}

TEST(ValidateSeccompProgramTest, RejectsBadLengths) {
  EXPECT_FALSE(ValidateSeccompProgram({}));
  const std::vector<uint8_t> odd(12, 0);
  auto status = ValidateSeccompProgram(odd);
  ASSERT_FALSE(status);
  EXPECT_EQ(status.error().Render(), "Invalid seccomp data, must be multiple of 8");
  const std::vector<uint8_t> huge(size_t{8} * (BPF_MAXINSNS + 1), 0);
  EXPECT_FALSE(ValidateSeccompProgram(huge));
}

// Forks; the child runs `body` and exits with its result. Returns the wait status.
template <typename Body>
int RunInChild(Body body) {
  const pid_t pid = fork();
  if (pid == 0) _exit(body());
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

TEST(LoadSeccompProgramsTest, DefaultPolicyReallyBlocksKeyctl) {
  auto program = CompileDefaultSeccompPolicy();
  ASSERT_TRUE(program) << program.error().Render();
  const std::vector<BpfProgram> programs = {*program};
  const int status = RunInChild([&]() -> int {
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return 10;
    if (LoadSeccompPrograms(programs) != 0) return 11;
    errno = 0;
    if (syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -3, 0) != -1 || errno != EPERM) {
      return 12;
    }
    if (syscall(SYS_io_uring_setup, 1, nullptr) != -1 || errno != ENOSYS) return 13;
    if (syscall(SYS_getpid) != getpid() || getpid() <= 0) return 14;
    // The hand-written allowlist prefix runs in the kernel as in the evaluator.
    if (socket(AF_PACKET, SOCK_RAW, 0) != -1 || errno != EAFNOSUPPORT) return 15;
    if (syscall(SYS_personality, READ_IMPLIES_EXEC) != -1 || errno != EPERM) return 16;
    if (syscall(SYS_personality, 0xffffffffUL) < 0) return 17;
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return 18;
    close(fd);
    return 0;
  });
  ASSERT_TRUE(WIFEXITED(status)) << "child status " << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// A hand-written program: on x86_64, `nr` fails with `err`, everything else is allowed.
BpfProgram ErrnoFor(int nr, int err) {
  const sock_filter insns[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<uint32_t>(nr), 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | static_cast<uint32_t>(err)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  BpfProgram bytes(sizeof(insns));
  std::memcpy(bytes.data(), insns, sizeof(insns));
  return bytes;
}

TEST(LoadSeccompProgramsTest, InstallsProgramsInOrder) {
  // Both programs answer getppid with an errno; the kernel runs the most recent first and,
  // for equal actions, the most recent one's data wins. getpgid only the
  // first one blocks, and every program lets prctl through for the next.
  const std::vector<BpfProgram> three = {
      ErrnoFor(SYS_getpgid, ENOTTY), ErrnoFor(SYS_getppid, EPERM), ErrnoFor(SYS_getppid, EACCES)};
  const int status = RunInChild([&]() -> int {
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return 10;
    if (LoadSeccompPrograms(three) != 0) return 11;
    errno = 0;
    if (syscall(SYS_getppid) != -1 || errno != EACCES) return 12;
    if (syscall(SYS_getpgid, 0) != -1 || errno != ENOTTY) return 13;
    if (syscall(SYS_getpid) <= 0) return 14;
    return 0;
  });
  ASSERT_TRUE(WIFEXITED(status)) << "child status " << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(LoadSeccompProgramsTest, RejectsBadProgramBeforeInstallingAny) {
  const std::vector<BpfProgram> programs = {ErrnoFor(SYS_getppid, EPERM), BpfProgram(12, 0)};
  const int status = RunInChild([&]() -> int {
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return 10;
    if (LoadSeccompPrograms(programs) != EINVAL) return 11;
    if (prctl(PR_GET_SECCOMP, 0, 0, 0, 0) != 0) return 12;  // still no filter
    return syscall(SYS_getppid) > 0 ? 0 : 13;
  });
  ASSERT_TRUE(WIFEXITED(status)) << "child status " << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace sbx::security
