#include "integration/run/swapper.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>

#include "base/child_process.h"

namespace sbx::integration::run {
namespace {

// Everything `run` does in a directory shows: its reads (open, close) as much as its writes.
constexpr uint32_t kEvents = IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_ATTRIB |
                             IN_OPEN | IN_CLOSE_WRITE | IN_CLOSE_NOWRITE;
// What the swapper moved away is named so, and left alone.
constexpr const char* kMovedAway = ".swapped-";
constexpr int kMaxDepth = 12;
constexpr int kStopFd = 3;
constexpr int kReportFd = 4;

std::string Parent(const std::string& rel) {
  auto slash = rel.rfind('/');
  return slash == std::string::npos ? "" : rel.substr(0, slash);
}
std::string Join(const std::string& dir, const std::string& name) {
  std::string path = dir;
  path += '/';
  path += name;
  return path;
}
std::string Base(const std::string& rel) {
  auto slash = rel.rfind('/');
  return slash == std::string::npos ? rel : rel.substr(slash + 1);
}

class SwapLoop {
 public:
  explicit SwapLoop(SwapperOptions options) : o_(std::move(options)) {}

  [[noreturn]] void Run() {
    inotify_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (inotify_ < 0) ::_exit(3);
    for (const auto& dir : o_.watch) {
      if (Watch(dir, 0)) roots_.insert(dir);
    }
    char ready = 'R';
    if (::write(kReportFd, &ready, 1) != 1) ::_exit(4);
    alignas(inotify_event) char buf[64 * 1024];
    for (;;) {
      // While a dispatch's directories are not reachable yet, look again every millisecond.
      pollfd fds[2] = {{inotify_, POLLIN, 0}, {kStopFd, POLLIN, 0}};
      int n = ::poll(fds, 2, pending_.empty() ? -1 : 1);
      if (n < 0 && errno != EINTR) ::_exit(5);
      if (fds[1].revents != 0) Finish();
      TryPending();
      ssize_t len = 0;
      while ((len = ::read(inotify_, buf, sizeof(buf))) > 0) {
        for (char* p = buf; p < buf + len;) {
          auto* event = reinterpret_cast<inotify_event*>(p);
          p += sizeof(inotify_event) + event->len;
          auto dir = dirs_.find(event->wd);
          if (dir == dirs_.end()) continue;
          ++report_.events;
          OnEvent(dir->second, event->len > 0 ? event->name : "", event->mask);
        }
      }
    }
  }

 private:
  // Watches `dir` and every directory already below it; false when this uid may not.
  bool Watch(const std::string& dir, int depth) {
    int wd = ::inotify_add_watch(inotify_, dir.c_str(), kEvents | IN_ONLYDIR | IN_DONT_FOLLOW);
    if (wd < 0) return false;
    if (!dirs_.emplace(wd, dir).second) return true;
    ++report_.watches;
    if (depth >= kMaxDepth) return true;
    int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR* d = fd >= 0 ? ::fdopendir(fd) : nullptr;
    if (d == nullptr) return true;
    while (dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name != "." && name != ".." && e->d_type == DT_DIR) Watch(Join(dir, name), depth + 1);
    }
    ::closedir(d);
    return true;
  }

  void TryPending() {
    for (auto it = pending_.begin(); it != pending_.end();) {
      bool done = true;
      for (const char* sub : {"workspace", "out"}) {
        std::string path = Join(*it, sub);
        if (watched_.count(path) != 0) continue;
        if (Watch(path, 0)) {
          watched_.insert(path);
          if (std::string(sub) == "workspace") {
            workspaces_.push_back(path);
            // Found late, the checkout already done.
            struct stat st {};
            if (o_.armed_by == "index" && ::lstat((path + "/.git/index").c_str(), &st) == 0) {
              armed_ = true;
            }
          }
        } else {
          done = false;
        }
      }
      it = done ? pending_.erase(it) : std::next(it);
    }
    if (armed_) SwapArmed();
  }

  void OnEvent(const std::string& dir, const std::string& name, uint32_t mask) {
    if (roots_.count(dir) != 0) {
      if ((mask & IN_ISDIR) != 0 && (mask & IN_CREATE) != 0) pending_.insert(Join(dir, name));
      // A name `run` writes beside (its temporary file) is the moment to plant a link.
      for (const auto& plant : o_.plant) {
        if (name.find(plant) == std::string::npos) continue;
        (void)::symlink(o_.victim_file.c_str(), Join(dir, plant).c_str());
      }
      if (!name.empty()) Swap(dir, name);
      return;
    }
    if (!name.empty() && (mask & IN_ISDIR) != 0 && (mask & (IN_CREATE | IN_MOVED_TO)) != 0) {
      Watch(Join(dir, name), 1);
    }
    if (o_.swap_path.empty()) {
      if (!name.empty() && swapped_.insert(Join(dir, name)).second) Swap(dir, name);
      return;
    }
    if (name == o_.armed_by && (mask & (IN_MOVED_TO | IN_CLOSE_WRITE)) != 0) armed_ = true;
    if (armed_) SwapArmed();
  }

  void SwapArmed() {
    for (const auto& workspace : workspaces_) {
      std::string parent = Parent(o_.swap_path);
      Swap(parent.empty() ? workspace : Join(workspace, parent), Base(o_.swap_path));
    }
  }

  // `dir/name` moved away and a link put in its place: to the attacker's git directory
  // for a .git or hooks directory and for a config file, else to root's victim.
  void Swap(const std::string& dir, const std::string& name) {
    if (name.starts_with(kMovedAway)) return;
    std::string path = Join(dir, name);
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || S_ISLNK(st.st_mode)) return;
    std::string target;
    if (S_ISDIR(st.st_mode)) {
      target = name == ".git"    ? o_.theirs_dir
               : name == "hooks" ? o_.theirs_dir + "/hooks"
                                 : o_.victim_dir;
    } else {
      target = name == "config" ? o_.theirs_dir + "/config" : o_.victim_file;
    }
    std::string away = Join(dir, kMovedAway + std::to_string(moved_++));
    if (::rename(path.c_str(), away.c_str()) != 0) return;
    if (::symlink(target.c_str(), path.c_str()) == 0) ++report_.swaps;
  }

  [[noreturn]] void Finish() {
    std::string text = std::to_string(report_.watches) + " " + std::to_string(report_.events) +
                       " " + std::to_string(report_.swaps) + "\n";
    (void)!::write(kReportFd, text.data(), text.size());
    ::_exit(0);
  }

  SwapperOptions o_;
  int inotify_ = -1;
  std::map<int, std::string> dirs_;  // watch descriptor -> directory
  std::set<std::string> roots_;
  std::set<std::string> pending_;  // dispatch directories not watched yet
  std::set<std::string> watched_;
  std::vector<std::string> workspaces_;
  std::set<std::string> swapped_;
  bool armed_ = false;
  int moved_ = 0;
  SwapperReport report_;
};

}  // namespace

std::string SwapperReport::Describe() const {
  std::ostringstream out;
  out << watches << " directories watched, " << events << " events, " << swaps << " swaps";
  return out.str();
}

Swapper::Swapper(const SwapperOptions& options) {
  Pipe stop = MakePipe();
  Pipe report = MakePipe();
  pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ < 0) std::abort();
  if (pid_ == 0) {
    // Only its own two pipes stay open: a copy of another swapper's stop pipe would keep
    // that one running.
    int stop_fd = ::fcntl(stop.read_end.get(), F_DUPFD, 100);
    int report_fd = ::fcntl(report.write_end.get(), F_DUPFD, 100);
    if (stop_fd < 0 || report_fd < 0 || ::dup2(stop_fd, kStopFd) < 0 ||
        ::dup2(report_fd, kReportFd) < 0) {
      ::_exit(2);
    }
    ::close_range(kReportFd + 1, ~0U, 0);
    if (base::SwitchToIds(options.uid, options.gid) != 0) {
      char failed = 'F';  // an id this namespace does not map
      (void)!::write(kReportFd, &failed, 1);
      ::_exit(2);
    }
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(2);
    SwapLoop(options).Run();
  }
  stop_ = std::move(stop.write_end);
  report_ = std::move(report.read_end);
  char ready = 0;
  if (::read(report_.get(), &ready, 1) != 1 || (ready != 'R' && ready != 'F')) std::abort();
  if (ready == 'F') {
    (void)::waitpid(pid_, nullptr, 0);
    pid_ = -1;
    return;
  }
  started_ = true;
}

Swapper::~Swapper() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  (void)::waitpid(pid_, nullptr, 0);
}

SwapperReport Swapper::Stop() {
  if (!started_) return {};
  stop_.reset();
  std::string text = ReadAll(report_.get());
  (void)::waitpid(pid_, nullptr, 0);
  pid_ = -1;
  SwapperReport report;
  std::istringstream in(text);
  in >> report.watches >> report.events >> report.swaps;
  return report;
}

}  // namespace sbx::integration::run
