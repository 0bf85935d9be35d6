#include "supervise/agent_tty.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>

#include "relay/handoff.h"

namespace sbx::supervise {

using base::ErrnoError;
using base::Error;
using base::Result;
using base::UniqueFd;

Result<UniqueFd> OpenAgentTty(const SuperviseTty& tty, std::chrono::milliseconds timeout) {
  // /dev/ptmx is the layout's symlink to pts/ptmx: the multiplexer of the devpts instance
  // mounted with newinstance for this sandbox, so the pair exists only in here.
  UniqueFd master(::open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (!master) return ErrnoError("Can't open", "/dev/ptmx");
  int unlock = 0;
  if (::ioctl(master.get(), TIOCSPTLCK, &unlock) != 0) {
    return ErrnoError("Can't unlock the terminal", "/dev/ptmx");
  }
  if (tty.rows != 0 && tty.cols != 0) {
    winsize size{};
    size.ws_row = tty.rows;
    size.ws_col = tty.cols;
    if (::ioctl(master.get(), TIOCSWINSZ, &size) != 0) {
      return ErrnoError("Can't set the terminal's size");
    }
  }
  // The peer of this very master, without a path lookup in /dev/pts that something else in
  // the sandbox could race.
  UniqueFd slave(::ioctl(master.get(), TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (!slave) return ErrnoError("Can't open the terminal's slave side");
  termios modes{};
  if (::tcgetattr(slave.get(), &modes) == 0) {
    modes.c_iflag |= IUTF8;
    (void)::tcsetattr(slave.get(), TCSANOW, &modes);
  }
  auto channel = tty.socket.Connect(timeout);
  if (!channel)
    return Error(channel.error().err(), "--tty: " + channel.error().op(),
                 channel.error().subject());
  if (auto sent = relay::SendSocket(channel->get(), master.get()); !sent) {
    return Error(sent.error().err(), "Can't hand over the terminal", tty.socket.ToString());
  }
  // `run` holds the master now (in flight, then received); ours goes before the agent exists.
  return slave;
}

int AttachControllingTty(int slave) noexcept {
  // The agent's child is not a group leader (its group is ours), so setsid cannot fail with
  // EPERM; the new session has no terminal, and the slave belongs to no session yet.
  if (::setsid() < 0) return errno;
  if (::ioctl(slave, TIOCSCTTY, 0) != 0) return errno;
  for (int fd = 0; fd < 3; ++fd) {
    if (::dup2(slave, fd) < 0) return errno;
  }
  if (slave > 2) ::close(slave);
  return 0;
}

}  // namespace sbx::supervise
