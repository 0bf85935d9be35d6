// Process plumbing for dispatch_bench: spawning `ateam-sandbox run` with its output in a
// file, reaping it with its resource usage, and sampling the memory of every process
// descended from the bench (the dispatches' `run`, supervisor, agent and git processes).
// Bench code: single-threaded, failures to set up exit the bench.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace dbench {

// CLOCK_MONOTONIC in milliseconds. The sandbox has no time namespace, so the agent's
// CLOCK_MONOTONIC reading is on the same clock.
double MonoMs();

// Starts argv (argv[0] a path) with stdin /dev/null and stdout/stderr appended to the
// given files. Returns the child's pid.
pid_t SpawnToFiles(const std::vector<std::string>& argv, const std::string& out_path,
                   const std::string& err_path);

struct Reaped {
  pid_t pid = -1;
  int status = 0;
  double end_ms = 0;    // MonoMs() just after the child was reaped
  long maxrss_kib = 0;  // wait4: largest RSS of the child and of any process it reaped
};
// Blocks for `pid` (or any child for -1). With `nohang`, pid -1 in the result means none.
Reaped Reap(pid_t pid, bool nohang = false);

// "stamp_ns: N" printed by the stamp agent, as MonoMs() milliseconds.
std::optional<double> ParseStampMs(const std::string& text);

struct MemorySample {
  double pss_kib = 0;  // sum of Pss over the processes (shared pages split fairly)
  double rss_kib = 0;  // sum of Rss (shared pages counted in every process)
  int processes = 0;
  int unreadable = 0;  // processes whose smaps_rollup could not be read
};
// Every process descended from this one (not this one itself).
MemorySample SampleDescendants();

// MemTotal - MemAvailable of /proc/meminfo (system-wide: includes kernel objects and the
// page cache of the clones, and everything else the machine does).
double SystemUsedKib();

std::string ReadWholeFile(const std::string& path);
// Runs a shell command line (setup only); exits the bench when it fails.
void Shell(const std::string& command);

double Median(std::vector<double> values);

}  // namespace dbench
