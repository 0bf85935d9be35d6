#include "dispatch/git/git_child_env.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include <fmt/format.h>

namespace sbx::dispatch {

std::string GitConfigQuote(const std::string& value) {
  std::string out = "\"";
  for (char c : value) {
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    if (c == '\\' || c == '"') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string GitConfigText(const GitChildConfig& config) {
  std::string text = "[safe]\n";
  for (const std::string& dir : config.safe_directories) {
    text += fmt::format("\tdirectory = {}\n", GitConfigQuote(dir));
  }
  if (config.offline) {
    text +=
        "[core]\n\thooksPath = /dev/null\n\tfsmonitor = false\n"
        "[protocol]\n\tallow = never\n[protocol \"file\"]\n\tallow = always\n";
  }
  return text;
}

int PrepareGitChild(const GitChildConfig& config) {
  // Not close-on-exec: git and the processes it starts read it.
  int fd = ::memfd_create("ateam-git-config", 0);
  if (fd < 0) return errno;
  const std::string text = GitConfigText(config);
  if (::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
    return errno != 0 ? errno : EIO;
  }
  // NOLINTBEGIN(concurrency-mt-unsafe): the child is single-threaded.
  ::setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
  ::setenv("GIT_CONFIG_GLOBAL", fmt::format("/proc/self/fd/{}", fd).c_str(), 1);
  ::setenv("GIT_TERMINAL_PROMPT", "0", 1);
  ::setenv("GIT_PAGER", "cat", 1);
  for (const char* name :
       {"GIT_DIR", "GIT_WORK_TREE", "GIT_CONFIG", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT",
        "GIT_TEMPLATE_DIR", "GIT_EXEC_PATH", "GIT_INDEX_FILE", "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_OBJECT_DIRECTORY", "GIT_COMMON_DIR"}) {
    ::unsetenv(name);
  }
  if (config.offline) {
    for (const char* name :
         {"GIT_EXTERNAL_DIFF", "GIT_SSH", "GIT_SSH_COMMAND", "GIT_ASKPASS", "GIT_PROXY_COMMAND"}) {
      ::unsetenv(name);
    }
  }
  // NOLINTEND(concurrency-mt-unsafe)
  return 0;
}

}  // namespace sbx::dispatch
