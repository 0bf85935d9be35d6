// Launch, the stage that starts a dispatch's sandbox.
#pragma once

#include <memory>

#include "base/error.h"
#include "dispatch/request/request.h"
#include "dispatch/terminal/tty_session.h"
#include "runtime/plan.h"
#include "runtime/sandbox_backend.h"

namespace sbx::dispatch {

// Launch: the plan started through its backend, with the caller's stdio hidden from the
// sandbox meanwhile when the agent gets a terminal of its own.
base::Result<std::unique_ptr<runtime::SandboxProcess>> Launch(const DispatchRequest& request,
                                                              TtySession* tty,
                                                              const runtime::Plan& plan);

}  // namespace sbx::dispatch
