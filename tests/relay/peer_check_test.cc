// The channel sockets' peer check: only the expected process, as the expected uid, and
// only while that process lives.
#include "relay/peer_check.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstddef>
#include <string>

#include "base/syscalls.h"
#include "base/unique_fd.h"

namespace sbx::relay {
namespace {

struct Pair {
  base::UniqueFd ours;
  base::UniqueFd theirs;
};

// A connected pair whose `theirs` end was made by a child (so its peer credentials name
// the child), which then waits until killed.
Pair PairFromChild(pid_t* child) {
  int listen_fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  // Abstract name, unique per test process.
  std::string name = "sbx-peer-check-" + std::to_string(::getpid());
  std::copy(name.begin(), name.end(), addr.sun_path + 1);
  const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  EXPECT_EQ(::bind(listen_fd, reinterpret_cast<sockaddr*>(&addr), len), 0);
  EXPECT_EQ(::listen(listen_fd, 1), 0);
  *child = ::fork();
  if (*child == 0) {
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0) ::_exit(1);
    ::pause();
    ::_exit(0);
  }
  Pair pair;
  pair.ours.reset(::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC));
  ::close(listen_fd);
  return pair;
}

TEST(PeerGateTest, OnlyTheSupervisorAsTheSandboxUidPasses) {
  pid_t child = 0;
  Pair pair = PairFromChild(&child);
  ASSERT_TRUE(pair.ours);
  PeerGate gate;
  EXPECT_NE(gate.Check(pair.ours.get()), "") << "nothing is expected before the sandbox runs";
  gate.Expect([child] { return base::UniqueFd(base::PidfdOpen(child)); }, ::geteuid());
  EXPECT_EQ(gate.Check(pair.ours.get()), "");
  gate.Expect([child] { return base::UniqueFd(base::PidfdOpen(child)); }, ::geteuid() + 1);
  EXPECT_NE(gate.Check(pair.ours.get()).find("not the sandbox's uid"), std::string::npos);
  gate.Expect([] { return base::UniqueFd(base::PidfdOpen(::getpid())); }, ::geteuid());
  EXPECT_NE(gate.Check(pair.ours.get()).find("not the sandbox's supervisor"), std::string::npos);
  gate.Expect([] { return base::UniqueFd(); }, ::geteuid());
  EXPECT_NE(gate.Check(pair.ours.get()), "") << "no supervisor yet";
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
}

TEST(PeerGateTest, PidOfPidfdReadsFdinfo) {
  base::UniqueFd self(base::PidfdOpen(::getpid()));
  ASSERT_TRUE(self);
  EXPECT_EQ(PidOfPidfd(self.get()), ::getpid());
  EXPECT_EQ(PidOfPidfd(-1), -1);
}

}  // namespace
}  // namespace sbx::relay
