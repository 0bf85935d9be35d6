#include "dispatch/git/git_walk.h"

#include <dirent.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <climits>

#include <fmt/format.h>

#include "base/lexical_path.h"

namespace sbx::dispatch {

std::string JoinRel(const std::string& dir, const std::string& name) {
  return dir.empty() ? name : dir + "/" + name;
}

std::string BaseNameOf(const std::string& rel) {
  auto slash = rel.rfind('/');
  return slash == std::string::npos ? rel : rel.substr(slash + 1);
}

bool IsHexId(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
  });
}

bool LooksLikeBareRepository(int dirfd, const std::vector<DirEntry>& entries) {
  auto has = [&](const char* n) {
    return std::binary_search(entries.begin(), entries.end(), DirEntry{n, 0});
  };
  if (!has("HEAD") || !has("objects") || !has("refs")) return false;
  auto head = ReadFileAt(dirfd, "HEAD", 4096);
  if (!head) return false;
  std::string text = *head;
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text.starts_with("ref: ") || (IsHexId(text) && (text.size() == 40 || text.size() == 64));
}

bool WalkBudget::Spend(size_t listed) {
  if (ended == End::kStopped || ended == End::kTooMany) return false;
  entries += listed;
  if (entries > max_entries) {
    ended = End::kTooMany;
    return false;
  }
  pollfd stop{.fd = stop_fd, .events = POLLIN, .revents = 0};
  if (stop_fd >= 0 && ::poll(&stop, 1, 0) > 0) {
    ended = End::kStopped;
    return false;
  }
  return true;
}

std::string WalkBudget::Unfinished() const {
  switch (ended) {
    case End::kDone:
      return "";
    case End::kStopped:
      return "stopped by a stop signal or the deadline before it looked at everything";
    case End::kTooMany:
      return fmt::format("more than {} names to look through", max_entries);
    case End::kTooDeep:
      return fmt::format("directories deeper than {} levels", kMaxGitWalkDepth);
  }
  return "";
}

void WalkGitMetadata(int dirfd, const std::string& rel, dev_t dev, int depth,
                     const WalkCallbacks& cb, WalkBudget* budget) {
  if (!budget->Spend(0)) return;
  auto entries = ListDirTypedAt(dirfd);
  if (!entries || !budget->Spend(entries->size())) return;
  if (cb.bare_layout && LooksLikeBareRepository(dirfd, *entries)) cb.bare_layout(dirfd, rel);
  for (const auto& [name, type] : *entries) {
    // Only directories and .git entries matter: no stat for every file of a large tree.
    if (name != ".git" && type != DT_DIR && type != DT_UNKNOWN) continue;
    auto st = StatAt(dirfd, name);
    if (!st) continue;
    std::string child = JoinRel(rel, name);
    if (name == ".git") {
      cb.git_entry(dirfd, child, *st);
      continue;
    }
    if (!S_ISDIR(st->st_mode) || st->st_dev != dev) continue;
    if (depth >= kMaxGitWalkDepth) {
      if (budget->ended == WalkBudget::End::kDone) budget->ended = WalkBudget::End::kTooDeep;
      if (cb.too_deep) cb.too_deep(child);
      continue;
    }
    auto sub = OpenDirAt(dirfd, name);
    if (sub) WalkGitMetadata(sub->get(), child, dev, depth + 1, cb, budget);
    if (budget->ended == WalkBudget::End::kStopped || budget->ended == WalkBudget::End::kTooMany) {
      return;
    }
  }
}

std::optional<GitPointer> ReadPointer(int dirfd, const std::string& rel, const struct stat& st) {
  GitPointer pointer{rel, S_ISLNK(st.st_mode), ""};
  std::string name = BaseNameOf(rel);
  if (pointer.symlink) {
    char target[PATH_MAX];
    ssize_t n = ::readlinkat(dirfd, name.c_str(), target, sizeof(target));
    if (n < 0) return std::nullopt;
    pointer.content.assign(target, static_cast<size_t>(n));
    return pointer;
  }
  if (!S_ISREG(st.st_mode)) return std::nullopt;
  auto content = ReadFileAt(dirfd, name, 1 << 16);
  if (!content) return std::nullopt;
  pointer.content = std::move(*content);
  return pointer;
}

std::optional<std::string> PointerTarget(const GitPointer& pointer, const std::string& workspace) {
  std::string target = pointer.content;
  if (!pointer.symlink) {
    if (!target.starts_with("gitdir: ")) return std::nullopt;
    target = target.substr(8);
    while (!target.empty() && (target.back() == '\n' || target.back() == '\r')) target.pop_back();
  }
  std::string joined;
  if (target.starts_with(workspace + "/")) {
    joined = target.substr(workspace.size() + 1);
  } else if (!target.starts_with('/')) {
    auto slash = pointer.rel.rfind('/');
    joined = JoinRel(slash == std::string::npos ? "" : pointer.rel.substr(0, slash), target);
  } else {
    return std::nullopt;
  }
  // Lexically: "a/../b" is "b"; climbing above the workspace is outside it.
  auto parts = base::LexicalComponents(joined, /*above_top_is_error=*/true);
  if (!parts || parts->empty()) return std::nullopt;
  std::string rel;
  for (const auto& part : *parts) rel = JoinRel(rel, part);
  return rel;
}

}  // namespace sbx::dispatch
