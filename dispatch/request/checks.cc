#include "dispatch/request/checks.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <string_view>

#include <fmt/format.h>

#include "base/lexical_path.h"
#include "dispatch/request/credentials_file.h"

namespace sbx::dispatch {
namespace {

// Where the runtime mounts something of its own inside the sandbox. A --ro/--rw bind on one
// of these, or on a directory above one, would hide it: the supervisor binary, the route
// sockets, /etc/hosts, the throwaway home, /proc and /dev.
constexpr std::array<std::string_view, 6> kRuntimePlaces = {
    "/run/ateam-tunnel", "/etc/hosts", "/home/ateam-sandbox", "/proc", "/dev", "/tmp"};

// `path` made absolute against `cwd`, with "." and ".." and repeated slashes folded
// lexically (the bind itself still resolves symlinks as the runtime does).
std::string Normalize(const std::string& path, const std::string& cwd) {
  std::string joined = path.starts_with('/') ? path : cwd + "/" + path;
  // An absolute path: ".." at "/" stays at "/", so there is always a result.
  std::string normalized;
  const auto parts = base::LexicalComponents(joined, /*above_top_is_error=*/false);
  for (const auto& part : *parts) normalized += "/" + part;
  return normalized.empty() ? "/" : normalized;
}

bool Covers(std::string_view outer, std::string_view inner) {
  return outer == "/" || inner == outer ||
         (inner.starts_with(outer) && inner.size() > outer.size() && inner[outer.size()] == '/');
}

base::Status CheckBindPaths(std::vector<std::string>& paths, const char* flag,
                            const std::string& cwd) {
  for (std::string& path : paths) {
    if (path.empty()) return base::Error::Message(fmt::format("{}: empty path", flag));
    std::string absolute = Normalize(path, cwd);
    for (std::string_view place : kRuntimePlaces) {
      if (Covers(absolute, place)) {
        return base::Error::Message(
            fmt::format("{} {}: would cover the sandbox's own {}; bind a directory below it", flag,
                        path, place));
      }
    }
    struct stat st {};
    if (::stat(absolute.c_str(), &st) != 0) {
      return base::Error::Message(fmt::format("{} {}: {}", flag, path, std::strerror(errno)));
    }
    path = absolute;
  }
  return {};
}

}  // namespace

CredentialsSpec SplitCredentials(const std::string& value, const AgentProfile& profile) {
  CredentialsSpec spec{value, profile.credentials_dest};
  if (auto colon = value.find(':'); colon != std::string::npos) {
    spec.source = value.substr(0, colon);
    spec.dest = value.substr(colon + 1);
  }
  return spec;
}

namespace {

// DEST relative to the home, or why it is refused: a file below the home, given relative
// to it or absolute (the path the sandbox shows, /home/ateam-sandbox/...).
base::Result<std::string> CredentialsDest(const CredentialsSpec& creds) {
  const std::string home = "/home/ateam-sandbox";
  if (creds.dest.empty()) {
    return base::Error::Message(fmt::format(
        "--credentials {}: no --agent preset names a destination; give SRC:DEST, DEST relative "
        "to the home (e.g. {}:.config/tool/token)",
        creds.source, creds.source));
  }
  std::string inside = Normalize(creds.dest, home);
  if (!Covers(home, inside) || inside == home || creds.dest.ends_with('/')) {
    return base::Error::Message(fmt::format(
        "--credentials {}: DEST '{}' must be a file inside the home, relative to it or below {}",
        creds.source, creds.dest, home));
  }
  return inside.substr(home.size() + 1);
}

}  // namespace

base::Status CheckRequestPaths(DispatchRequest& request, const std::string& cwd, bool root_caller,
                               std::vector<CredentialsCopy>* credentials) {
  if (auto st = CheckBindPaths(request.ro_paths, "--ro", cwd); !st) return st;
  if (auto st = CheckBindPaths(request.rw_paths, "--rw", cwd); !st) return st;
  std::vector<std::string> checked;
  std::vector<CredentialsCopy> copies;
  for (const std::string& value : request.credentials) {
    CredentialsSpec creds = SplitCredentials(value, ProfileFor(request.agent));
    auto dest = CredentialsDest(creds);
    if (!dest) return dest.error();
    if (std::any_of(copies.begin(), copies.end(),
                    [&](const CredentialsCopy& c) { return c.dest == *dest; })) {
      return base::Error::Message(fmt::format(
          "--credentials {}: a second file for ~/{}; give each its own DEST", creds.source, *dest));
    }
    // Read once, here, before anything is created: the sandbox's copy is made of this
    // content (dispatch/host/sandbox_files.h).
    std::string source = Normalize(creds.source, cwd);
    auto content = ReadCredentialsFile(source, creds.source, root_caller);
    if (!content) return content.error();
    copies.push_back({*dest, std::move(*content)});
    checked.push_back(source + ":" + *dest);
  }
  request.credentials = std::move(checked);
  if (credentials != nullptr) *credentials = std::move(copies);
  return {};
}

base::Status CheckHostMountPoints(const std::string& etc) {
  const std::string hosts = etc + "/hosts";
  struct stat st {};
  if (::stat(hosts.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return base::Error::Message(fmt::format(
        "this host has no {} (a regular file), which the sandbox's generated one is mounted "
        "over: create it (an empty file will do), e.g. touch {}",
        hosts, hosts));
  }
  return {};
}

}  // namespace sbx::dispatch
