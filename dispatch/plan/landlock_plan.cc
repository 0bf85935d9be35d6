#include "dispatch/plan/landlock_plan.h"

#include <fmt/format.h>

#include "dispatch/plan/layout.h"

namespace sbx::dispatch {

base::Result<security::LandlockPolicy> DispatchLandlockPolicy(const DispatchRequest& request,
                                                              const std::string& workspace,
                                                              const std::string& out) {
  security::LandlockPolicy policy;
  for (const std::string& part : request.landlock_allow) {
    if (part == "fs") {
      policy.fs = false;
    } else if (part == "net") {
      policy.net = false;
    } else if (part == "scope") {
      policy.scope = false;
    } else {
      return base::Error::Message(
          fmt::format("unknown --landlock-allow part \"{}\" (known: fs, net, scope)", part));
    }
  }
  // A sandbox the agent builds itself writes its uid_map and mounts, and a Landlock domain
  // that restricts files refuses both: nested user namespaces come without the fs part.
  if (request.allow_nested_userns) policy.fs = false;
  // /dev/shm is the sandbox's own, like /tmp: POSIX shared memory and semaphores live there.
  policy.writable = {workspace, kSandboxHome, "/tmp", "/dev/shm"};
  if (out != workspace) policy.writable.push_back(out);
  // A relative --rw destination lands below the sandbox's root, as for every bind.
  for (const std::string& path : request.rw_paths) {
    policy.writable.push_back(path.starts_with('/') ? path : "/" + path);
  }
  // The supervisor adds these itself; here they complete the printed description.
  for (const char* device : security::kLandlockDeviceFiles) policy.devices.emplace_back(device);
  policy.stdio_fds = {0, 1, 2};
  return policy;
}

void AddLandlockToSupervisorArgs(const security::LandlockPolicy& policy,
                                 contract::SupervisorArgs* args) {
  std::vector<std::string> parts;
  if (policy.fs) parts.emplace_back("fs");
  if (policy.net) parts.emplace_back("net");
  if (policy.scope) parts.emplace_back("scope");
  if (parts.empty()) return;
  args->landlock = fmt::format("{}", fmt::join(parts, ","));
  if (policy.fs) args->landlock_write = policy.writable;
}

}  // namespace sbx::dispatch
