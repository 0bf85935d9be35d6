#include "dispatch/git/borrowing_clone.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "base/unique_fd.h"
#include "dispatch/sys/at_file.h"
#include "dispatch/sys/run_as_child.h"

namespace sbx::dispatch {
namespace {

constexpr std::string_view kHeads = "refs/heads/";
constexpr size_t kSha1Hex = 40;

// What `git init --template=` gives a work tree's repository; the git guard writes the
// config anew before the agent starts (clone_config.h).
constexpr const char* kInitialConfig =
    "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n"
    "\tlogallrefupdates = true\n";

// In the child, as the dispatch's user: a new file `name` below `dir_fd` holding `text`.
bool PutNew(int dir_fd, const char* name, const std::string& text) {
  base::UniqueFd fd(
      ::openat(dir_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  return fd && WriteAllTo(fd.get(), text) == 0;
}

// In the child: the directories, each made anew and opened without following a link.
bool MakeDirs(int ws_fd, const std::vector<const char*>& dirs) {
  for (const char* dir : dirs) {
    if (::mkdirat(ws_fd, dir, 0755) != 0) return false;
  }
  return true;
}

int WriteGitDir(int ws_fd, const std::string& cache, const BorrowingGitDir& files) {
  if (!MakeDirs(ws_fd, {".git", ".git/objects", ".git/objects/info", ".git/objects/pack",
                        ".git/refs", ".git/refs/heads", ".git/refs/tags"})) {
    return 1;
  }
  base::UniqueFd git(::openat(ws_fd, ".git", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!git) return 1;
  bool ok = PutNew(git.get(), "config", kInitialConfig) &&
            PutNew(git.get(), "objects/info/alternates", cache + "/objects\n") &&
            PutNew(git.get(), "packed-refs", files.packed_refs);
  if (ok && files.origin_head) {
    ok = MakeDirs(git.get(), {"refs/remotes", "refs/remotes/origin"}) &&
         PutNew(git.get(), "refs/remotes/origin/HEAD", *files.origin_head);
  }
  // HEAD last: until it is there, git does not take the directory for a repository.
  return ok && PutNew(git.get(), "HEAD", files.head) ? 0 : 1;
}

}  // namespace

std::optional<BorrowingGitDir> RenderBorrowingGitDir(const CacheRefs& refs) {
  BorrowingGitDir dir;
  std::vector<std::pair<std::string, std::string>> lines;  // (refname, id)
  std::string branch;                                      // HEAD's, when it is one
  if (refs.head.starts_with("ref: " + std::string(kHeads))) {
    branch = refs.head.substr(5 + kHeads.size());
  } else if (refs.head.size() != kSha1Hex) {
    return std::nullopt;
  }
  std::string head_id = branch.empty() ? refs.head : "";
  for (const auto& [id, name] : refs.refs) {
    if (id.size() != kSha1Hex) return std::nullopt;
    if (name.starts_with(kHeads)) {
      const std::string short_name = name.substr(kHeads.size());
      lines.emplace_back("refs/remotes/origin/" + short_name, id);
      if (short_name == branch) {
        lines.emplace_back(name, id);
        head_id = id;
      }
    } else {
      lines.emplace_back(name, id);
    }
  }
  // Git reads a packed-refs file that says "sorted" by bisection.
  std::sort(lines.begin(), lines.end());
  dir.packed_refs = "# pack-refs with: sorted \n";
  for (const auto& [name, id] : lines) dir.packed_refs += fmt::format("{} {}\n", id, name);
  dir.head = refs.head + "\n";
  if (!branch.empty() && !head_id.empty()) {
    dir.origin_head = fmt::format("ref: refs/remotes/origin/{}\n", branch);
  }
  dir.checkout = !head_id.empty();
  return dir;
}

base::Status WriteBorrowingClone(const std::string& cache, const BorrowingGitDir& files, int ws_fd,
                                 const RunAsIds& ids, const HostGitOptions& git_options,
                                 int* stopped_by) {
  auto written = RunInChildAs(ids, [&] { return WriteGitDir(ws_fd, cache, files); });
  if (!written) return written.error();
  if (!WIFEXITED(*written) || WEXITSTATUS(*written) != 0) {
    return base::Error::Message("can't write the clone's git directory");
  }
  if (!files.checkout) return {};
  auto checkout = RunHostGit(ids, ws_fd, {"read-tree", "-u", "--reset", "HEAD"}, git_options);
  if (!checkout) return checkout.error();
  *stopped_by = checkout->stopped_by;
  if (checkout->stopped_by == 0 && checkout->exit_code != 0) {
    return base::Error::Message(
        fmt::format("git read-tree failed: {}", GitComplaintLine(checkout->errors)));
  }
  return {};
}

}  // namespace sbx::dispatch
