// Processes a test leaves behind. The integration test process is a child subreaper
// (PR_SET_CHILD_SUBREAPER): whatever a test starts, directly or through the program under
// test, comes back to it as a child when its parent exits, whatever session or process
// group it moved to in between. So when a test ends, every child of the test process that
// is still alive was left running by it; the check that runs then (test_main.cc) names each
// one in a failure of that test, and kills and reaps it so the next test starts clean.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace sbx::integration {

struct Leftover {
  pid_t pid = -1;
  std::string cmdline;  // NUL separators read as blanks
};

// Makes this process the reaper of its orphaned descendants; aborts when the kernel refuses.
void BecomeSubreaper();

// Kills and reaps every child of this process, round after round until none is left (a
// killed child's own children come back here). Returns the ones that were alive and not
// already on their way out (exiting, or with a SIGKILL pending) when first seen. The
// children in `spare` (a helper the test still needs) are left alone.
std::vector<Leftover> EndLeftovers(const std::vector<pid_t>& spare = {});

}  // namespace sbx::integration
