#include "dispatch/host/sandbox_files.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include <fmt/format.h>

#include "base/safe_path.h"
#include "dispatch/request/checks.h"
#include "dispatch/request/credentials_file.h"

namespace sbx::dispatch {
namespace {

bool IsBelow(const std::string& path, const std::string& dir) {
  return path == dir || (path.starts_with(dir) && path[dir.size()] == '/');
}

// A memfd holding `data`, sealed against every change (nothing can write, grow or shrink
// it, nor lift the seals), read offset 0. Close-on-exec: the native sandbox setup reads it
// in its own copy of the fd table, and the bwrap backend clears the flag only in the
// process that becomes bwrap.
base::Result<base::UniqueFd> SealedMemfd(const char* name, std::string_view data) {
  base::UniqueFd fd(::memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd) return base::ErrnoError("memfd_create", name);
  while (!data.empty()) {
    ssize_t n = ::write(fd.get(), data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return base::ErrnoError("Can't write the memfd", name);
    data.remove_prefix(static_cast<size_t>(n));
  }
  if (::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) !=
          0 ||
      ::lseek(fd.get(), 0, SEEK_SET) != 0) {
    return base::ErrnoError("Can't seal the memfd", name);
  }
  return fd;
}

// The host's /etc/resolv.conf can be covered when it is, or leads to, a regular file in
// what the sandbox shows at the same place (/etc, /usr). A link elsewhere (systemd-resolved's
// /run/systemd/resolve/stub-resolv.conf) dangles inside, which gives the resolver the same
// fallback as the generated file; bwrap could not bind over it either.
bool CanCoverResolvConf() {
  char real[PATH_MAX];
  if (::realpath("/etc/resolv.conf", real) == nullptr) return false;
  const std::string resolved = real;
  struct stat st {};
  return (IsBelow(resolved, "/etc") || IsBelow(resolved, "/usr")) && ::stat(real, &st) == 0 &&
         S_ISREG(st.st_mode);
}

}  // namespace

std::string SandboxResolvConf() {
  return "# ateam-sandbox: no DNS server can be reached from this sandbox. The names it may\n"
         "# reach (the --allow routes) are in /etc/hosts; any other name fails at once: the\n"
         "# resolver falls back to 127.0.0.1, where nothing listens.\n"
         "options attempts:1 timeout:1\n";
}

base::Result<SandboxFiles> SandboxFiles::Make(const std::vector<CredentialsCopy>& credentials,
                                              const std::vector<HomeFile>& agent_state) {
  SandboxFiles files;
  for (const CredentialsCopy& copy : credentials) {
    auto fd = SealedMemfd("ateam-credentials", copy.content);
    if (!fd) return fd.error();
    files.credentials.push_back({copy.dest, std::move(*fd)});
  }
  for (const HomeFile& file : agent_state) {
    auto fd = SealedMemfd("ateam-agent-state", file.content);
    if (!fd) return fd.error();
    files.agent_state.push_back({file.dest, std::move(*fd)});
  }
  if (CanCoverResolvConf()) {
    auto fd = SealedMemfd("ateam-resolv.conf", SandboxResolvConf());
    if (!fd) return fd.error();
    files.resolv_conf = std::move(*fd);
  }
  return files;
}

std::vector<HomeFd> SandboxFiles::Borrow(const std::vector<Fd>& files) {
  std::vector<HomeFd> fds;
  fds.reserve(files.size());
  for (const Fd& file : files) fds.push_back({file.dest, file.fd.get()});
  return fds;
}

}  // namespace sbx::dispatch
