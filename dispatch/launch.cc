#include "dispatch/launch.h"

#include <optional>

#include "dispatch/host/namespace_preflight.h"
#include "dispatch/plan/broker_setup.h"
#include "dispatch/terminal/terminal.h"

namespace sbx::dispatch {

// Launch: the plan started through its backend, with the caller's stdio hidden from the
// sandbox meanwhile when the agent gets a terminal of its own.
base::Result<std::unique_ptr<runtime::SandboxProcess>> Launch(const DispatchRequest& request,
                                                              TtySession* tty,
                                                              const runtime::Plan& plan) {
  std::optional<CallerStdioHidden> hidden;
  if (tty != nullptr) {
    auto swapped = tty->HideCallerStdio();
    if (!swapped) return swapped.error();
    hidden.emplace(std::move(*swapped));
  }
  const auto backend = request.backend == DispatchBackend::kNative
                           ? runtime::NativeBackend()
                           : runtime::BwrapBackend(request.bwrap_path);
  std::optional<DumpableWhileCloning> dumpable;  // the native child's uid map is ours to write
  if (request.backend == DispatchBackend::kNative) dumpable.emplace();
  auto sandbox = backend->Start(plan);
  dumpable.reset();
  hidden.reset();
  if (!sandbox) {
    // A refused namespace, mount or /proc comes back in the kernel's words: name the step
    // and point to doctor instead.
    if (auto st = CheckNamespacesAllowed(); !st) return st.error();
    return sandbox.error();
  }
  return sandbox;
}

}  // namespace sbx::dispatch
