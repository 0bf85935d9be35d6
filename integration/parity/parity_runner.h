// Runs one parity scenario with one backend and normalizes what came out, so that the two
// backends' results can be compared as strings. Test code, called from the test process
// only (single-threaded); every descriptor it creates is owned by an Fd and closed before
// RunBackend returns.
//
// Normalizations (each one is also listed in docs/bwrap-compat.md):
//  * usage text: the first word after `usage: ` is argv[0] as invoked, which differs by
//    construction between the two command prefixes; it becomes `<argv0>`.
//  * probe report: `ns.*` become `host` or `new` (inode numbers differ per run); without a
//    new pid namespace, pid/ppid/pgid/sid become `self`/`parent`/`host` relations and the
//    `pids` list `<host pids>` (host pid numbers differ per run).
//  * mountinfo (second run with `cat /proc/self/mountinfo`): mount ids and parent ids are
//    dropped; anonymous device numbers (major 0) become `0:*`; peer group numbers
//    (shared:N, master:N, propagate_from:N) become `N`; lines are sorted, because the native
//    backend pre-opens bind sources as detached mount clones, which allocates mount ids and
//    list positions in a different order.
//  * capture fds (--info-fd, --json-status-fd): every run of digits becomes `N` (pids and
//    namespace inodes).
#pragma once

#include <string>
#include <vector>

#include "integration/harness.h"
#include "integration/parity/scenario.h"

namespace sbx::integration::parity {

enum class Backend { kNative, kBwrap };

const char* BackendName(Backend backend);

// The command prefix for `backend`: $SBX_PARITY_NATIVE / $SBX_PARITY_BWRAP (blank-split)
// if set, else <build>/compat/bwrap and `<build>/ateam-sandbox bwrap --backend bwrap`.
Args BackendPrefix(Backend backend);

struct BackendResult {
  RunResult run;
  std::string out;     // stdout, normalized (a probe report: one `key: value` per line)
  std::string err;     // stderr, normalized (usage argv[0])
  std::string mounts;  // normalized mountinfo; empty when not collected
  std::string fd_data;
};

// (Re)creates the fixture below `dir`: dir/ (with file `f` = "fixture\n"), file (=
// "file\n"), upper/, work/, lower1/ (a), lower2/ (b). Removes anything else first.
void PopulateFixture(const std::string& dir);

// Populates the fixture, runs `scenario` with `backend` and, when the scenario is a probe
// report that exited 0 and compares kMounts, runs it again with `cat /proc/self/mountinfo`.
BackendResult RunBackend(const Scenario& scenario, Backend backend, const std::string& fixture);

std::string NormalizeReport(const std::string& text, const std::vector<std::string>& ignore);
std::string NormalizeMountinfo(const std::string& text);
std::string NormalizeUsage(const std::string& text);
std::string NormalizeDigits(const std::string& text);

}  // namespace sbx::integration::parity
