// The channel sockets' peer check: only the expected process, as the expected uid; by the
// kernel's pidfds also after that process ended, else only while it lives.
#include "relay/peer_check.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstddef>
#include <string>

#include "base/child_process.h"
#include "base/syscalls.h"
#include "base/unique_fd.h"

namespace sbx::relay {
namespace {

struct Pair {
  base::UniqueFd ours;
  base::UniqueFd theirs;
};

// The listening socket the children below connect to: an abstract name, unique per test
// process.
struct Listener {
  base::UniqueFd fd;
  sockaddr_un addr{};
  socklen_t len = 0;
};

Listener Listen() {
  Listener listener;
  listener.fd.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  listener.addr.sun_family = AF_UNIX;
  std::string name = "sbx-peer-check-" + std::to_string(::getpid());
  std::copy(name.begin(), name.end(), listener.addr.sun_path + 1);
  listener.len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  EXPECT_EQ(::bind(listener.fd.get(), reinterpret_cast<sockaddr*>(&listener.addr), listener.len),
            0);
  EXPECT_EQ(::listen(listener.fd.get(), 2), 0);
  return listener;
}

// A child, with a pidfd of it from its first instant, that connects to `listener` and
// exits at once; it is reaped, and its connection accepted, only after that.
struct EndedPeer {
  base::UniqueFd pidfd;
  base::UniqueFd connection;
};

EndedPeer ConnectAndExit(const Listener& listener) {
  auto child = base::CloneWithPidfd(0, "a peer that exits at once");
  EXPECT_TRUE(static_cast<bool>(child));
  if (!child) return {};
  if (child->pid == 0) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    const auto* addr = reinterpret_cast<const sockaddr*>(&listener.addr);
    ::_exit(::connect(fd, addr, listener.len) == 0 ? 0 : 1);
  }
  siginfo_t info{};
  EXPECT_EQ(::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(child->pidfd.get()), &info,
                     WEXITED),
            0);
  EXPECT_EQ(info.si_status, 0) << "the child could not connect";
  EndedPeer peer;
  peer.pidfd = std::move(child->pidfd);
  peer.connection.reset(::accept4(listener.fd.get(), nullptr, nullptr, SOCK_CLOEXEC));
  return peer;
}

base::UniqueFd Dup(const base::UniqueFd& fd) {
  return base::UniqueFd(::fcntl(fd.get(), F_DUPFD_CLOEXEC, 3));
}

// A connected pair whose `theirs` end was made by a child (so its peer credentials name
// the child), which then waits until killed.
Pair PairFromChild(pid_t* child) {
  Listener listener = Listen();
  *child = ::fork();
  if (*child == 0) {
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&listener.addr), listener.len) != 0) ::_exit(1);
    ::pause();
    ::_exit(0);
  }
  Pair pair;
  pair.ours.reset(::accept4(listener.fd.get(), nullptr, nullptr, SOCK_CLOEXEC));
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

TEST(PeerGateTest, TheKernelsPidfdsNameTheLivePeer) {
  pid_t child = 0;
  Pair pair = PairFromChild(&child);
  ASSERT_TRUE(pair.ours);
  base::UniqueFd child_pidfd(base::PidfdOpen(child));
  base::UniqueFd self(base::PidfdOpen(::getpid()));
  const PeerProcess same = ComparePeerProcess(pair.ours.get(), child_pidfd.get());
  const PeerProcess other = ComparePeerProcess(pair.ours.get(), self.get());
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  if (same == PeerProcess::kUnknown) {
    EXPECT_EQ(other, PeerProcess::kUnknown);
    GTEST_SKIP() << "this kernel gives no pidfs pidfd of a socket's peer (SO_PEERPIDFD: Linux "
                    "6.5, pidfs: 6.9): the gate checks pid and liveness instead";
  }
  EXPECT_EQ(same, PeerProcess::kSame);
  EXPECT_EQ(other, PeerProcess::kOther);
}

// The supervisor connected, handed over and ended, and was reaped (bwrap reaps its own
// child) before the loop took the connection: still the supervisor's, by the pidfd taken
// while it lived. Another process that did the same is not, although it too is gone.
TEST(PeerGateTest, ASupervisorThatEndedBeforeTheCheckStillPasses) {
  Listener listener = Listen();
  ASSERT_TRUE(listener.fd);
  EndedPeer supervisor = ConnectAndExit(listener);
  EndedPeer stranger = ConnectAndExit(listener);
  ASSERT_TRUE(supervisor.connection);
  ASSERT_TRUE(stranger.connection);
  PeerGate gate;
  gate.Expect([&supervisor] { return Dup(supervisor.pidfd); }, ::geteuid());
  EXPECT_NE(gate.Check(stranger.connection.get()).find("not the sandbox's supervisor"),
            std::string::npos);
  const std::string verdict = gate.Check(supervisor.connection.get());
  if (ComparePeerProcess(supervisor.connection.get(), supervisor.pidfd.get()) ==
      PeerProcess::kUnknown) {
    EXPECT_NE(verdict, "") << "without the kernel's pidfds an ended peer cannot be told apart";
    GTEST_SKIP() << "this kernel gives no pidfd of a peer that was reaped (Linux 6.16) or has "
                    "no pidfs (6.9): a supervisor that ended before the check is refused";
  }
  EXPECT_EQ(verdict, "");
  gate.Expect([&supervisor] { return Dup(supervisor.pidfd); }, ::geteuid() + 1);
  EXPECT_NE(gate.Check(supervisor.connection.get()).find("not the sandbox's uid"),
            std::string::npos);
}

TEST(PeerGateTest, PidOfPidfdReadsFdinfo) {
  base::UniqueFd self(base::PidfdOpen(::getpid()));
  ASSERT_TRUE(self);
  EXPECT_EQ(PidOfPidfd(self.get()), ::getpid());
  EXPECT_EQ(PidOfPidfd(-1), -1);
}

}  // namespace
}  // namespace sbx::relay
