// The Landlock layer of a dispatch (security/landlock.h): which parts apply (all three
// unless relaxed with --landlock-allow), the paths the agent may write to as the sandbox
// shows them, and the supervisor arguments that carry it into the sandbox.
#pragma once

#include <string>
#include <vector>

#include "base/error.h"
#include "contract/supervisor_contract.h"
#include "dispatch/request/request.h"
#include "security/landlock.h"

namespace sbx::dispatch {

// The parts --landlock-allow can relax, in order.
inline constexpr const char* kLandlockPartNames[] = {"fs", "net", "scope"};

// The agent's policy without the ports (the caller adds the routes'): writes beneath the
// workspace, the out dir, the home, /tmp, /dev/shm and every --rw path, and to the device
// files and stdio (which the supervisor adds by itself). An unknown --landlock-allow part is
// an Error.
base::Result<security::LandlockPolicy> DispatchLandlockPolicy(const DispatchRequest& request,
                                                              const std::string& workspace,
                                                              const std::string& out);

// The supervisor's `--landlock fs,net,scope --landlock-write PATH ...` into `args`;
// nothing when every part is relaxed.
void AddLandlockToSupervisorArgs(const security::LandlockPolicy& policy,
                                 contract::SupervisorArgs* args);

}  // namespace sbx::dispatch
