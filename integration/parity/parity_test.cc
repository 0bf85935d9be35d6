// The parity matrix: every scenario of the table (scenarios_*.cc) runs with the native
// backend and with the bwrap backend, and what each produced must be identical after the
// documented normalizations (parity_runner.h), and match the outcome the row expects (its
// exit code, and text its output must hold). Rows with a known difference print it and
// compare what can still be compared.
#include <gtest/gtest.h>
#include <unistd.h>

#include <iostream>

#include "integration/harness.h"
#include "integration/parity/parity_runner.h"
#include "integration/parity/scenario.h"

namespace sbx::integration::parity {
namespace {

// The exit status as the shell and bwrap report it: 128 + N for a command killed by signal N.
int ExitOf(const RunResult& run) {
  return run.term_signal != 0 ? 128 + run.term_signal : run.exit_code;
}

std::string Both(const BackendResult& native, const BackendResult& bwrap) {
  return "\n=== native ===\n" + Describe(native.run) + "\n=== bwrap backend ===\n" +
         Describe(bwrap.run);
}

// The row's expected outcome for this caller (Scenario::exit, user_exit, out_has, err_has,
// user_err_has). The bwrap backend is held to each part only where the row compares that part
// (a known difference may change it).
void ExpectOutcome(const Scenario& scenario, const BackendResult& result, Backend backend,
                   const std::string& both) {
  const bool native = backend == Backend::kNative;
  const bool as_root_row = IsRoot() || !scenario.user_exit;
  const int exit = as_root_row ? scenario.exit : *scenario.user_exit;
  const std::string& out_has = as_root_row ? scenario.out_has : std::string();
  const std::string& err_has = as_root_row ? scenario.err_has : scenario.user_err_has;
  const std::string who = std::string(BackendName(backend)) + " backend: ";
  if (native || (scenario.compare & kExitCode) != 0) {
    EXPECT_EQ(ExitOf(result.run), exit) << who << "exit " << ExitOf(result.run) << both;
  }
  if (!out_has.empty() && (native || (scenario.compare & kStdout) != 0)) {
    EXPECT_NE(result.run.out.find(out_has), std::string::npos)
        << who << "stdout lacks `" << out_has << "`" << both;
  }
  if (!err_has.empty() && (native || (scenario.compare & kStderr) != 0)) {
    EXPECT_NE(result.run.err.find(err_has), std::string::npos)
        << who << "stderr lacks `" << err_has << "`" << both;
  }
}

class ParityTest : public ::testing::TestWithParam<Scenario> {
 protected:
  void SetUp() override {
    for (Backend backend : {Backend::kNative, Backend::kBwrap}) {
      const std::string command = BackendPrefix(backend).front();
      ASSERT_EQ(access(command.c_str(), X_OK), 0)
          << BackendName(backend) << " backend is not executable: " << command
          << " (set SBX_PARITY_NATIVE / SBX_PARITY_BWRAP)";
    }
    ASSERT_EQ(access(ProbeHostPath().c_str(), X_OK), 0)
        << "probe is not executable: " << ProbeHostPath() << " (set SBX_PROBE)";
    ASSERT_EQ(access("/usr/bin/bwrap", X_OK), 0) << "the bwrap backend needs /usr/bin/bwrap";
    if (auto reason = SandboxUnavailableReason()) GTEST_SKIP() << *reason;
  }
};

TEST_P(ParityTest, SameAsBwrapBackend) {
  const Scenario& scenario = GetParam();
  TempDir fixture;
  BackendResult native = RunBackend(scenario, Backend::kNative, fixture.path());
  BackendResult bwrap = RunBackend(scenario, Backend::kBwrap, fixture.path());
  const std::string both = Both(native, bwrap);

  if (!scenario.known_difference.empty()) {
    // Printed on every run: an exception is part of the result, never a silent skip.
    std::cout << "[ KNOWN DIFFERENCE ] " << scenario.name << ": " << scenario.known_difference
              << "\n";
    RecordProperty("known_difference", scenario.known_difference);
    if (scenario.bwrap_stdout) {
      EXPECT_EQ(bwrap.run.out, *scenario.bwrap_stdout)
          << "the bwrap backend no longer shows the documented difference" << both;
    }
    if (scenario.bwrap_stderr) {
      EXPECT_EQ(bwrap.run.err, *scenario.bwrap_stderr)
          << "the bwrap backend no longer shows the documented difference" << both;
    }
  }
  EXPECT_FALSE(native.run.timed_out) << both;
  EXPECT_FALSE(bwrap.run.timed_out) << both;
  ExpectOutcome(scenario, native, Backend::kNative, both);
  ExpectOutcome(scenario, bwrap, Backend::kBwrap, both);
  if ((scenario.compare & kExitCode) != 0) {
    EXPECT_EQ(native.run.exit_code, bwrap.run.exit_code) << both;
    EXPECT_EQ(native.run.term_signal, bwrap.run.term_signal) << both;
  }
  if ((scenario.compare & kStdout) != 0) {
    EXPECT_EQ(native.out, bwrap.out) << both;
  }
  if ((scenario.compare & kStderr) != 0) {
    EXPECT_EQ(native.err, bwrap.err) << both;
  }
  if ((scenario.compare & kMounts) != 0) {
    EXPECT_EQ(native.mounts, bwrap.mounts) << "normalized /proc/self/mountinfo differs";
  }
  if ((scenario.compare & kFdData) != 0) {
    EXPECT_EQ(native.fd_data, bwrap.fd_data) << both;
  }
}

std::string ScenarioName(const ::testing::TestParamInfo<Scenario>& param_info) {
  return param_info.param.name;
}

INSTANTIATE_TEST_SUITE_P(Matrix, ParityTest, ::testing::ValuesIn(AllScenarios()), ScenarioName);

// The table itself: enough rows, unique names, and every exception is named and limited.
TEST(ParityTable, IsWellFormed) {
  const std::vector<Scenario>& table = AllScenarios();
  EXPECT_GE(table.size(), 60U);
  for (size_t i = 0; i < table.size(); ++i) {
    for (size_t j = i + 1; j < table.size(); ++j) EXPECT_NE(table[i].name, table[j].name);
    EXPECT_NE(table[i].exit, Scenario::kExitUnset) << table[i].name << ": no expected exit";
    if (table[i].exit == 1) {
      EXPECT_FALSE(table[i].err_has.empty()) << table[i].name << ": a failure names its message";
    }
    if (table[i].user_exit == 1) {
      EXPECT_FALSE(table[i].user_err_has.empty()) << table[i].name << ": name the message";
    }
    if (table[i].known_difference.empty()) {
      EXPECT_EQ(table[i].compare, kAll) << table[i].name << ": a reduced comparison needs a name";
      EXPECT_FALSE(table[i].bwrap_stdout || table[i].bwrap_stderr) << table[i].name;
      EXPECT_TRUE(table[i].ignore_keys.empty()) << table[i].name << ": ignoring needs a name";
    } else {
      EXPECT_NE(table[i].compare, kAll) << table[i].name << ": an exception compares less";
    }
  }
}

}  // namespace
}  // namespace sbx::integration::parity
