#include "dispatch/host/disk_watch.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstring>

#include <fmt/format.h>

#include "base/child_process.h"
#include "base/syscalls.h"
#include "dispatch/sys/run_as_child.h"

namespace sbx::dispatch {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr milliseconds kMinInterval{100};
constexpr milliseconds kMaxInterval{2000};
constexpr milliseconds kFsPoll{50};
constexpr int kPassesPerInterval = 8;  // sleep 8 times a pass: at most a ninth of a CPU

// The walker's reports, one line each: "<kind> <bytes> <names>" for a pass (B: the
// baseline, U: while the agent runs, F: the final pass), "E <text>" when it can't measure.
void Send(int fd, const std::string& line) {
  std::string text = line + "\n";
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) ::_exit(0);  // `run` has gone
    done += static_cast<size_t>(n);
  }
}

// What the filesystems under the roots have in use, each filesystem once.
DiskUsage FilesystemsInUse(const std::vector<int>& roots) {
  DiskUsage used;
  std::vector<dev_t> seen;
  for (int fd : roots) {
    struct stat st {};
    struct statvfs vfs {};
    if (::fstat(fd, &st) != 0 || std::find(seen.begin(), seen.end(), st.st_dev) != seen.end() ||
        ::fstatvfs(fd, &vfs) != 0) {
      continue;
    }
    seen.push_back(st.st_dev);
    used.bytes += (vfs.f_blocks - vfs.f_bfree) * vfs.f_frsize;
    used.names += vfs.f_files - vfs.f_ffree;
  }
  return used;
}

uint64_t Grown(uint64_t now, uint64_t then) { return now > then ? now - then : 0; }

// Sleeps `interval` unless `run` asks for the final pass (true) or goes (exits), or the
// filesystems filled by more than `room` since `fs_then`.
bool Sleep(int control_fd, const std::vector<int>& roots, Clock::duration interval,
           DiskUsage fs_then, DiskUsage room) {
  const auto until = Clock::now() + interval;
  for (auto now = Clock::now(); now < until; now = Clock::now()) {
    pollfd p{.fd = control_fd, .events = POLLIN, .revents = 0};
    auto wait = std::min<Clock::duration>(kFsPoll, until - now);
    int ready = ::poll(&p, 1, static_cast<int>(std::chrono::ceil<milliseconds>(wait).count()));
    if (ready > 0) {
      char byte = 0;
      if (::read(control_fd, &byte, 1) == 1) return true;
      ::_exit(0);
    }
    DiskUsage fs = FilesystemsInUse(roots);
    if (Grown(fs.bytes, fs_then.bytes) > room.bytes ||
        Grown(fs.names, fs_then.names) > room.names) {
      return false;
    }
  }
  return false;
}

// The walker keeps only its own descriptors (and stdio): a copy of one of `run`'s (a relay's
// listening socket, a lock, the janitor's pipe) would keep it open after `run` closed it.
void CloseAllBut(std::vector<int> keep) {
  std::sort(keep.begin(), keep.end());
  unsigned next = 3;
  for (int fd : keep) {
    const auto number = static_cast<unsigned>(fd);
    if (number < next) continue;
    if (number > next) (void)::close_range(next, number - 1, 0);
    next = number + 1;
  }
  (void)::close_range(next, ~0U, 0);
}

// The walker: the baseline, then a pass per interval until asked for the final one.
int Walk(const std::vector<int>& roots, int report_fd, int control_fd, DiskUsage bounds) {
  // One descriptor per level of a tree: as many as this process may have.
  struct rlimit nofile {};
  if (::getrlimit(RLIMIT_NOFILE, &nofile) == 0) {
    nofile.rlim_cur = nofile.rlim_max;
    (void)::setrlimit(RLIMIT_NOFILE, &nofile);
  }
  DiskUsage fs_then = FilesystemsInUse(roots);
  auto baseline = MeasureTrees(roots, {UINT64_MAX, UINT64_MAX});
  if (!baseline) {
    Send(report_fd, "E " + baseline.error().Render());
    return 1;
  }
  Send(report_fd, fmt::format("B {} {}", baseline->bytes, baseline->names));
  const DiskUsage cap{baseline->bytes + bounds.bytes, baseline->names + bounds.names};
  DiskUsage last = *baseline;
  Clock::duration pass_time{};
  bool final = false;
  while (!final) {
    const DiskUsage room{Grown(cap.bytes, last.bytes), Grown(cap.names, last.names)};
    final = Sleep(
        control_fd, roots,
        std::clamp<Clock::duration>(kPassesPerInterval * pass_time, kMinInterval, kMaxInterval),
        fs_then, room);
    fs_then = FilesystemsInUse(roots);
    const auto start = Clock::now();
    auto usage = MeasureTrees(roots, cap);
    pass_time = Clock::now() - start;
    if (!usage) {
      Send(report_fd, "E " + usage.error().Render());
      return 1;
    }
    Send(report_fd, fmt::format("{} {} {}", final ? 'F' : 'U', usage->bytes, usage->names));
    last = *usage;
  }
  return 0;
}

std::string Bytes(uint64_t n) {
  if (n % kGiB == 0) return fmt::format("{} GiB", n / kGiB);
  if (n % kMiB == 0) return fmt::format("{} MiB", n / kMiB);
  if (n >= kMiB) return fmt::format("{:.1f} MiB", static_cast<double>(n) / kMiB);
  return fmt::format("{} bytes", n);
}

}  // namespace

base::Result<std::unique_ptr<DiskWatch>> DiskWatch::Start(
    const std::vector<std::string>& dirs, const std::optional<runtime::SandboxSpec::HostIds>& ids,
    DiskUsage bounds) {
  // Opened here, before the agent runs: the walker measures these directories whatever
  // is renamed later. A directory given twice (an out dir that is the workspace) once.
  std::vector<base::UniqueFd> opened;
  std::vector<int> roots;
  std::vector<std::pair<dev_t, ino_t>> seen;
  for (const std::string& dir : dirs) {
    base::UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd) return base::ErrnoError("Can't open for the disk watcher", dir);
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return base::ErrnoError("fstat", dir);
    if (std::find(seen.begin(), seen.end(), std::pair{st.st_dev, st.st_ino}) != seen.end()) {
      continue;
    }
    seen.emplace_back(st.st_dev, st.st_ino);
    roots.push_back(fd.get());
    opened.push_back(std::move(fd));
  }
  auto reports = base::MakePipe();
  if (!reports) return reports.error();
  auto control = base::MakePipe();
  if (!control) return control.error();
  const pid_t parent = ::getpid();
  auto child = base::ForkWithPidfd("the disk watcher");
  if (!child) return child.error();
  if (child->pid == 0) {
    // Stop signals stay blocked, as in `run`: a Ctrl-C to the terminal's process group
    // is `run`'s to act on, never the walker's end.
    reports->read_end.reset();
    control->write_end.reset();
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (ids && SwitchToIds(*ids) != 0) ::_exit(kChildCantSwitchIds);
    // A change of credentials clears the parent-death signal: set it again, as the new ids.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(kChildCantSwitchIds);
    std::vector<int> keep = roots;
    keep.push_back(reports->write_end.get());
    keep.push_back(control->read_end.get());
    CloseAllBut(keep);
    ::_exit(Walk(roots, reports->write_end.get(), control->read_end.get(), bounds));
  }
  reports->write_end.reset();
  control->read_end.reset();
  if (::fcntl(reports->read_end.get(), F_SETFL, O_NONBLOCK) != 0) {
    return base::ErrnoError("fcntl O_NONBLOCK", "the disk watcher's reports");
  }
  return std::unique_ptr<DiskWatch>(new DiskWatch(std::move(reports->read_end),
                                                  std::move(control->write_end),
                                                  std::move(child->pidfd), child->pid, bounds));
}

DiskWatch::DiskWatch(base::UniqueFd reports, base::UniqueFd control, base::UniqueFd pidfd,
                     pid_t pid, DiskUsage bounds)
    : reports_(std::move(reports)),
      control_(std::move(control)),
      pidfd_(std::move(pidfd)),
      pid_(pid),
      bounds_(bounds) {}

DiskWatch::~DiskWatch() {
  if (loop_ != nullptr) loop_->UnwatchCallback(reports_.get());
  (void)base::PidfdSendSignal(pidfd_.get(), SIGKILL);
  while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
}

bool DiskWatch::ReadReports() {
  char chunk[512];
  while (true) {
    ssize_t n = ::read(reports_.get(), chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return true;  // EAGAIN: nothing more now
    if (n == 0) break;
    buffer_.append(chunk, static_cast<size_t>(n));
    for (size_t end = buffer_.find('\n'); end != std::string::npos; end = buffer_.find('\n')) {
      std::string line = buffer_.substr(0, end);
      buffer_.erase(0, end + 1);
      HandleLine(line);
    }
  }
  // The walker went: after its final pass or its error that is its end; else nothing
  // measures the trees any more, and the dispatch must not go on unbounded.
  if (!final_seen_ && !failed_ && crossed_.empty()) {
    crossed_ = "disk: the disk watcher ended unexpectedly: the dispatch was stopped";
    if (on_crossed_) on_crossed_();
  }
  return false;
}

void DiskWatch::HandleLine(const std::string& line) {
  if (line.size() < 2) return;
  const char kind = line[0];
  if (kind == 'E') {
    failed_ = true;
    if (crossed_.empty()) {
      crossed_ = "disk: " + line.substr(2) + ": the dispatch was stopped, unbounded";
      if (on_crossed_) on_crossed_();
    }
    return;
  }
  if (kind == 'F') final_seen_ = true;
  DiskUsage usage;
  const char* end = line.data() + line.size();
  auto [after_bytes, bytes_ec] = std::from_chars(line.data() + 2, end, usage.bytes);
  if (bytes_ec != std::errc() || after_bytes == end) return;
  auto [after_names, names_ec] = std::from_chars(after_bytes + 1, end, usage.names);
  if (names_ec != std::errc() || after_names != end) return;
  if (kind == 'B') {
    baseline_ = usage;
    return;
  }
  if (!crossed_.empty()) return;
  if (!baseline_) return;
  const uint64_t grown = usage.bytes > baseline_->bytes ? usage.bytes - baseline_->bytes : 0;
  const uint64_t added = usage.names > baseline_->names ? usage.names - baseline_->names : 0;
  if (grown > bounds_.bytes) {
    crossed_ = fmt::format(
        "disk: the workspace and out dir grew by more than --disk {} (at least {} seen): the "
        "dispatch was stopped",
        Bytes(bounds_.bytes), Bytes(grown));
  } else if (added > bounds_.names) {
    crossed_ = fmt::format(
        "disk: the workspace and out dir got more than --inodes {} new names (at least {} "
        "seen): the dispatch was stopped",
        bounds_.names, added);
  }
  if (!crossed_.empty() && on_crossed_) on_crossed_();
}

bool DiskWatch::WaitFor(const std::function<bool()>& done, int stop_fd) {
  while (true) {
    pollfd fds[2] = {{.fd = reports_.get(), .events = POLLIN, .revents = 0},
                     {.fd = stop_fd, .events = POLLIN, .revents = 0}};
    if (::poll(fds, stop_fd >= 0 ? 2 : 1, -1) < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if ((fds[1].revents & POLLIN) != 0) return false;  // the caller's to take
    const bool alive = ReadReports();
    if (done() || failed_ || !alive) return true;
  }
}

base::Status DiskWatch::AwaitBaseline(int stop_fd) {
  if (!WaitFor([this] { return baseline_.has_value(); }, stop_fd))
    return {};  // a stop signal: the caller takes it
  if (!crossed_.empty()) return base::Error::Message(crossed_);
  if (!baseline_) {
    return base::Error::Message("disk: the disk watcher ended before it measured anything");
  }
  return {};
}

base::Status DiskWatch::Attach(relay::EventLoop& loop, std::function<void()> on_crossed) {
  on_crossed_ = std::move(on_crossed);
  loop_ = &loop;
  return loop.WatchCallback(reports_.get(), EPOLLIN, [this](uint32_t) {
    if (!ReadReports()) {
      loop_->UnwatchCallback(reports_.get());
      loop_ = nullptr;
    }
  });
}

void DiskWatch::Detach() {
  on_crossed_ = nullptr;
  if (loop_ != nullptr) {
    loop_->UnwatchCallback(reports_.get());
    loop_ = nullptr;
  }
}

void DiskWatch::FinalPass(int stop_fd) {
  Detach();
  if (!crossed_.empty() || !control_) return;
  const char byte = 'f';
  if (::write(control_.get(), &byte, 1) != 1) return;
  (void)WaitFor([this] { return final_seen_; }, stop_fd);
}

base::Status WatchDispatchDisk(const DispatchDirs& dirs,
                               const std::optional<runtime::SandboxSpec::HostIds>& ids,
                               const DispatchLimits& limits, int stop_fd,
                               std::unique_ptr<DiskWatch>* watch) {
  auto started = DiskWatch::Start({dirs.workspace, dirs.out}, ids,
                                  {.bytes = limits.disk, .names = limits.inodes});
  if (!started) return started.error();
  *watch = std::move(*started);
  return (*watch)->AwaitBaseline(stop_fd);
}

void RecordDiskEnd(DiskWatch* watch, int stop_fd, DispatchResult* result) {
  if (watch == nullptr) return;
  if (result->reason == DispatchReason::kExited || result->reason == DispatchReason::kSignaled) {
    watch->FinalPass(stop_fd);
    if (!watch->crossed().empty()) {
      result->reason = DispatchReason::kDisk;
      result->exit_code = kDiskExit;
    }
  }
  if (result->reason == DispatchReason::kDisk) result->error = watch->crossed();
}

}  // namespace sbx::dispatch
