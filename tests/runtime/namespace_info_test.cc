#include "runtime/namespace_info.h"

#include <gtest/gtest.h>

namespace sbx::runtime {
namespace {

NamespaceIds Sample() {
  NamespaceIds ids;
  ids.child_pid = 42;
  ids.namespaces = {{"mnt", 4026531841}, {"net", 4026531840}};
  return ids;
}

TEST(NamespaceInfoTest, InfoFdIsPrettyPrintedLikeBwrap) {
  EXPECT_EQ(RenderInfoJson(Sample()),
            "{\n    \"child-pid\": 42,\n    \"mnt-namespace\": 4026531841,\n"
            "    \"net-namespace\": 4026531840\n}\n");
}

TEST(NamespaceInfoTest, JsonStatusLinesAreBwraps) {
  EXPECT_EQ(
      RenderStatusLine(Sample()),
      "{ \"child-pid\": 42, \"mnt-namespace\": 4026531841, \"net-namespace\": 4026531840 }\n");
  EXPECT_EQ(RenderExitCodeLine(3), "{ \"exit-code\": 3 }\n");
}

}  // namespace
}  // namespace sbx::runtime
