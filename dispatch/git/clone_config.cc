#include "dispatch/git/clone_config.h"

#include <sys/stat.h>

#include <climits>
#include <cstdlib>

#include <fmt/format.h>

#include "dispatch/git/git_dir.h"
#include "dispatch/git/git_walk.h"
#include "dispatch/sys/at_file.h"

namespace sbx::dispatch {
std::string QuoteGitConfigValue(const std::string& value) {
  std::string out = "\"";
  for (char c : value) {
    if (c == '\\' || c == '"') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string CloneOriginUrl(const std::string& repo) {
  struct stat st {};
  char resolved[PATH_MAX];
  if (::stat(repo.c_str(), &st) == 0 && S_ISDIR(st.st_mode) &&
      ::realpath(repo.c_str(), resolved) != nullptr) {
    return resolved;
  }
  return repo;
}

std::string CloneGitConfig(const std::string& origin_url, const std::string& branch, bool sha256) {
  std::string text =
      sha256 ? "[core]\n\trepositoryformatversion = 1\n" : std::string(kPlainGitConfig);
  if (sha256) {
    text += "\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n";
    text += "[extensions]\n\tobjectformat = sha256\n";
  }
  if (!origin_url.empty() && origin_url.find('\n') == std::string::npos) {
    text += fmt::format("[remote \"origin\"]\n\turl = {}\n", QuoteGitConfigValue(origin_url));
    text += "\tfetch = +refs/heads/*:refs/remotes/origin/*\n";
    if (!branch.empty()) {
      text += fmt::format("[branch {}]\n\tremote = origin\n\tmerge = {}\n",
                          QuoteGitConfigValue(branch), QuoteGitConfigValue("refs/heads/" + branch));
    }
  }
  return text;
}

std::string CloneHeadCommit(int gitfd, const std::string& branch) {
  auto trim = [](std::string text) {
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    return text;
  };
  std::string ref = "refs/heads/" + branch;
  auto slash = ref.rfind('/');
  if (auto dir = OpenDirBeneath(gitfd, ref.substr(0, slash))) {
    if (auto loose = ReadFileAt(dir->get(), ref.substr(slash + 1), 4096)) {
      std::string id = trim(*loose);
      if (IsHexId(id)) return id;
    }
  }
  auto packed = ReadFileAt(gitfd, "packed-refs");
  if (!packed) return "";
  size_t start = 0;
  while (start < packed->size()) {
    size_t end = packed->find('\n', start);
    if (end == std::string::npos) end = packed->size();
    std::string line = packed->substr(start, end - start);
    start = end + 1;
    auto space = line.find(' ');
    if (space != std::string::npos && line.substr(space + 1) == ref &&
        IsHexId(line.substr(0, space))) {
      return line.substr(0, space);
    }
  }
  return "";
}

}  // namespace sbx::dispatch
