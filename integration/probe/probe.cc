// probe: a small static program that the integration tests run inside the sandbox. It
// reports what the sandbox looks like from the inside as deterministic `key: value` lines
// and tries a few operations, printing the errno name of each outcome. It links nothing
// but libc (statically), so it runs in a sandbox without /usr or a dynamic loader.
//
// Subcommands (the tests depend on these spellings):
//   report                  identity, caps, namespaces, env, fds, links, mounts (probe_report.cc)
//   try-write PATH          create/truncate PATH and write a line  -> `try-write: OK|EROFS|...`
//   try-read PATH           open and read PATH                     -> `try-read: OK` + `content:`
//   stat PATH               lstat + statvfs                        -> type, mode, uid, gid, ...
//   connect HOST PORT       TCP connect (3 s timeout), send a line -> `connect: OK|ECONNREFUSED`
//   udp HOST PORT           send one datagram `probe`              -> `udp: OK|ENETUNREACH|...`
//   try-syscall NAME        one syscall, see kSyscalls below       -> `NAME: OK|EPERM|...`
//   try-bind HOST PORT      TCP bind                               -> `try-bind: OK|EACCES|...`
//   try-abstract NAME       connect to the abstract Unix socket @NAME -> `try-abstract: ...`
//   try-kill PID SIG        kill(PID, SIG)                         -> `try-kill: OK|EPERM|...`
//   exit N                  exit with status N
//   kill-self SIG           die by signal SIG
//   sleep [SECONDS]         print `sleeping pid=N`, then sleep (default 60 s)
// The probe itself exits 0 whenever it could do what was asked (an operation failing is a
// result, not a probe error); usage errors exit 64.
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <linux/keyctl.h>
#include <linux/netlink.h>
#include <linux/nsfs.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

namespace sbx::probe {

// Defined in probe_report.cc.
int RunReport(const char* argv0);

// The symbolic name of an errno value ("EPERM"), or "E<number>" if glibc has none.
std::string ErrnoName(int err) {
  const char* name = strerrorname_np(err);
  if (name != nullptr) return name;
  // Appended, not "E" + to_string(): GCC 12 at -O3 warns falsely (-Wrestrict) on that.
  std::string out = "E";
  out += std::to_string(err);
  return out;
}

namespace {

constexpr int kUsageError = 64;

void PrintResult(const char* key, bool ok, int err) {
  std::printf("%s: %s\n", key, ok ? "OK" : ErrnoName(err).c_str());
}

// Printable rendering of a few bytes, so binary files (e.g. /dev/zero) stay on one line.
std::string Escape(std::string_view bytes) {
  std::string out;
  for (unsigned char c : bytes) {
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return out;
}

int TryWrite(const char* path) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    PrintResult("try-write", false, errno);
    return 0;
  }
  constexpr std::string_view kLine = "written by probe\n";
  bool ok = write(fd, kLine.data(), kLine.size()) == static_cast<ssize_t>(kLine.size());
  int err = errno;
  close(fd);
  PrintResult("try-write", ok, err);
  return 0;
}

int TryRead(const char* path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    PrintResult("try-read", false, errno);
    return 0;
  }
  char buf[64];
  ssize_t n = read(fd, buf, sizeof buf);
  int err = errno;
  close(fd);
  PrintResult("try-read", n >= 0, err);
  if (n >= 0) std::printf("content: %s\n", Escape(std::string_view(buf, n)).c_str());
  return 0;
}

const char* FileType(mode_t mode) {
  switch (mode & S_IFMT) {
    case S_IFDIR:
      return "dir";
    case S_IFREG:
      return "file";
    case S_IFLNK:
      return "symlink";
    case S_IFCHR:
      return "char";
    case S_IFBLK:
      return "block";
    case S_IFIFO:
      return "fifo";
    case S_IFSOCK:
      return "socket";
    default:
      return "unknown";
  }
}

int Stat(const char* path) {
  struct stat st {};
  if (lstat(path, &st) != 0) {
    PrintResult("stat", false, errno);
    return 0;
  }
  std::printf("stat: OK\ntype: %s\nmode: %04o\nuid: %u\ngid: %u\n", FileType(st.st_mode),
              st.st_mode & 07777, st.st_uid, st.st_gid);
  if (S_ISLNK(st.st_mode)) {
    char target[4096];
    ssize_t n = readlink(path, target, sizeof target - 1);
    std::printf("target: %s\n", n >= 0 ? std::string(target, n).c_str() : "?");
    return 0;
  }
  struct statvfs vfs {};
  if (statvfs(path, &vfs) == 0) {
    std::printf("fs_bytes: %llu\nfs_ro: %d\n",
                static_cast<unsigned long long>(vfs.f_blocks) * vfs.f_frsize,
                (vfs.f_flag & ST_RDONLY) != 0 ? 1 : 0);
  }
  return 0;
}

// Fills an IPv4 or IPv6 socket address; returns its length, or 0 if HOST is not numeric.
socklen_t MakeAddress(const char* host, const char* port, sockaddr_storage* addr) {
  *addr = {};
  auto port_number = static_cast<uint16_t>(std::atoi(port));
  auto* v4 = reinterpret_cast<sockaddr_in*>(addr);
  if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port_number);
    return sizeof(sockaddr_in);
  }
  auto* v6 = reinterpret_cast<sockaddr_in6*>(addr);
  if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port_number);
    return sizeof(sockaddr_in6);
  }
  return 0;
}

int Connect(const char* host, const char* port) {
  sockaddr_storage addr;
  socklen_t len = MakeAddress(host, port, &addr);
  if (len == 0) return kUsageError;
  int fd = socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    PrintResult("connect", false, errno);
    return 0;
  }
  int err = 0;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    err = errno;
    pollfd pfd{fd, POLLOUT, 0};
    if (err == EINPROGRESS) {
      err = poll(&pfd, 1, 3000) == 1 ? 0 : ETIMEDOUT;
      socklen_t err_len = sizeof err;
      if (err == 0) getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &err_len);
    }
  }
  if (err == 0) {
    constexpr std::string_view kLine = "hello from probe\n";
    if (write(fd, kLine.data(), kLine.size()) < 0) err = errno;
  }
  close(fd);
  PrintResult("connect", err == 0, err);
  return 0;
}

int Udp(const char* host, const char* port) {
  sockaddr_storage addr;
  socklen_t len = MakeAddress(host, port, &addr);
  if (len == 0) return kUsageError;
  int fd = socket(addr.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  constexpr std::string_view kDatagram = "probe";
  bool ok = fd >= 0 && sendto(fd, kDatagram.data(), kDatagram.size(), 0,
                              reinterpret_cast<sockaddr*>(&addr), len) >= 0;
  PrintResult("udp", ok, errno);
  if (fd >= 0) close(fd);
  return 0;
}

// TIOCSTI pushes a byte into the controlling terminal's input (CVE-2017-5226). With
// `high_bits`, the command word carries garbage above bit 31, which the kernel ignores but a
// naive 64-bit seccomp comparison would not (CVE-2019-10063). Fails with ENXIO when there is
// no controlling terminal (e.g. after --new-session).
long TryTiocsti(bool high_bits) {
  int fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return -1;
  char c = ' ';
  unsigned long request = TIOCSTI;
  if (high_bits) request |= 1UL << 32;
  long rc = syscall(SYS_ioctl, fd, request, &c);
  int err = errno;
  close(fd);
  errno = err;
  return rc;
}

long TryIoUring() {
  io_uring_params params{};
  long fd = syscall(SYS_io_uring_setup, 1, &params);
  if (fd >= 0) close(static_cast<int>(fd));
  return fd;
}

long TrySetHostname() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return -1;
  return sethostname(name, std::strlen(name));  // Same name: observable only as a permission.
}

// socket(family, type, protocol), closed again at once.
long TrySocket(int family, int type, int protocol) {
  long fd = socket(family, type | SOCK_CLOEXEC, protocol);
  if (fd >= 0) close(static_cast<int>(fd));
  return fd;
}

long TrySocketpair(int family) {
  int fds[2];
  long rc = socketpair(family, SOCK_STREAM | SOCK_CLOEXEC, 0, fds);
  if (rc == 0) {
    close(fds[0]);
    close(fds[1]);
  }
  return rc;
}

struct SyscallProbe {
  const char* name;
  long (*run)();
};

constexpr SyscallProbe kSyscalls[] = {
    {"keyctl",
     [] { return syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0); }},
    {"ioctl-tiocsti", [] { return TryTiocsti(false); }},
    {"ioctl-tiocsti-highbits", [] { return TryTiocsti(true); }},
    {"io_uring_setup", TryIoUring},
    {"unshare-user", [] { return static_cast<long>(unshare(CLONE_NEWUSER)); }},
    {"unshare-net", [] { return static_cast<long>(unshare(CLONE_NEWNET)); }},
    {"sethostname", TrySetHostname},
    {"socket-vsock",
     [] {
       long fd = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);
       if (fd >= 0) close(static_cast<int>(fd));
       return fd;
     }},
    {"socket-unix", [] { return TrySocket(AF_UNIX, SOCK_STREAM, 0); }},
    {"socket-inet", [] { return TrySocket(AF_INET, SOCK_STREAM, 0); }},
    {"socket-inet6", [] { return TrySocket(AF_INET6, SOCK_DGRAM, 0); }},
    {"socket-netlink-route", [] { return TrySocket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE); }},
    {"socket-netlink-audit", [] { return TrySocket(AF_NETLINK, SOCK_RAW, NETLINK_AUDIT); }},
    {"socket-netlink-uevent",
     [] { return TrySocket(AF_NETLINK, SOCK_DGRAM, NETLINK_KOBJECT_UEVENT); }},
    {"socket-packet", [] { return TrySocket(AF_PACKET, SOCK_RAW, 0); }},
    {"socket-key", [] { return TrySocket(AF_KEY, SOCK_RAW, 2 /* PF_KEY_V2 */); }},
    {"socket-alg", [] { return TrySocket(AF_ALG, SOCK_SEQPACKET, 0); }},
    {"socket-bluetooth", [] { return TrySocket(AF_BLUETOOTH, SOCK_RAW, 0); }},
    {"socketpair-unix", [] { return TrySocketpair(AF_UNIX); }},
    {"socketpair-packet", [] { return TrySocketpair(AF_PACKET); }},
    {"personality-query", [] { return static_cast<long>(personality(0xffffffff)); }},
    {"personality-linux", [] { return static_cast<long>(personality(PER_LINUX)); }},
    {"personality-no-randomize",
     [] { return static_cast<long>(personality(unsigned{PER_LINUX} | ADDR_NO_RANDOMIZE)); }},
    {"personality-read-implies-exec",
     [] { return static_cast<long>(personality(unsigned{PER_LINUX} | READ_IMPLIES_EXEC)); }},
    {"syslog-size", [] { return syscall(SYS_syslog, 10 /* SYSLOG_ACTION_SIZE_BUFFER */, 0, 0); }},
};

int TryBind(const char* host, const char* port) {
  sockaddr_storage addr;
  socklen_t len = MakeAddress(host, port, &addr);
  if (len == 0) return kUsageError;
  int fd = socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  bool ok = fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&addr), len) == 0;
  PrintResult("try-bind", ok, errno);
  if (fd >= 0) close(fd);
  return 0;
}

int TryAbstract(const char* name) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  size_t n = std::min(std::strlen(name), sizeof(addr.sun_path) - 1);
  std::memcpy(addr.sun_path + 1, name, n);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  bool ok =
      fd >= 0 && connect(fd, reinterpret_cast<sockaddr*>(&addr),
                         static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n)) == 0;
  PrintResult("try-abstract", ok, errno);
  if (fd >= 0) close(fd);
  return 0;
}

int TryKill(const char* pid, const char* sig) {
  bool ok = kill(static_cast<pid_t>(std::atoi(pid)), std::atoi(sig)) == 0;
  PrintResult("try-kill", ok, errno);
  return 0;
}

int TrySyscall(std::string_view name) {
  for (const SyscallProbe& probe : kSyscalls) {
    if (name != probe.name) continue;
    errno = 0;
    long rc = probe.run();
    PrintResult(probe.name, rc >= 0, errno);
    return 0;
  }
  std::fprintf(stderr, "probe: unknown syscall probe %s\n", std::string(name).c_str());
  return kUsageError;
}

int KillSelf(int sig) {
  signal(sig, SIG_DFL);
  kill(getpid(), sig);
  // Still alive: pid 1 of a pid namespace ignores signals it has no handler for.
  std::printf("kill-self: survived\n");
  return 99;
}

int Sleep(int seconds) {
  std::printf("sleeping pid=%d\n", getpid());
  std::fflush(stdout);
  for (int left = seconds; left > 0;) left = static_cast<int>(sleep(left));
  return 0;
}

// Which user namespace owns this process's network namespace, relative to its own:
// "self", "ancestor" (e.g. under bwrap's nested namespace for --dev) or "other".
int NetnsOwner() {
  auto inode_of = [](int fd) {
    struct stat st {};
    return fd >= 0 && fstat(fd, &st) == 0 ? st.st_ino : 0;
  };
  int net = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
  int user = open("/proc/self/ns/user", O_RDONLY | O_CLOEXEC);
  if (net < 0 || user < 0) {
    PrintResult("netns_owner", false, errno);
    return 0;
  }
  int owner = ioctl(net, NS_GET_USERNS);
  // EPERM: the owner is an ancestor of this process's user namespace, out of its scope.
  const char* answer = owner < 0 && errno == EPERM ? "ancestor" : "other";
  if (owner >= 0 && inode_of(owner) == inode_of(user)) answer = "self";
  std::printf("netns_owner: %s\n", answer);
  return 0;
}

int Usage() {
  std::fprintf(stderr,
               "usage: probe report | try-write PATH | try-read PATH | stat PATH |\n"
               "       connect HOST PORT | udp HOST PORT | try-syscall NAME |\n"
               "       exit N | kill-self SIG | sleep [SECONDS] | netns-owner |\n"
               "       try-bind HOST PORT | try-abstract NAME | try-kill PID SIG\n");
  return kUsageError;
}

int Dispatch(int argc, char** argv) {
  if (argc < 2) return Usage();
  std::string_view cmd = argv[1];
  const char* arg1 = argc > 2 ? argv[2] : nullptr;
  const char* arg2 = argc > 3 ? argv[3] : nullptr;
  if (cmd == "report") return RunReport(argv[0]);
  if (cmd == "sleep") return Sleep(arg1 != nullptr ? std::atoi(arg1) : 60);
  if (cmd == "netns-owner") return NetnsOwner();
  if (arg1 == nullptr) return Usage();
  if (cmd == "try-write") return TryWrite(arg1);
  if (cmd == "try-read") return TryRead(arg1);
  if (cmd == "stat") return Stat(arg1);
  if (cmd == "try-syscall") return TrySyscall(arg1);
  if (cmd == "try-abstract") return TryAbstract(arg1);
  if (cmd == "exit") return std::atoi(arg1);
  if (cmd == "kill-self") return KillSelf(std::atoi(arg1));
  if (arg2 == nullptr) return Usage();
  if (cmd == "connect") return Connect(arg1, arg2);
  if (cmd == "udp") return Udp(arg1, arg2);
  if (cmd == "try-bind") return TryBind(arg1, arg2);
  if (cmd == "try-kill") return TryKill(arg1, arg2);
  return Usage();
}

}  // namespace
}  // namespace sbx::probe

int main(int argc, char** argv) {
  int rc = sbx::probe::Dispatch(argc, argv);
  std::fflush(stdout);
  return rc;
}
