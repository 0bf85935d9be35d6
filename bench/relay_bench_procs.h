// Child processes and their memory, for relay_bench (bench/relay_bench.cc): spawning socat,
// stopping and reaping it, and reading proportional set sizes from /proc. Called from the
// bench's main thread only.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

namespace bench {

// Pss of one process in KiB (/proc/PID/smaps_rollup); 0 when it is gone. Pss splits shared
// pages among their sharers, so forked children are not counted twice.
uint64_t PssKiB(pid_t pid);
// The parent pid from /proc/PID/stat; 0 if unknown.
pid_t ParentOf(const std::filesystem::path& proc_dir);
// Sum of the Pss of `roots` and of their direct children (socat's per-connection forks).
uint64_t TreePssKiB(const std::set<pid_t>& roots);

// posix_spawnp of args[0] with stderr sent to /dev/null; -1 on failure.
pid_t Spawn(const std::vector<std::string>& args);
// SIGTERM and wait.
void StopProcess(pid_t pid);
// Reaps every child left (the bench is a subreaper, so socat's orphaned forks land here).
// Waits up to 3 s, then kills what still runs.
void ReapChildren();

}  // namespace bench
