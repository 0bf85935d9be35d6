#include "base/json.h"

#include <gtest/gtest.h>

#include <string>

namespace sbx::base {
namespace {

TEST(JsonEscapeTest, WellFormedUtf8PassesThrough) {
  EXPECT_EQ(JsonEscape("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
            "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
}

TEST(JsonEscapeTest, BytesThatAreNotUtf8BecomeBackslashXText) {
  EXPECT_EQ(JsonEscape("a\xff"
                       "b"),
            "a\\\\xffb");
  EXPECT_EQ(JsonEscape("\xc3"), "\\\\xc3");                                   // cut short
  EXPECT_EQ(JsonEscape("\xc0\xaf"), "\\\\xc0\\\\xaf");                        // overlong '/'
  EXPECT_EQ(JsonEscape("\xed\xa0\x80"), "\\\\xed\\\\xa0\\\\x80");             // a surrogate
  EXPECT_EQ(JsonEscape("\xf4\x90\x80\x80"), "\\\\xf4\\\\x90\\\\x80\\\\x80");  // > U+10FFFF
}

TEST(JsonEscapeTest, ControlCharactersAndDelAreEscaped) {
  EXPECT_EQ(JsonEscape(std::string("\x1b[2J\x7f", 5)), "\\u001b[2J\\u007f");
  EXPECT_EQ(JsonEscape("\"\\\n"), "\\\"\\\\\\n");
}

}  // namespace
}  // namespace sbx::base
