#include "relay/peer_check.h"

#include <sys/socket.h>

#include <cstdlib>
#include <fstream>

#include "base/syscalls.h"

namespace sbx::relay {

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
  const pid_t supervisor = pidfd ? PidOfPidfd(pidfd.get()) : -1;
  if (supervisor <= 0 || cred.pid != supervisor) {
    return who + " is not the sandbox's supervisor";
  }
  // Read after the credentials: the supervisor is still the process with that pid.
  if (base::PidfdSendSignal(pidfd.get(), 0) != 0) {
    return who + ": the supervisor is gone";
  }
  return "";
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
