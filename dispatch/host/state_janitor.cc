#include "dispatch/host/state_janitor.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <utility>

#include "base/child_process.h"
#include "dispatch/host/cgroup.h"

namespace sbx::dispatch {
namespace {

[[noreturn]] void JanitorMain(relay::StateDir* dir, const std::vector<std::string>& cgroup_dirs,
                              int read_end) {
  // A process group of its own: `kill -9 -PGID` of `run`'s group (an orchestrator ending a
  // job) must not take the janitor along with `run`.
  (void)::setpgid(0, 0);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) ::signal(sig, SIG_IGN);
  // Not the caller's terminal or pipes: a reader of `run`'s output must see EOF when `run`
  // ends, whatever this process is doing.
  int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null >= 0) {
    for (int fd = 0; fd < 3; ++fd) ::dup2(null, fd);
  }
  char byte = 0;
  while (::read(read_end, &byte, 1) < 0 && errno == EINTR) {
  }
  (void)dir->Remove();
  // After a SIGKILL of `run` the sandbox dies with it (its parent-death signal): give its
  // processes a few seconds to go before the cgroups are removed.
  RemoveCgroupDirs(cgroup_dirs, 10);
  ::_exit(0);
}

}  // namespace

base::Result<StateDirJanitor> StateDirJanitor::Start(relay::StateDir* dir,
                                                     const std::vector<std::string>& cgroup_dirs) {
  auto pipe = base::MakePipe();
  if (!pipe) return pipe.error();
  // Fork, not clone: the janitor runs ordinary code (it allocates paths as it removes).
  auto child = base::ForkWithPidfd("the state directory janitor");
  if (!child) return child.error();
  if (child->pid == 0) {
    pipe->write_end.reset();
    JanitorMain(dir, cgroup_dirs, pipe->read_end.get());
  }
  // Both sides: out of `run`'s group whichever runs first.
  (void)::setpgid(child->pid, child->pid);
  return StateDirJanitor(child->pid, std::move(pipe->write_end));
}

StateDirJanitor::StateDirJanitor(StateDirJanitor&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)), write_end_(std::move(other.write_end_)) {}

StateDirJanitor::~StateDirJanitor() {
  if (pid_ <= 0) return;
  write_end_.reset();
  while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace sbx::dispatch
