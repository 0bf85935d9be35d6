#include "base/lexical_path.h"

#include <gtest/gtest.h>

namespace sbx::base {
namespace {

using Parts = std::vector<std::string>;

TEST(LexicalComponentsTest, FoldsEmptyDotAndDotDot) {
  EXPECT_EQ(*LexicalComponents("/a//b/./c/../d/", false), (Parts{"a", "b", "d"}));
  EXPECT_EQ(*LexicalComponents("a/../b", true), (Parts{"b"}));
  EXPECT_TRUE(LexicalComponents("/", false)->empty());
}

TEST(LexicalComponentsTest, ClimbingAboveTheTopIsAnErrorOrStaysAtTheTop) {
  EXPECT_FALSE(LexicalComponents("a/../../b", true));
  EXPECT_EQ(*LexicalComponents("/../../b", false), (Parts{"b"}));
}

}  // namespace
}  // namespace sbx::base
