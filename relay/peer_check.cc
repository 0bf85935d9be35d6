#include "relay/peer_check.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <utility>

#include "base/syscalls.h"

namespace sbx::relay {
namespace {

// Not in the kernel headers this builds with: SO_PEERPIDFD (Linux 6.5) and the pidfs
// magic (Linux 6.9).
constexpr int kSoPeerPidfd = 77;
constexpr decltype(statfs::f_type) kPidfsMagic = 0x50494446;

// The identity of the process a pidfd refers to: its pidfs inode, or nothing when pidfds
// are not pidfs files on this kernel (anonymous inodes then, all of them alike).
std::optional<std::pair<dev_t, ino_t>> PidfsIdentity(int pidfd) {
  struct statfs fs {};
  if (::fstatfs(pidfd, &fs) != 0 || fs.f_type != kPidfsMagic) return std::nullopt;
  struct stat st {};
  if (::fstat(pidfd, &st) != 0) return std::nullopt;
  return std::make_pair(st.st_dev, st.st_ino);
}

}  // namespace

void PeerGate::Expect(std::function<base::UniqueFd()> supervisor, uid_t uid) {
  supervisor_ = std::move(supervisor);
  uid_ = uid;
}

std::string PeerGate::Check(int fd) const {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || len != sizeof cred) {
    return "the peer's credentials cannot be read";
  }
  const std::string who = "pid " + std::to_string(cred.pid);
  if (!supervisor_) return who + " connected before the sandbox started";
  if (cred.uid != uid_) {
    return who + " runs as uid " + std::to_string(cred.uid) + ", not the sandbox's uid " +
           std::to_string(uid_);
  }
  base::UniqueFd pidfd = supervisor_();
  if (!pidfd) return who + " is not the sandbox's supervisor";
  switch (ComparePeerProcess(fd, pidfd.get())) {
    case PeerProcess::kSame:
      return "";
    case PeerProcess::kOther:
      return who + " is not the sandbox's supervisor";
    case PeerProcess::kUnknown:
      break;
  }
  const pid_t supervisor = PidOfPidfd(pidfd.get());
  if (supervisor <= 0 || cred.pid != supervisor) return who + " is not the sandbox's supervisor";
  // Read after the credentials: the supervisor is still the process with that pid.
  if (base::PidfdSendSignal(pidfd.get(), 0) != 0) {
    return who + ": the supervisor is gone";
  }
  return "";
}

PeerProcess ComparePeerProcess(int fd, int pidfd) {
  // A 32-bit kernel's pidfs inode numbers can repeat; only a 64-bit one's are unique.
  if constexpr (sizeof(long) < 8) return PeerProcess::kUnknown;
  // The kernel's pidfd of the process that connected (close-on-exec, as every pidfd). A
  // kernel before 6.16 has none for a peer that was reaped since (EINVAL, ESRCH).
  int raw = -1;
  socklen_t len = sizeof raw;
  if (::getsockopt(fd, SOL_SOCKET, kSoPeerPidfd, &raw, &len) != 0 || raw < 0) {
    return PeerProcess::kUnknown;
  }
  const base::UniqueFd peer(raw);
  const auto peer_identity = PidfsIdentity(peer.get());
  const auto expected_identity = PidfsIdentity(pidfd);
  if (!peer_identity || !expected_identity) return PeerProcess::kUnknown;
  return *peer_identity == *expected_identity ? PeerProcess::kSame : PeerProcess::kOther;
}

pid_t PidOfPidfd(int pidfd) {
  std::ifstream info("/proc/self/fdinfo/" + std::to_string(pidfd));
  std::string line;
  while (std::getline(info, line)) {
    if (line.starts_with("Pid:"))
      return static_cast<pid_t>(std::strtol(line.c_str() + 4, nullptr, 10));
  }
  return -1;
}

}  // namespace sbx::relay
