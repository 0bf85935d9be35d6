// main() of every integration test program: GoogleTest's, plus the leftover check. The test
// process becomes a subreaper before the first test, and after each test whatever the test
// left running fails that test, by pid and command line, and is killed (leftovers.h).
#include <gtest/gtest.h>

#include "integration/leftovers.h"

namespace {

class LeftoverCheck : public ::testing::EmptyTestEventListener {
  // Listeners get OnTestEnd in reverse order of registration, so this runs before the
  // default printer's and a failure added here is printed and counted as the test's own.
  void OnTestEnd(const ::testing::TestInfo& /*test*/) override {
    for (const sbx::integration::Leftover& leftover : sbx::integration::EndLeftovers()) {
      ADD_FAILURE() << "the test left a process running: pid " << leftover.pid << ": "
                    << leftover.cmdline << " (killed now)";
    }
  }
};

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  sbx::integration::BecomeSubreaper();
  ::testing::UnitTest::GetInstance()->listeners().Append(new LeftoverCheck);
  return RUN_ALL_TESTS();
}
