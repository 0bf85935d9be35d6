#include "dispatch/prepare.h"

#include <pwd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>

#include <fmt/format.h>

#include "dispatch/workspace.h"
#include "netns/hosts.h"

namespace sbx::dispatch {
namespace {

std::string RealPath(const std::string& path) {
  char resolved[PATH_MAX];
  return ::realpath(path.c_str(), resolved) != nullptr ? std::string(resolved) : path;
}

bool IsBelow(const std::string& path, const std::string& dir) {
  return path == dir || (path.starts_with(dir) && path[dir.size()] == '/');
}

std::optional<std::string> FindInPath(const std::string& name,
                                      const std::vector<std::string>& env) {
  std::string path_value = "/usr/local/bin:/usr/bin:/bin";
  for (const auto& e : env) {
    if (e.starts_with("PATH=")) path_value = e.substr(5);
  }
  size_t start = 0;
  while (start <= path_value.size()) {
    size_t end = path_value.find(':', start);
    if (end == std::string::npos) end = path_value.size();
    std::string candidate = fmt::format("{}/{}", path_value.substr(start, end - start), name);
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return std::nullopt;
}

}  // namespace

base::Result<std::vector<relay::Route>> ParseDispatchRoutes(const DispatchRequest& request) {
  std::vector<std::string> specs = request.allow;
  AgentProfile profile = ProfileFor(request.agent);
  if (!request.no_default_allow && !profile.default_endpoint.empty()) {
    bool named = std::any_of(specs.begin(), specs.end(), [&](const std::string& s) {
      return s == profile.default_endpoint || s.starts_with(profile.default_endpoint + ":") ||
             s.starts_with(profile.default_endpoint + "=") ||
             s.starts_with(profile.default_endpoint + ",");
    });
    if (!named) specs.push_back(profile.default_endpoint);
  }
  if (specs.size() > netns::kMaxRoutes) {
    return base::Error::Message(
        fmt::format("--allow: at most {} routes (tunnel addresses "
                    "127.77.0.2-254), got {}",
                    netns::kMaxRoutes, specs.size()));
  }
  std::vector<relay::Route> routes;
  std::vector<netns::HostRoute> hosts;
  for (size_t i = 0; i < specs.size(); ++i) {
    auto route = relay::ParseRoute(specs[i], static_cast<int>(i));
    if (!route) {
      return base::Error::Message(fmt::format("--allow {}: {}", specs[i], route.error().Render()));
    }
    hosts.push_back({route->host, route->port});
    routes.push_back(std::move(*route));
  }
  if (auto st = netns::ValidateRoutes(hosts); !st) {
    return base::Error::Message(fmt::format("--allow: {}", st.error().Render()));
  }
  return routes;
}

namespace {

// --run-as ids must exist in the caller's user namespace, or nothing can be handed to them.
base::Result<std::optional<runtime::SandboxSpec::HostIds>> MappedRunAs(
    const runtime::HostFacts& host, uid_t uid, gid_t gid) {
  if (!host.MapsUid(uid) || !host.MapsGid(gid)) {
    return base::Error::Message(fmt::format(
        "--run-as {}:{}: not mapped in this user namespace (/proc/self/uid_map, gid_map); use "
        "a mapped id, or leave out --run-as to run the sandbox as yourself",
        uid, gid));
  }
  return std::optional<runtime::SandboxSpec::HostIds>{runtime::SandboxSpec::HostIds{uid, gid}};
}

}  // namespace

base::Result<std::optional<runtime::SandboxSpec::HostIds>> ResolveRunAs(
    const DispatchRequest& request, const runtime::HostFacts& host) {
  if (!host.IsRoot()) {
    if (request.run_as) return base::Error::Message("--run-as needs a root caller");
    return std::optional<runtime::SandboxSpec::HostIds>{};
  }
  if (!request.run_as) {
    // Root of a user namespace that maps only itself (a rootless container) has no id to
    // hand the sandbox to: it runs the sandbox as itself, as an unprivileged caller would.
    if (!host.MapsUid(host.overflow_uid) || !host.MapsGid(host.overflow_gid)) {
      return std::optional<runtime::SandboxSpec::HostIds>{};
    }
    return std::optional<runtime::SandboxSpec::HostIds>{
        runtime::SandboxSpec::HostIds{host.overflow_uid, host.overflow_gid}};
  }
  const std::string& who = *request.run_as;
  if (const passwd* pw = ::getpwnam(who.c_str()); pw != nullptr) {
    if (pw->pw_uid == 0) return base::Error::Message("--run-as: the sandbox must not run as root");
    return MappedRunAs(host, pw->pw_uid, pw->pw_gid);
  }
  char* end = nullptr;
  unsigned long uid = std::strtoul(who.c_str(), &end, 10);
  unsigned long gid = uid;
  bool uid_digits = end != who.c_str();
  if (uid_digits && *end == ':') {
    const char* gid_start = end + 1;
    gid = std::strtoul(gid_start, &end, 10);
    if (end == gid_start) uid_digits = false;  // "UID:" with no GID is malformed, not gid 0
  }
  // Neither id may be root's: group 0 opens root-group files as surely as uid 0 opens root's.
  if (uid_digits && *end == '\0' && (uid == 0 || gid == 0)) {
    return base::Error::Message("--run-as: the sandbox must not run as root (uid or gid 0)");
  }
  if (!uid_digits || *end != '\0' || uid > 0xfffffffeUL || gid > 0xfffffffeUL) {
    return base::Error::Message(fmt::format("--run-as: no such user, and not UID[:GID]: {}", who));
  }
  return MappedRunAs(host, static_cast<uid_t>(uid), static_cast<gid_t>(gid));
}

std::string SandboxUserName(uid_t uid) {
  if (const passwd* pw = ::getpwuid(uid); pw != nullptr) return pw->pw_name;
  return std::to_string(uid);
}

base::Result<DispatchDirs> PrepareDispatchDirs(
    const DispatchRequest& request, const std::string& id,
    const std::optional<runtime::SandboxSpec::HostIds>& run_as) {
  // A root caller's dispatches must be reachable by the ids its sandboxes run as (the bwrap
  // backend runs as them), so not below root's own 0700 home.
  std::string root = request.workspace_root.value_or(
      run_as ? std::string("/var/tmp/ateam-sandbox/dispatches") : DefaultWorkspaceRoot());
  std::string dispatch_dir = fmt::format("{}/{}", root, id);
  DispatchDirs dirs;
  auto hand_over = [&run_as](const std::string& dir) -> base::Status {
    if (!run_as || ::chown(dir.c_str(), run_as->uid, run_as->gid) == 0) return {};
    return base::ErrnoError("Can't change the owner of", dir);
  };
  if (request.workspace) {
    struct stat info {};
    if (::stat(request.workspace->c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) {
      return base::Error(errno != 0 ? errno : ENOTDIR, "--workspace", *request.workspace);
    }
    dirs.workspace = RealPath(*request.workspace);
    // Only the top: what is inside a given workspace stays as it is.
    if (auto st = hand_over(dirs.workspace); !st) return st.error();
  } else {
    auto parent = MakeDirectories(root, 0755);
    if (!parent) return parent.error();
    auto made = MakeDirectories(dispatch_dir, 0700);
    if (!made) return made.error();
    if (auto st = hand_over(*made); !st) return st.error();
    dirs.workspace = *made + "/workspace";
    if (auto st = CloneRepository(*request.repo, dirs.workspace); !st) return st.error();
    if (run_as) {
      if (auto st = ChownTree(dirs.workspace, run_as->uid, run_as->gid); !st) return st.error();
    }
  }
  auto out = MakeDirectories(request.out.value_or(dispatch_dir + "/out"), 0755);
  if (!out) return out.error();
  dirs.out = *out;
  // The sandbox's uid must be able to write its report; a directory made for this
  // dispatch is handed over whole, a given one only at its top.
  if (auto st = request.out
                    ? hand_over(dirs.out)
                    : (run_as ? ChownTree(dirs.out, run_as->uid, run_as->gid) : base::Status());
      !st) {
    return st.error();
  }
  return dirs;
}

base::Result<base::UniqueFd> HostsFileFd(const std::vector<relay::Route>& routes) {
  std::vector<netns::HostRoute> hosts;
  hosts.reserve(routes.size());
  for (const auto& r : routes) hosts.push_back({r.host, r.port});
  auto text = netns::RenderHostsFile(hosts);
  if (!text) return text.error();
  // Inheritable on purpose: under the bwrap backend, bwrap reads it (--ro-bind-data) and
  // closes it. The agent never gets it: the native backend closes every inherited fd
  // before exec, and RunDispatch closes this one as soon as the sandbox has started.
  base::UniqueFd fd(::memfd_create("ateam-hosts", 0));
  if (!fd) return base::ErrnoError("memfd_create");
  if (::write(fd.get(), text->data(), text->size()) != static_cast<ssize_t>(text->size()) ||
      ::lseek(fd.get(), 0, SEEK_SET) != 0) {
    return base::ErrnoError("writing the generated /etc/hosts");
  }
  return fd;
}

base::Result<AgentInstall> FindAgentInstall(const DispatchRequest& request,
                                            const std::vector<std::string>& host_env) {
  AgentProfile profile = ProfileFor(request.agent);
  if (profile.binary.empty()) return AgentInstall{};
  auto found = FindInPath(profile.binary, host_env);
  if (!found) {
    return base::Error::Message(
        fmt::format("--agent: '{}' is not installed (not found in PATH)", profile.binary));
  }
  AgentInstall install;
  std::vector<std::string>& binds = install.binds;
  std::string resolved = RealPath(*found);
  for (const std::string& path : {*found, resolved}) {
    if (IsBelow(path, "/usr")) continue;  // already visible read-only
    // An npm-installed agent lives inside its package: a native binary its postinstall
    // copied or linked from a platform package beside it (claude-code, opencode-ai), or a
    // script that needs its dependencies. Either way the node_modules directory holding
    // the package is what it needs: bind that, read-only.
    auto modules = path.find("/node_modules/");
    std::string bind = modules != std::string::npos ? path.substr(0, modules + 13) : path;
    if (std::find(binds.begin(), binds.end(), bind) == binds.end()) binds.push_back(bind);
  }
  // The name it was found by is bound at the same place (itself or inside its package).
  if (!IsBelow(*found, "/usr")) install.bin_dir = found->substr(0, found->rfind('/'));
  return install;
}

base::Status CheckLedgerOutside(const std::string& ledger, const DispatchDirs& dirs) {
  std::string parent =
      ledger.substr(0, ledger.rfind('/') == std::string::npos ? 0 : ledger.rfind('/'));
  std::string where = RealPath(parent.empty() ? "." : parent);
  if (IsBelow(where, dirs.workspace) || IsBelow(where, dirs.out)) {
    return base::Error::Message(
        fmt::format("--ledger {}: must not be inside the sandbox's workspace or out dir", ledger));
  }
  return {};
}

}  // namespace sbx::dispatch
