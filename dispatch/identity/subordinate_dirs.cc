#include "dispatch/identity/subordinate_dirs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <vector>

#include <fmt/format.h>

#include "base/overflow_owner.h"
#include "base/safe_path.h"
#include "base/unique_fd.h"
#include "dispatch/identity/subordinate.h"
#include "dispatch/sys/subordinate_env.h"

namespace sbx::dispatch {
namespace {

std::string Absolute(const std::string& path) {
  if (path.starts_with('/')) return path;
  char cwd[PATH_MAX];
  if (::getcwd(cwd, sizeof cwd) == nullptr) return "/" + path;
  return fmt::format("{}/{}", cwd, path);
}

// The directories on the way to the places checked, and the host root ones among them.
class HostDirWalk {
 public:
  explicit HostDirWalk(uid_t caller) : caller_(caller) {}

  // Checks every existing directory from / down `path` (as written, and again as realpath
  // gives it, so a symlink on the way does not hide where it leads); stops at the first
  // component that is missing or not a directory.
  base::Status Check(const std::string& path) {
    std::string deepest;
    SBX_ASSIGN_OR_RETURN(deepest, Walk(Absolute(path)));
    char real[PATH_MAX];
    if (::realpath(deepest.c_str(), real) == nullptr) return {};
    if (auto walked = Walk(real); !walked) return walked.error();
    return {};
  }

  [[nodiscard]] std::string RootDirsText() const {
    std::string text;
    for (const base::DirIdentity& dir : root_dirs_) {
      text += fmt::format("{}{}.{}", text.empty() ? "" : ",", dir.dev, dir.ino);
    }
    return text;
  }

 private:
  // The deepest directory reached.
  base::Result<std::string> Walk(const std::string& path) {
    std::string prefix = "/";
    std::string reached = "/";
    size_t start = 1;
    while (true) {
      base::UniqueFd fd(::open(prefix.c_str(), O_PATH | O_CLOEXEC));
      struct stat st {};
      if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISDIR(st.st_mode)) return reached;
      if (auto ok = base::CheckDirStat(st, {caller_, false, /*as_ancestor=*/true}, prefix); !ok) {
        return ok.error();
      }
      // Root's, or (when this run is itself in a namespace that does not map host root)
      // overflow-owned and accepted as root's by the check above.
      if (st.st_uid != caller_) Vouch(st);
      reached = prefix;
      if (start >= path.size()) return reached;
      size_t end = path.find('/', start);
      if (end == std::string::npos) end = path.size();
      if (end > start)
        prefix = fmt::format("{}{}{}", prefix == "/" ? "" : prefix, "/",
                             path.substr(start, end - start));
      start = end + 1;
    }
  }

  void Vouch(const struct stat& st) {
    const bool known = std::any_of(root_dirs_.begin(), root_dirs_.end(), [&](const auto& dir) {
      return dir.dev == st.st_dev && dir.ino == st.st_ino;
    });
    if (!known) root_dirs_.push_back({st.st_dev, st.st_ino});
  }

  uid_t caller_;
  std::vector<base::DirIdentity> root_dirs_;
};

// The clone of --repo runs as a subordinate uid: to it the source is somebody else's, so
// every directory on the way needs the others' search bit and the source its read bit too.
base::Status CheckSourceReadable(const std::string& repo) {
  char real[PATH_MAX];
  if (::realpath(repo.c_str(), real) == nullptr) return {};  // the clone says what is wrong
  std::string path = real;
  for (std::string dir = path;; dir = dir.substr(0, std::max<size_t>(dir.rfind('/'), 1))) {
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0) return {};
    const mode_t needed = dir == path ? (S_IROTH | S_IXOTH) : S_IXOTH;
    if (S_ISDIR(st.st_mode) && (st.st_mode & needed) != needed) {
      return base::Error::Message(fmt::format(
          "--identity subuid: --repo {}: the clone runs as a subordinate uid, to which {} "
          "(mode {:04o}) is closed; give a source others can {} (e.g. a copy below /var/tmp)",
          repo, dir, st.st_mode & 07777, dir == path ? "read" : "reach"));
    }
    if (dir == "/") return {};
  }
}

}  // namespace

base::Result<std::string> CheckSubordinateHostDirs(const DispatchRequest& request,
                                                   uid_t caller_uid) {
  // The default dispatch root is walked even for --workspace: its parent holds the
  // workspace locks and the object caches.
  std::vector<std::string> places = {"/tmp", SubordinateWorkspaceRoot(caller_uid)};
  if (auto leases = SubordinateLeaseDir()) places.push_back(*leases);
  for (const auto* option : {&request.workspace_root, &request.cache_root, &request.workspace,
                             &request.out, &request.ledger, &request.patch, &request.id_file,
                             &request.status_json, &request.broker_ca}) {
    if (*option) places.push_back(**option);
  }
  for (const std::string& credential : request.credentials) {
    places.push_back(credential.substr(0, credential.find(':')));
  }
  HostDirWalk walk(caller_uid);
  for (const std::string& place : places) {
    if (auto ok = walk.Check(place); !ok) {
      return base::Error::Message(
          fmt::format("--identity subuid: {} (another user could replace what run makes below "
                      "it)",
                      ok.error().Render()));
    }
  }
  if (request.repo) {
    if (auto ok = CheckSourceReadable(*request.repo); !ok) return ok.error();
  }
  return walk.RootDirsText();
}

void TrustOnlyVouchedHostRootDirs() { base::RestrictOverflowAncestors(VouchedHostRootDirs()); }

}  // namespace sbx::dispatch
