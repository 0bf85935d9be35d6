// What `run`, `gc` and `ls` print of names they did not choose: nothing a terminal would
// take as a command.
#include "dispatch/sys/caller_stderr.h"

#include <gtest/gtest.h>

#include <string>

namespace sbx::dispatch {
namespace {

TEST(EscapeForTerminalTest, ControlsAndBytesThatAreNotUtf8BecomeText) {
  EXPECT_EQ(EscapeForTerminal("a\x1b]0;owned\x07z"), "a\\x1b]0;owned\\x07z");
  EXPECT_EQ(EscapeForTerminal("line\nnext\r\x7f"), "line\\x0anext\\x0d\\x7f");
  EXPECT_EQ(EscapeForTerminal("\xc2\x9b"
                              "2J"),
            "\\xc2\\x9b2J");  // C1 CSI
  EXPECT_EQ(EscapeForTerminal("bad\xff\xc3"), "bad\\xff\\xc3");
}

TEST(EscapeForTerminalTest, PrintableUtf8StaysAsItIs) {
  EXPECT_EQ(EscapeForTerminal("caf\xc3\xa9 \xe2\x82\xac /a b\\c"),
            "caf\xc3\xa9 \xe2\x82\xac /a b\\c");
}

}  // namespace
}  // namespace sbx::dispatch
