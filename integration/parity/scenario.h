// The parity matrix: one table of scenarios, each run by the native backend
// (<build>/compat/bwrap) and by the bwrap backend (`ateam-sandbox bwrap --backend bwrap`,
// which execs Debian's /usr/bin/bwrap 0.8.0), whose observable results must be identical.
//
// A scenario is a bwrap argument list plus a command (usually the probe). Arguments may
// use these placeholders, expanded by the runner (parity_runner.h) before each run:
//   @T      the scenario's fixture directory on the host (same path for both backends;
//           re-populated before every run, see PopulateFixture)
//   @PROBE  the host path of the static probe
// Differences of bwrap 0.8.0 (or of the bwrap backend itself) are never skipped silently:
// a row carries `known_difference` (printed by the test), the subset of results that can
// still be compared, and optionally the exact stderr the bwrap side must show, so that the
// exception cannot hide any other change.
#pragma once

#include <chrono>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "integration/harness.h"

namespace sbx::integration::parity {

// What is compared between the two backends (bit set).
enum Compare : unsigned {
  kExitCode = 1U << 0,
  kStdout = 1U << 1,  // raw, or as a normalized probe report when `report` is set
  kStderr = 1U << 2,
  kMounts = 1U << 3,  // normalized /proc/self/mountinfo from a second run (cat)
  kFdData = 1U << 4,  // what the sandbox wrote to the capture fds (digits normalized)
  kAll = kExitCode | kStdout | kStderr | kMounts | kFdData,
};

// The profile placed before the scenario's options.
enum class Profile {
  kTypical,  // BaseProfile() + --proc /proc + --dev /dev
  kNoDev,    // BaseProfile() + --proc /proc
  kBase,     // BaseProfile(): /usr, symlinks, /etc, the probe; no /proc, no /dev
  kNone,     // nothing (bad-input cases, --help, --version)
};

// A file descriptor handed to the backend at a fixed number.
struct FdSpec {
  enum class Kind {
    kData,               // a pipe's read end holding `data` (then closed for writing)
    kPathOfFixture,      // an O_PATH descriptor of @T/dir
    kCapture,            // a pipe's write end; what arrives is compared (kFdData)
    kSeccompDenyKeyctl,  // a pipe holding a BPF program: keyctl -> EPERM, else allow
    kSeccompAllow,       // a pipe holding a one-instruction allow-all program
    kSeccompBadLength,   // a pipe holding 7 bytes
    kOwnNamespace,       // /proc/self/ns/<data> of the test process (e.g. "user", "pid")
  };
  int number;
  Kind kind;
  std::string data = {};
};

struct Scenario {
  std::string name;  // test name: [A-Za-z0-9_]
  Args options;
  Args command = {kProbe, "report"};
  Profile profile = Profile::kTypical;
  std::vector<FdSpec> fds = {};
  std::string cwd = "/";  // the backend's working directory on the host
  bool ignore_sigchld = false;
  unsigned compare = kAll;
  // Empty, or the named, documented difference of 0.8.0 / of the bwrap backend. When set,
  // `compare` lists only what still must match.
  std::string known_difference = {};
  // With known_difference: what the bwrap backend must show exactly (the documented
  // symptom), unset = not checked.
  std::optional<std::string> bwrap_stdout = {};
  std::optional<std::string> bwrap_stderr = {};
  // Probe report keys left out of the comparison (each use is documented in the row).
  std::vector<std::string> ignore_keys = {};
  // How long one run may take (unset: the runner's default). Output pipes still open after
  // the backend itself exited are read until then, so a row whose bwrap leaves a process
  // behind that holds them (documented in the row) sets a short one.
  std::optional<std::chrono::milliseconds> timeout = {};
  // Such a row's leftover has come back to the test process (a subreaper, leftovers.h) when
  // the run returns; the runner ends it then, as the row expects it, so that only a process
  // no row expects fails the test.
  bool leaves_orphan = false;
  // The outcome the row must have, not only agreement: both backends failing the same wrong
  // way fails the row. The native backend must exit with `exit` (the bwrap backend too where
  // `compare` has kExitCode; a command killed by signal N is 128 + N, as bwrap reports it),
  // and its stdout / stderr must contain `out_has` / `err_has` (the bwrap backend's too where
  // `compare` has kStdout / kStderr). Every row sets `exit`; every row exiting 1 (bwrap's
  // own failure) names its message in `err_has`. `exit` and `out_has` / `err_has` are for a
  // root caller, and for an unprivileged one unless the row sets `user_exit`, in which case
  // that caller's run is held to `user_exit` and `user_err_has` instead.
  int exit = kExitUnset;
  std::optional<int> user_exit = {};
  std::string out_has = {};
  std::string err_has = {};
  std::string user_err_has = {};

  static constexpr int kExitUnset = -1000;
};

// gtest prints a failing parameter with this (instead of a byte dump).
inline void PrintTo(const Scenario& scenario, std::ostream* out) { *out << scenario.name; }

// The whole table, in a fixed order (scenarios_*.cc).
const std::vector<Scenario>& AllScenarios();
void AddGeneralScenarios(std::vector<Scenario>* table);
void AddNamespaceScenarios(std::vector<Scenario>* table);
void AddProcessScenarios(std::vector<Scenario>* table);
void AddFilesystemScenarios(std::vector<Scenario>* table);
void AddFdScenarios(std::vector<Scenario>* table);

}  // namespace sbx::integration::parity
