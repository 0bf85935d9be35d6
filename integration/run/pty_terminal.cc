#include "integration/run/pty_terminal.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

extern char** environ;

namespace sbx::integration::run {
namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void Die(const char* what) {
  std::fprintf(stderr, "pty terminal: %s: %s\n", what, std::strerror(errno));
  std::abort();
}

std::vector<std::string> Environment(const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  for (char** entry = environ; *entry != nullptr; ++entry) env.emplace_back(*entry);
  for (const std::string& kv : extra) {
    std::string name = kv.substr(0, kv.find('=') + 1);
    std::erase_if(env, [&](const std::string& e) { return e.starts_with(name); });
    env.push_back(kv);
  }
  return env;
}

std::vector<char*> CStrings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// The forked child: async-signal-safe calls only. A new session, whose controlling terminal
// the slave becomes when opened without O_NOCTTY; then fds 0-2 and exec.
[[noreturn]] void ExecOnTerminal(const char* slave_name, bool controlling, char* const* argv,
                                 char* const* envp) {
  if (setsid() < 0) _exit(126);
  int tty = open(slave_name, O_RDWR | (controlling ? 0 : O_NOCTTY));
  if (tty < 0 || (controlling && ioctl(tty, TIOCSCTTY, 0) != 0)) _exit(126);
  for (int fd = 0; fd < 3; ++fd) {
    if (dup2(tty, fd) < 0) _exit(126);
  }
  syscall(SYS_close_range, 3U, UINT_MAX, 0U);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int sig : {SIGPIPE, SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGWINCH}) signal(sig, SIG_DFL);
  execvpe(argv[0], argv, envp);
  _exit(127);
}

}  // namespace

PtyTerminal::PtyTerminal(const Args& argv, unsigned short rows, unsigned short cols,
                         const std::vector<std::string>& extra_env, bool controlling) {
  master_ = Fd(posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (!master_ || grantpt(master_.get()) != 0 || unlockpt(master_.get()) != 0) {
    Die("posix_openpt");
  }
  std::string slave_name = ptsname(master_.get());
  slave_ = Fd(open(slave_name.c_str(), O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (!slave_) Die("open pty slave");
  Resize(rows, cols);
  Args args = argv;
  std::vector<std::string> env = Environment(extra_env);
  std::vector<char*> c_args = CStrings(args);
  std::vector<char*> c_env = CStrings(env);
  pid_ = fork();
  if (pid_ < 0) Die("fork");
  if (pid_ == 0) ExecOnTerminal(slave_name.c_str(), controlling, c_args.data(), c_env.data());
}

PtyTerminal::~PtyTerminal() {
  if (pid_ <= 0 || reaped_) return;
  kill(-pid_, SIGKILL);
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
}

void PtyTerminal::Pump(int wait_ms) {
  if (!master_) {
    poll(nullptr, 0, wait_ms);
    return;
  }
  pollfd p{master_.get(), POLLIN, 0};
  if (poll(&p, 1, wait_ms) <= 0) return;
  char buf[4096];
  ssize_t n = read(master_.get(), buf, sizeof buf);
  if (n > 0) output_.append(buf, static_cast<size_t>(n));
  if (n < 0 && errno == EIO) poll(nullptr, 0, wait_ms);  // every slave closed: nothing to come
}

bool PtyTerminal::WaitFor(std::string_view needle, std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  while (output_.find(needle) == std::string::npos) {
    if (Clock::now() >= deadline) return false;
    Pump(20);
  }
  return true;
}

bool PtyTerminal::WaitForText(std::string_view words, std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  size_t checked = SIZE_MAX;
  for (;;) {
    if (output_.size() != checked) {
      checked = output_.size();
      if (Text().find(words) != std::string::npos) return true;
    }
    if (Clock::now() >= deadline) return false;
    Pump(20);
  }
}

std::string PtyTerminal::Text() const {
  std::string text;
  auto blank = [&] {
    if (!text.empty() && text.back() != ' ') text += ' ';
  };
  for (size_t i = 0; i < output_.size(); ++i) {
    char c = output_[i];
    if (c == '\x1b' && i + 1 < output_.size()) {
      char kind = output_[++i];
      if (kind == '[') {  // CSI: parameters, then one final byte in @..~
        while (i + 1 < output_.size() && (output_[i + 1] < 0x40 || output_[i + 1] > 0x7e)) ++i;
        ++i;
      } else if (kind == ']') {  // OSC: up to BEL or ESC backslash
        while (i + 1 < output_.size() && output_[i + 1] != '\a' && output_[i + 1] != '\x1b') ++i;
        ++i;
        if (i < output_.size() && output_[i] == '\x1b') ++i;
      }
      blank();
    } else if (c == ' ' || c == '\r' || c == '\n' || c == '\t') {
      blank();
    } else if (static_cast<unsigned char>(c) >= 0x20) {
      text += c;
    }
  }
  return text;
}

std::string PtyTerminal::Printable() const {
  std::string out;
  for (unsigned char c : output_) {
    if (c == '\n' || (c >= 0x20 && c < 0x7f)) {
      out += static_cast<char>(c);
    } else if (c != '\r') {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    }
  }
  return out;
}

void PtyTerminal::Type(std::string_view keys) {
  while (!keys.empty()) {
    ssize_t n = write(master_.get(), keys.data(), keys.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) Die("write to pty master");
    keys.remove_prefix(static_cast<size_t>(n));
  }
}

void PtyTerminal::Resize(unsigned short rows, unsigned short cols) {
  winsize size{};
  size.ws_row = rows;
  size.ws_col = cols;
  if (ioctl(master_.get(), TIOCSWINSZ, &size) != 0) Die("TIOCSWINSZ");
}

void PtyTerminal::Close() { master_.reset(); }

dev_t PtyTerminal::SlaveDevice() const {
  struct stat st {};
  if (fstat(slave_.get(), &st) != 0) Die("fstat pty slave");
  return st.st_dev;
}

termios PtyTerminal::Modes() const {
  termios t{};
  if (tcgetattr(slave_.get(), &t) != 0) Die("tcgetattr");
  return t;
}

bool PtyTerminal::Ended(std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  while (!reaped_) {
    if (waitpid(pid_, &status_, WNOHANG) == pid_) {
      reaped_ = true;
      break;
    }
    if (Clock::now() >= deadline) return false;
    Pump(20);
  }
  return true;
}

int PtyTerminal::Wait(std::chrono::milliseconds timeout) {
  if (!Ended(timeout)) {
    kill(-pid_, SIGKILL);
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    reaped_ = true;
    return -1;
  }
  // What the command wrote last is in the master already; take it.
  for (size_t before = SIZE_MAX; master_ && before != output_.size();) {
    before = output_.size();
    Pump(0);
  }
  if (WIFEXITED(status_)) return WEXITSTATUS(status_);
  return 128 + WTERMSIG(status_);
}

bool SameModes(const termios& a, const termios& b) {
  return a.c_iflag == b.c_iflag && a.c_oflag == b.c_oflag && a.c_cflag == b.c_cflag &&
         a.c_lflag == b.c_lflag && std::memcmp(a.c_cc, b.c_cc, sizeof a.c_cc) == 0;
}

std::string DescribeModes(const termios& t) {
  std::ostringstream out;
  out << std::hex << "iflag=" << t.c_iflag << " oflag=" << t.c_oflag << " cflag=" << t.c_cflag
      << " lflag=" << t.c_lflag << " cc=";
  for (cc_t c : t.c_cc) out << static_cast<int>(c) << ",";
  return out.str();
}

}  // namespace sbx::integration::run
