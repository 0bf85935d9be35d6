#include "dispatch/identity/hand_back.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>

#include <fmt/format.h>

#include "dispatch/identity/ownership_pass.h"

namespace sbx::dispatch {
namespace {

runtime::SandboxSpec::HostIds Caller() { return {::geteuid(), ::getegid()}; }

// The made <root>/<id>/NAME, opened from the dispatch directory's fd, never followed.
base::Result<base::UniqueFd> OpenMade(const DispatchDirs& dirs, const char* name) {
  base::UniqueFd fd(
      ::openat(dirs.dir_fd.get(), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return base::ErrnoError("Can't open", dirs.made_path + "/" + name);
  return fd;
}

base::Status Pass(int fd, const std::string& shown, const OwnershipPassOptions& options) {
  auto passed = PassOwnership(fd, options);
  if (!passed) {
    return passed.error().WithContext(fmt::format("Can't hand {} from uid {} to uid {}", shown,
                                                  options.from.uid, options.to.uid));
  }
  return {};
}

}  // namespace

base::Status LendGivenDirs(const DispatchDirs& dirs, const runtime::SandboxSpec::HostIds& leased) {
  const OwnershipPassOptions options{Caller(), leased, /*lending=*/true};
  if (dirs.given_workspace) {
    if (auto st = Pass(dirs.given_workspace->fd(), dirs.workspace, options); !st) return st;
  }
  if (dirs.given_out) {
    if (auto st = Pass(dirs.given_out->fd(), dirs.out, options); !st) return st;
  }
  return {};
}

base::Status HandBackDirs(const DispatchDirs& dirs, const runtime::SandboxSpec::HostIds& leased,
                          IdLease* lease) {
  const OwnershipPassOptions options{leased, Caller(), /*lending=*/false};
  std::vector<std::string> still_held;
  base::Status result;
  for (const auto& [given, name, path] :
       {std::tuple{&dirs.given_workspace, "workspace", &dirs.workspace},
        std::tuple{&dirs.given_out, "out", &dirs.out}}) {
    base::Status st;
    if (*given) {
      st = Pass((*given)->fd(), *path, options);
      if (!st) still_held.push_back(*path);
    } else {
      still_held.push_back(*path);  // <root>/<id> holds the lease while it exists
      auto fd = OpenMade(dirs, name);
      st = fd ? Pass(fd->get(), *path, options) : base::Status(fd.error());
    }
    if (!st && result) result = st;
  }
  if (lease != nullptr) {
    if (auto st = lease->Record(still_held); !st && result) result = st;
  }
  return result;
}

}  // namespace sbx::dispatch

namespace sbx::dispatch {

base::Result<LentDirs> LentDirs::Lend(const DispatchDirs* dirs, IdLease* lease) {
  // Recorded first: from the first file lent, a crash leaves the lease held by the paths.
  std::vector<std::string> held = {dirs->workspace, dirs->out};
  if (auto st = lease->Record(held); !st) return st.error();
  LentDirs lent(dirs, lease);
  if (auto st = LendGivenDirs(*dirs, lease->ids()); !st) return st.error();  // ~lent gives back
  return lent;
}

base::Result<LentDirs> LentDirs::LendIfLeased(const DispatchDirs* dirs, IdLease* lease) {
  if (lease == nullptr) return LentDirs(nullptr, nullptr);
  return Lend(dirs, lease);
}

LentDirs::~LentDirs() {
  try {
    if (auto st = HandBack(); !st) {
      fmt::print(stderr, "ateam-sandbox run: {}\n", st.error().Render());
    }
  } catch (...) {  // NOLINT(bugprone-empty-catch): a destructor; nothing left to report to
  }
}

base::Status LentDirs::HandBack() {
  if (dirs_ == nullptr) return {};
  const DispatchDirs* dirs = std::exchange(dirs_, nullptr);
  return HandBackDirs(*dirs, lease_->ids(), lease_);
}

}  // namespace sbx::dispatch
