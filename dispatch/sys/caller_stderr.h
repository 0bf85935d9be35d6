// `run`'s own lines to its caller's stderr. The caller's stderr is not `run`'s to trust: it
// may be closed, a pipe nobody reads (`run ... 2>&1 | sleep 12`, which the agent may have
// filled already) or a reader that went away. A line that cannot be written now is dropped:
// what `run` says never changes its exit code, its deadline or its status document.
#pragma once

#include <string_view>

namespace sbx::dispatch {

// Writes "ateam-sandbox run: <line>\n" to fd 2. Waits for room at most a short while per
// line and, once one wait ran out, never again (the reader is gone for good); EPIPE never
// raises SIGPIPE; nothing throws.
void SayToCaller(std::string_view line);

// Points fds 0, 1 and 2 at /dev/null when the caller started us with one closed, so no
// descriptor `run` opens later (a status file, a patch) takes that number and receives
// what is meant for the caller.
void FillClosedStandardFds();

}  // namespace sbx::dispatch
