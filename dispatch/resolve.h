// Resolve, the first step of a dispatch: every check of the request and every read of the
// world it needs (the host's facts, the caller's environment, the agent's install, the
// credentials file, each route's upstream address), once. Nothing is created; bad input
// ends here with one line.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "dispatch/host/prepare.h"
#include "dispatch/plan/limits.h"
#include "dispatch/request/checks.h"
#include "dispatch/request/request.h"
#include "relay/upstream.h"
#include "runtime/host_facts.h"
#include "runtime/spec.h"
#include "security/seccomp.h"

namespace sbx::dispatch {

struct ResolvedRequest {
  runtime::HostFacts host;
  DispatchRequest request;  // its paths made absolute
  // Each with its upstream pinned (upstream_override): the relays dial exactly that.
  std::vector<relay::Route> routes;
  std::optional<runtime::SandboxSpec::HostIds> run_as;
  // The agent's ids inside when they differ from run_as: a leased identity keeps the ids
  // (and sandbox_user) it resolved to here whatever its host ids (dispatch/identity/).
  std::optional<runtime::SandboxSpec::HostIds> inside_ids;
  std::vector<std::string> host_env;
  AgentInstall agent;
  DispatchLimits limits;
  std::vector<std::string> seccomp_groups;  // the relaxed ones
  security::BpfProgram seccomp;
  std::vector<CredentialsCopy> credentials;  // the --credentials files, read once
  std::string sandbox_user;                  // the agent's uid's name (USER, LOGNAME)
  int landlock_abi = 0;                      // the kernel's Landlock ABI (0: none)
};

base::Result<ResolvedRequest> Resolve(const DispatchRequest& given);

}  // namespace sbx::dispatch
