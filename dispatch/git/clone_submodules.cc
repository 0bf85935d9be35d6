#include "dispatch/git/clone_submodules.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>

#include <fmt/format.h>

#include "base/unique_fd.h"
#include "dispatch/git/host_git.h"
#include "dispatch/sys/at_file.h"
#include "dispatch/sys/run_as_child.h"

namespace sbx::dispatch {
namespace {

struct DeclaredSubmodule {
  std::string name;
  std::string path;
  std::string url;
};

std::string Trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text;
}

bool IsLocalUrl(const std::string& url) {
  if (url.find("://") != std::string::npos) return url.starts_with("file://");
  auto colon = url.find(':');
  return colon == std::string::npos || url.find('/') < colon;
}

// The submodules .gitmodules declares: `submodule.NAME.path` lines, read with git config
// from the file (reading a config file runs nothing).
base::Result<std::vector<DeclaredSubmodule>> DeclaredSubmodules(int ws_fd, const RunAsIds& ids) {
  auto paths = RunHostGit(
      ids, ws_fd,
      {"config", "--file", ".gitmodules", "--null", "--get-regexp", "^submodule\\..*\\.path$"});
  if (!paths) return paths.error();
  std::vector<DeclaredSubmodule> declared;
  if (paths->exit_code != 0) return declared;  // none
  // Each record: "submodule.NAME.path\nPATH\0".
  size_t start = 0;
  const std::string& text = paths->output;
  while (start < text.size()) {
    size_t end = text.find('\0', start);
    if (end == std::string::npos) end = text.size();
    std::string record = text.substr(start, end - start);
    start = end + 1;
    auto newline = record.find('\n');
    if (newline == std::string::npos) continue;
    std::string key = record.substr(0, newline);
    constexpr std::string_view kPrefix = "submodule.";
    constexpr std::string_view kSuffix = ".path";
    if (key.size() <= kPrefix.size() + kSuffix.size()) continue;
    DeclaredSubmodule module;
    module.name = key.substr(kPrefix.size(), key.size() - kPrefix.size() - kSuffix.size());
    module.path = record.substr(newline + 1);
    while (module.path.ends_with('/')) module.path.pop_back();
    auto url = RunHostGit(
        ids, ws_fd,
        {"config", "--file", ".gitmodules", "--get", fmt::format("submodule.{}.url", module.name)});
    if (url && url->exit_code == 0) module.url = Trimmed(url->output);
    declared.push_back(std::move(module));
  }
  return declared;
}

// The commit the superproject's HEAD records at `path` (a gitlink), or "".
std::string GitlinkCommit(int ws_fd, const std::string& path, const RunAsIds& ids) {
  auto tree = RunHostGit(ids, ws_fd, {"ls-tree", "-z", "HEAD", "--", path});
  if (!tree || tree->exit_code != 0) return "";
  // "160000 commit ID\tPATH\0"
  const std::string& line = tree->output;
  if (!line.starts_with("160000 commit ")) return "";
  auto tab = line.find('\t');
  if (tab == std::string::npos) return "";
  return line.substr(14, tab - 14);
}

// The original's git directories, looked up as the dispatch's user (a root caller does
// not read another uid's tree as root): "GITDIR\0COMMONDIR".
std::optional<SourceGitDirs> SourceGitDirsAs(const std::string& source, const RunAsIds& ids) {
  auto pipe = base::MakePipe();
  if (!pipe) return std::nullopt;
  int write_fd = pipe->write_end.get();
  std::string text;
  auto status = RunInChildAs(
      ids,
      [&]() -> int {
        auto dirs = FindSourceGitDirs(source);
        if (!dirs) return 1;
        std::string out = dirs->git_dir + '\0' + dirs->common_dir;
        return ::write(write_fd, out.data(), out.size()) == static_cast<ssize_t>(out.size()) ? 0
                                                                                             : 1;
      },
      [&](pid_t) {
        pipe->write_end.reset();
        char buf[2 * PATH_MAX + 2];
        ssize_t n = 0;
        while ((n = ::read(pipe->read_end.get(), buf, sizeof(buf))) > 0 ||
               (n < 0 && errno == EINTR)) {
          if (n > 0 && text.size() < sizeof(buf)) text.append(buf, static_cast<size_t>(n));
        }
      });
  if (!status || *status != 0) return std::nullopt;
  auto nul = text.find('\0');
  if (nul == std::string::npos) return std::nullopt;
  return SourceGitDirs{text.substr(0, nul), text.substr(nul + 1)};
}

// Where submodule `module` is cloned from: the original's modules/NAME, else a local URL
// (relative ones against the original, as git resolves them for a local clone).
std::optional<std::string> SubmoduleSource(const DeclaredSubmodule& module,
                                           const std::string& source,
                                           const std::optional<SourceGitDirs>& dirs) {
  if (dirs) {
    std::string own = fmt::format("{}/modules/{}", dirs->common_dir, module.name);
    struct stat st {};
    if (::stat(own.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return own;
  }
  if (module.url.empty() || !IsLocalUrl(module.url)) return std::nullopt;
  std::string url = module.url.starts_with("file://") ? module.url.substr(7) : module.url;
  if (url.starts_with("./") || url.starts_with("../")) return source + "/" + url;
  if (url.starts_with('/')) return url;
  return std::nullopt;
}

int Depth(const std::string& rel) {
  int n = 1;
  for (char c : rel) n += c == '/' ? 1 : 0;
  return n;
}

std::string Ups(int n) {
  std::string ups;
  for (int i = 0; i < n; ++i) ups += "../";
  return ups;
}

// One submodule: a fresh bare copy in .git/modules/NAME made a non-bare git directory
// whose work tree is PATH, PATH/.git pointing at it, checked out at `commit`.
base::Status CloneOne(const DeclaredSubmodule& module, const std::string& from,
                      const std::string& commit, int ws_fd, const RunAsIds& ids) {
  std::string git_dir = ".git/modules/" + module.name;
  HostGitOptions trust;
  trust.safe_directories = {from, from + "/.git"};
  auto fail = [&](const std::string& step, const HostGitRun& run) {
    return base::Error::Message(fmt::format("submodule {}: {} failed: {}", module.path, step,
                                            GitComplaintLine(run.errors)));
  };
  auto clone = RunHostGit(
      ids, ws_fd, {"clone", "--bare", "--quiet", "--no-hardlinks", "--", from, git_dir}, trust);
  if (!clone) return clone.error();
  if (clone->exit_code != 0) return fail("git clone", *clone);
  // A non-bare git directory; its work tree is found from PATH/.git (no core.worktree:
  // see SubmoduleGitConfig in git_guard.cc).
  auto set =
      RunHostGit(ids, ws_fd, {"config", "--file", git_dir + "/config", "core.bare", "false"});
  if (!set) return set.error();
  if (set->exit_code != 0) return fail("git config", *set);
  // PATH/.git, written as the dispatch's user in the checkout git made.
  std::string pointer = fmt::format("gitdir: {}{}\n", Ups(Depth(module.path)), git_dir);
  std::string path = module.path;
  auto wrote = RunInChildAs(ids, [&]() -> int {
    auto dir = OpenDirBeneath(ws_fd, path);
    if (!dir) return 1;
    return WriteFileAt(dir->get(), ".git", pointer) ? 0 : 1;
  });
  if (!wrote) return wrote.error();
  if (*wrote != 0) {
    return base::Error::Message(fmt::format("submodule {}: can't write its .git file", path));
  }
  auto checkout =
      RunHostGit(ids, ws_fd, {"-C", module.path, "checkout", "--quiet", "-f", "--detach", commit});
  if (!checkout) return checkout.error();
  if (checkout->exit_code != 0) return fail("git checkout", *checkout);
  return {};
}

}  // namespace

bool IsPlainRelativePath(const std::string& rel) {
  if (rel.empty() || rel.starts_with('/')) return false;
  size_t start = 0;
  while (start <= rel.size()) {
    size_t end = rel.find('/', start);
    if (end == std::string::npos) end = rel.size();
    std::string part = rel.substr(start, end - start);
    if (part.empty() || part == "." || part == ".." || part == ".git") return false;
    start = end + 1;
  }
  return rel.find('\n') == std::string::npos;
}

base::Result<std::vector<ClonedSubmodule>> CloneSubmodules(const std::string& source, int ws_fd,
                                                           const RunAsIds& ids,
                                                           std::vector<std::string>* notices) {
  std::vector<ClonedSubmodule> cloned;
  if (!StatAt(ws_fd, ".gitmodules")) return cloned;
  auto declared = DeclaredSubmodules(ws_fd, ids);
  if (!declared) return declared.error();
  auto dirs = SourceGitDirsAs(source, ids);
  for (const auto& module : *declared) {
    if (!IsPlainRelativePath(module.path) || !IsPlainRelativePath(module.name)) {
      notices->push_back(
          fmt::format("submodule {}: its name or path is not a plain relative "
                      "path; not cloned",
                      module.name));
      continue;
    }
    std::string commit = GitlinkCommit(ws_fd, module.path, ids);
    if (commit.empty()) continue;  // declared, but not part of this commit
    auto from = SubmoduleSource(module, source, dirs);
    if (!from) {
      notices->push_back(fmt::format(
          "submodule {}: the original has no clone of it and its URL {} is not a local path; "
          "not cloned (clones are offline)",
          module.path, module.url));
      continue;
    }
    if (auto st = CloneOne(module, *from, commit, ws_fd, ids); !st) {
      notices->push_back(st.error().Render() + "; not cloned");
      continue;
    }
    cloned.push_back({module.name, module.path, *from});
  }
  return cloned;
}

}  // namespace sbx::dispatch
