// The bwrap backend's renderer: a Plan written back as bubblewrap options, so the real
// /usr/bin/bwrap builds the same sandbox our native executor builds from the same plan.
// Pure functions (no system calls except libcap's name table); the launcher that hands the
// result to bwrap is bwrap_backend.h.
//
// What the rendering relies on (each point keeps the two backends equal):
//  * Namespaces come from plan.clone_flags, so every -try has already been resolved
//    against the host. --unshare-user is written whenever CLONE_NEWUSER is set, also for
//    an unprivileged caller (for whom bwrap implies it).
//  * --uid/--gid only when the sandbox id differs from the caller's id, which the plan
//    itself records: the `outside` id of the first user-namespace mapping, or the sandbox
//    id when there is no user namespace. The nested namespace of --dev is bwrap's own
//    decision from --dev and --uid, so it needs no option.
//  * Capabilities: the kept set the plan applies is written as `--cap-drop ALL` then one
//    `--cap-add CAP_X` per capability (`--cap-add ALL` for every one), which yields the
//    same set in bwrap from any starting set. Nothing is written when capset is skipped
//    (root caller without cap options) nor for an unprivileged plan keeping nothing (that
//    is bwrap's default there).
//  * The environment is made exact with --clearenv and one --setenv per plan.env entry;
//    bwrap applies them while parsing, so its PATH lookup of the command and its $HOME
//    fallback for the working directory see the plan's environment, as the native child.
//  * --chdir only when the plan's directory was explicit: otherwise bwrap's own fallback
//    (its cwd, then $HOME, then /) reproduces plan.cwd_candidates, provided bwrap runs in
//    the caller's working directory.
//  * --argv0 when argv[0] differs from exec_file. bwrap 0.8.0 (Debian 12) does not know
//    --argv0 (0.9.0) nor the overlay options (0.11.0) and fails with "Unknown option": the
//    rendering is still written, so the difference shows up as bwrap's own error.
//
//  * --userns, --userns2 and --pidns are written with the caller's fd numbers: bwrap
//    inherits those fds like every other fd the caller passes. With --pidns the
//    --unshare-pid of a nested pid namespace is written too (plan.joined.new_pidns_below),
//    and with --userns the ids are the plan's joined switch_uid/switch_gid.
//
// Not representable, because the Plan does not carry them: --exec-label/--file-label.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "runtime/plan.h"

namespace sbx::runtime {

// File descriptor numbers, chosen by whoever will start bwrap, for data the backend itself
// must hand over (the caller's own fds in the plan are rendered as they are).
struct BwrapFdNumbers {
  // [i] carries plan.seccomp_programs[i] (one --add-seccomp-fd each). A program with no
  // number here renders as the placeholder "<seccomp-program-I>", which bwrap would
  // reject: such a rendering is for display (--dry-run) only.
  std::vector<int> seccomp_programs;
};

// The bwrap options for `plan`, without "bwrap" itself and without the command: every
// element starts with '-' or is the argument of the option before it.
std::vector<std::string> RenderBwrapOptions(const Plan& plan, const BwrapFdNumbers& fds = {});

// RenderBwrapOptions(plan, fds) followed by "--", plan.exec_file and plan.argv[1..].
std::vector<std::string> RenderBwrapArgs(const Plan& plan, const BwrapFdNumbers& fds = {});

// One line a POSIX shell runs as the equivalent bwrap command (for --dry-run):
// `bwrap_path` and every element of RenderBwrapArgs, each quoted with ShellQuote.
std::string RenderBwrapCommandLine(const Plan& plan, std::string_view bwrap_path = "bwrap",
                                   const BwrapFdNumbers& fds = {});

// `word` as one shell word: unchanged when it has only characters no shell treats
// specially, else in single quotes (a ' inside becomes '\''); "" becomes ''.
std::string ShellQuote(std::string_view word);

// The name bwrap's --cap-add accepts for capability `cap`: libcap's name upper-cased
// ("CAP_NET_ADMIN"), or the decimal number when libcap does not know it.
std::string BwrapCapName(int cap);

}  // namespace sbx::runtime
