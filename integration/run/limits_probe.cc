// Resource-limit probe run INSIDE the sandbox by run_test's limits tests. Every mode prints
// `key: value` lines and exits 0 unless the usage is wrong.
//
//   forks MAX RELEASE     fork children that wait, until fork fails or MAX are running;
//                         print `forks: N` and `errno: NAME`, then `ready`, and keep them
//                         until the file RELEASE exists (at most 120 s)
//   inotify MAX RELEASE   inotify_init1 until it fails or MAX are open; the same output
//   write PATH MIB        write up to MIB MiB of zeros into PATH: `bytes: N`, `errno: NAME`
//   files DIR MAX         create empty files DIR/f0... until it fails: `files: N`, `errno:`
//   alloc MIB             allocate and touch MIB MiB, 1 MiB at a time: `allocated: MIB`
#include <fcntl.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

const char* ErrnoName(int err) {
  const char* name = err == 0 ? "none" : strerrorname_np(err);
  return name != nullptr ? name : "unknown";
}

void Report(const char* key, long long count, int err) {
  std::printf("%s: %lld\nerrno: %s\n", key, count, ErrnoName(err));
  std::fflush(stdout);
}

// Waits until `path` exists: the test's signal that it has done its part.
void WaitForRelease(const char* path) {
  std::printf("ready\n");
  std::fflush(stdout);
  for (int i = 0; i < 2400 && access(path, F_OK) != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

int Forks(long long max, const char* release) {
  std::vector<pid_t> children;
  int err = 0;
  while (static_cast<long long>(children.size()) < max) {
    pid_t pid = fork();
    if (pid < 0) {
      err = errno;
      break;
    }
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      pause();
      _exit(0);
    }
    children.push_back(pid);
  }
  Report("forks", static_cast<long long>(children.size()), err);
  WaitForRelease(release);
  for (pid_t pid : children) kill(pid, SIGKILL);
  for (pid_t pid : children) waitpid(pid, nullptr, 0);
  return 0;
}

int Inotify(long long max, const char* release) {
  long long count = 0;
  int err = 0;
  for (; count < max; ++count) {
    if (inotify_init1(IN_CLOEXEC) < 0) {
      err = errno;
      break;
    }
  }
  Report("inotify", count, err);
  WaitForRelease(release);
  return 0;
}

int Write(const char* path, long long mib) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    Report("bytes", 0, errno);
    return 0;
  }
  std::vector<char> block(1 << 20, 0);
  long long bytes = 0;
  int err = 0;
  while (bytes < mib << 20) {
    ssize_t n = write(fd, block.data(), block.size());
    if (n < 0) {
      err = errno;
      break;
    }
    bytes += n;
  }
  close(fd);
  Report("bytes", bytes, err);
  return 0;
}

int Files(const std::string& dir, long long max) {
  long long count = 0;
  int err = 0;
  for (; count < max; ++count) {
    std::string path = dir + "/f" + std::to_string(count);
    int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
      err = errno;
      break;
    }
    close(fd);
  }
  Report("files", count, err);
  return 0;
}

int Alloc(long long mib) {
  for (long long i = 0; i < mib; ++i) {
    auto* block = static_cast<char*>(std::malloc(1 << 20));
    if (block == nullptr) {
      Report("allocated", i, ENOMEM);
      return 0;
    }
    std::memset(block, 1, 1 << 20);  // touched: charged to the memory cgroup
  }
  Report("allocated", mib, 0);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "forks" && argc == 4) return Forks(std::atoll(argv[2]), argv[3]);
  if (mode == "inotify" && argc == 4) return Inotify(std::atoll(argv[2]), argv[3]);
  if (mode == "write" && argc == 4) return Write(argv[2], std::atoll(argv[3]));
  if (mode == "files" && argc == 4) return Files(argv[2], std::atoll(argv[3]));
  if (mode == "alloc" && argc == 3) return Alloc(std::atoll(argv[2]));
  std::fprintf(stderr, "usage: limits_probe forks|inotify|write|files|alloc ...\n");
  return 2;
}
