// `run`'s own lines to its caller's stderr. The caller's stderr is not `run`'s to trust: it
// may be closed, a pipe nobody reads (`run ... 2>&1 | sleep 12`, which the agent may have
// filled already) or a reader that went away. A line that cannot be written now is dropped:
// what `run` says never changes its exit code, its deadline or its status document.
#pragma once

#include <string>
#include <string_view>

namespace sbx::dispatch {

// `text` safe to show on a terminal: control characters (C0, DEL, C1) and bytes that are
// not well-formed UTF-8 become the text \xHH, so a name the agent chose cannot move the
// cursor, retitle the window or hide a line. A backslash stays as it is.
std::string EscapeForTerminal(std::string_view text);

// Writes "ateam-sandbox run: <line>\n" to fd 2, the line escaped (EscapeForTerminal). Waits for
// room at most a short while per line and, once one wait ran out, never again (the reader is gone
// for good); EPIPE never raises SIGPIPE; nothing throws.
void SayToCaller(std::string_view line);

// A notice: what the caller may want to know but can do without (the dispatch's id and
// directories, a cgroup this host does not delegate, what a clone left out). Said as
// SayToCaller does, unless `run -q` set notices quiet.
void NoticeToCaller(std::string_view line);
void SetNoticesQuiet(bool quiet);
bool NoticesQuiet();  // also keeps git's clone progress off the caller's terminal

// Points fds 0, 1 and 2 at /dev/null when the caller started us with one closed, so no
// descriptor `run` opens later (a status file, a patch) takes that number and receives
// what is meant for the caller.
void FillClosedStandardFds();

}  // namespace sbx::dispatch
