#include "dispatch/host/prepare.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>

#include <fmt/format.h>

#include "base/safe_path.h"
#include "dispatch/git/object_cache.h"
#include "dispatch/git/object_cache_clone.h"
#include "dispatch/git/workspace.h"
#include "dispatch/host/dir.h"
#include "dispatch/host/lock.h"
#include "dispatch/host/workspace_lock.h"
#include "dispatch/sys/caller_stderr.h"
#include "netns/hosts.h"

namespace sbx::dispatch {
namespace {

std::string RealPath(const std::string& path) {
  char resolved[PATH_MAX];
  return ::realpath(path.c_str(), resolved) != nullptr ? std::string(resolved) : path;
}

// What --repo's flags ask of the clone beyond `git clone`.
CloneWishes CloneWishesOf(const DispatchRequest& request) {
  return {.rev = request.rev,
          .uncommitted = request.include_untracked     ? UncommittedMode::kUntracked
                         : request.include_uncommitted ? UncommittedMode::kTracked
                                                       : UncommittedMode::kLeave};
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

std::vector<std::string> PresetEndpoints(const DispatchRequest& request) {
  if (request.no_default_allow) return {};
  AgentProfile profile = ProfileFor(request.agent);
  std::vector<std::string> endpoints;
  if (!profile.default_endpoint.empty()) endpoints.push_back(profile.default_endpoint);
  endpoints.insert(endpoints.end(), profile.extra_endpoints.begin(), profile.extra_endpoints.end());
  if (request.agent_telemetry) {
    endpoints.insert(endpoints.end(), profile.telemetry_endpoints.begin(),
                     profile.telemetry_endpoints.end());
  }
  return endpoints;
}

base::Result<std::vector<relay::Route>> ParseDispatchRoutes(const DispatchRequest& request) {
  std::vector<std::string> specs = request.allow;
  for (const std::string& endpoint : PresetEndpoints(request)) {
    // An --allow of the same host (to a stand-in, another kind) takes its place.
    bool named = std::any_of(specs.begin(), specs.end(), [&](const std::string& s) {
      return s == endpoint || s.starts_with(endpoint + ":") || s.starts_with(endpoint + "=") ||
             s.starts_with(endpoint + ",");
    });
    if (!named) specs.push_back(endpoint);
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
      return route.error().WithContext("--allow " + specs[i]);
    }
    hosts.push_back({route->host, route->port});
    routes.push_back(std::move(*route));
  }
  if (auto st = netns::ValidateRoutes(hosts); !st) {
    return st.error().WithContext("--allow");
  }
  // One spelling everywhere: the name in the sandbox's /etc/hosts, the SNI a tls route
  // expects, the name the relay resolves, the status document and the ledger.
  for (relay::Route& route : routes) {
    auto name = netns::NormalizeHostname(route.host);
    if (!name) return name.error().WithContext("--allow");
    route.host = std::move(*name);
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

namespace {

// --workspace-root made absolute, or the caller's default.
base::Result<std::string> WorkspaceRootPath(const DispatchRequest& request, bool root_caller) {
  if (request.workspace_root) {
    return request.workspace_root->starts_with('/') ? *request.workspace_root
                                                    : RealPath(".") + "/" + *request.workspace_root;
  }
  return DefaultWorkspaceRoot(root_caller);
}

base::Result<DispatchDirs> FillDispatchDirs(
    DispatchDirs dirs, const DispatchRequest& request, int dispatch_fd,
    const std::optional<runtime::SandboxSpec::HostIds>& run_as, int stop_fd, int* stopped_by) {
  // A directory just made in <id> and still empty is handed to the sandbox's ids through
  // its fd: the only ownership change there is, and nothing is inside yet.
  auto fresh_for_sandbox = [&](const char* name, mode_t mode) -> base::Result<std::string> {
    std::string path = dirs.made_path + "/" + name;
    auto fd = base::MakeFreshDir(dispatch_fd, name, mode, path);
    if (!fd) return fd.error();
    if (run_as && ::fchownat(fd->get(), "", run_as->uid, run_as->gid, AT_EMPTY_PATH) != 0) {
      return base::ErrnoError("Can't hand over", path);
    }
    if (std::string(name) == "workspace") {
      if (request.object_cache) {
        auto cache_root = ObjectCacheRootPath(request, run_as.has_value());
        if (!cache_root) return cache_root.error();
        std::vector<std::string> notices;
        auto borrowed =
            CloneFromObjectCache(*request.repo, *cache_root, dispatch_fd, fd->get(), run_as,
                                 &notices, {.fd = stop_fd, .stopped_by = stopped_by});
        for (const auto& line : notices) NoticeToCaller("notice: " + line);
        if (!borrowed) return borrowed.error();
        dirs.object_cache = borrowed->cache;
        dirs.object_cache_lock = std::move(borrowed->lock);
      } else if (auto st = CloneRepository(*request.repo, fd->get(), run_as, stop_fd, stopped_by);
                 !st) {
        return st.error();
      }
      auto finished = FinishClone(*request.repo, fd->get(), CloneWishesOf(request), run_as);
      if (!finished) return finished.error();
      for (const auto& line : finished->notices) NoticeToCaller("notice: " + line);
      dirs.submodules = std::move(finished->submodules);
    }
    return path;
  };
  if (request.workspace) {
    // Locked before anything of it changes: a run that finds it in use leaves it as it is.
    auto lock_root = WorkspaceRootPath(request, run_as.has_value());
    if (!lock_root) return lock_root.error();
    auto lock_it = [&](int fd) -> base::Status {
      auto locked = LockWorkspace(fd, *request.workspace, *lock_root, run_as.has_value());
      if (!locked) return locked.error();
      dirs.workspace_lock = std::move(*locked);
      return {};
    };
    auto given =
        GivenDir::Open("--workspace", *request.workspace, /*create=*/false, run_as, lock_it);
    if (!given) return given.error();
    dirs.workspace = given->path();
    dirs.given_workspace.emplace(std::move(*given));
  } else {
    auto workspace = fresh_for_sandbox("workspace", 0700);
    if (!workspace) return workspace.error();
    dirs.workspace = *workspace;
  }
  if (request.out) {
    auto given = GivenDir::Open("--out", *request.out, /*create=*/true, run_as);
    if (!given) return given.error();
    dirs.out = given->path();
    dirs.given_out.emplace(std::move(*given));
  } else {
    auto out = fresh_for_sandbox("out", 0755);
    if (!out) return out.error();
    dirs.out = *out;
  }
  return dirs;
}

}  // namespace

// --cache-root made absolute, or the caller's default.
base::Result<std::string> ObjectCacheRootPath(const DispatchRequest& request, bool root_caller) {
  if (request.cache_root) {
    return request.cache_root->starts_with('/') ? *request.cache_root
                                                : RealPath(".") + "/" + *request.cache_root;
  }
  return DefaultObjectCacheRoot(root_caller);
}

base::Result<DispatchDirs> PrepareDispatchDirs(
    const DispatchRequest& request, const std::string& id,
    const std::optional<runtime::SandboxSpec::HostIds>& run_as, int stop_fd, int* stopped_by) {
  DispatchDirs dirs;
  // <root>/<id>: only this process can write the chain down to it. For a root caller it is
  // root's, 0711, so the sandbox's ids reach their own directories in it and nothing else.
  bool root_caller = run_as.has_value();
  mode_t tree_mode = root_caller ? 0711 : 0700;
  base::UniqueFd dispatch_fd;
  base::UniqueFd root_fd;
  if (request.repo || !request.out) {
    auto root = WorkspaceRootPath(request, root_caller);
    if (!root) return root.error();
    std::string resolved;
    auto opened = base::OpenOrMakeTrustedDir(*root, tree_mode, ::geteuid(), &resolved);
    if (!opened) return opened.error();
    root_fd = std::move(*opened);
    std::string path = resolved + "/" + id;
    auto made = MakeLockedDispatchDir(root_fd.get(), id, tree_mode, path);
    if (!made) return made.error();
    dispatch_fd = std::move(*made);
    dirs.made_dir = id;
    dirs.made_path = path;
  }
  auto filled =
      FillDispatchDirs(std::move(dirs), request, dispatch_fd.get(), run_as, stop_fd, stopped_by);
  if (!filled) {
    // Nothing of a failed preparation stays: the partial clone, the empty out dir.
    dispatch_fd.reset();
    if (root_fd) (void)RemoveDispatchDir(root_fd.get(), id, run_as);
    return filled.error();
  }
  filled->root_fd = std::move(root_fd);
  filled->dir_fd = std::move(dispatch_fd);
  return filled;
}

base::Result<DispatchDirs> PlanDispatchDirs(const DispatchRequest& request, const std::string& id,
                                            bool root_caller) {
  DispatchDirs dirs;
  std::string made;
  if (request.repo || !request.out) {
    auto root = WorkspaceRootPath(request, root_caller);
    if (!root) return root.error();
    made = *root + "/" + id;
  }
  auto given = [](const std::string& path) {
    std::string absolute = path.starts_with('/') ? path : RealPath(".") + "/" + path;
    while (absolute.size() > 1 && absolute.ends_with('/')) absolute.pop_back();
    return absolute;
  };
  dirs.workspace = request.workspace ? given(*request.workspace) : made + "/workspace";
  dirs.out = request.out ? given(*request.out) : made + "/out";
  return dirs;
}

base::Result<base::UniqueFd> HostsFileFd(const std::vector<relay::Route>& routes) {
  std::vector<netns::HostRoute> hosts;
  hosts.reserve(routes.size());
  for (const auto& r : routes) hosts.push_back({r.host, r.port});
  auto text = netns::RenderHostsFile(hosts);
  if (!text) return text.error();
  // Close-on-exec: the native setup reads it in its copy of the fd table; the bwrap backend
  // clears the flag only in the process that becomes bwrap, which reads it
  // (--ro-bind-data) and closes it. No git or other program `run` starts inherits it.
  base::UniqueFd fd(::memfd_create("ateam-hosts", MFD_CLOEXEC));
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

base::Status CheckFileOutside(const std::string& flag, const std::string& file,
                              const DispatchDirs& dirs) {
  // Built whole rather than assigned: GCC 12 warns falsely (-Wrestrict) on assigning a
  // literal to a string at -O2.
  const size_t slash = file.rfind('/');
  const std::string parent = slash == std::string::npos ? std::string(".")
                             : slash == 0               ? std::string("/")
                                                        : file.substr(0, slash);
  // By inode, walking up from the directory itself: no spelling of the path (links, bind
  // mounts of the same directory) gets around it.
  base::UniqueFd dir(::open(parent.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!dir) return base::ErrnoError(flag, file);
  for (const std::string& top : {dirs.workspace, dirs.out}) {
    struct stat st {};
    if (::stat(top.c_str(), &st) != 0) return base::ErrnoError("Can't stat", top);
    auto below = base::IsDirBelow(dir.get(), st);
    if (!below) return below.error();
    if (*below) {
      return base::Error::Message(
          fmt::format("{} {}: must not be inside the sandbox's workspace or out dir", flag, file));
    }
  }
  return {};
}

}  // namespace sbx::dispatch
