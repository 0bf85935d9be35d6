// run --label KEY=VALUE, and the ls/gc --label filters.
#include "dispatch/request/labels.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sbx::dispatch {
namespace {

TEST(ParseLabel, TakesKeyEqualsValue) {
  auto label = ParseLabel("team=infra");
  ASSERT_TRUE(label) << label.error().Render();
  EXPECT_EQ(label->key, "team");
  EXPECT_EQ(label->value, "infra");
  EXPECT_EQ(ParseLabel("ci.job-id_2=a.b_c-d:e/f@g+h=i")->value, "a.b_c-d:e/f@g+h=i");
  EXPECT_EQ(ParseLabel("empty=")->value, "");
  EXPECT_EQ(ParseLabel("9lives=x")->key, "9lives");
}

TEST(ParseLabel, TakesKeysAndValuesUpToTheirLimits) {
  EXPECT_TRUE(ParseLabel(std::string(kLabelKeyMax, 'k') + "=v"));
  EXPECT_FALSE(ParseLabel(std::string(kLabelKeyMax + 1, 'k') + "=v"));
  EXPECT_TRUE(ParseLabel("k=" + std::string(kLabelValueMax, 'v')));
  EXPECT_FALSE(ParseLabel("k=" + std::string(kLabelValueMax + 1, 'v')));
}

TEST(ParseLabel, RefusesWhatIsNotALabelInOneLine) {
  for (const std::string bad :
       {"", "team", "=infra", "-team=x", ".team=x", "te am=x", "team=in fra", "team=a,b", "tëam=x",
        "team=x\n", "team=\x1b[2J", "team=$(id)", "team=a;b", "k\"=v", "team=\"x\""}) {
    auto label = ParseLabel(bad);
    ASSERT_FALSE(label) << bad;
    std::string message = label.error().Render();
    EXPECT_NE(message.find("--label"), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    EXPECT_EQ(message.find('\x1b'), std::string::npos) << message;
  }
}

TEST(ParseLabels, RefusesAKeyGivenTwice) {
  std::vector<std::string> texts = {"a=1", "b=2", "a=3"};
  auto labels = ParseLabels(texts);
  ASSERT_FALSE(labels);
  EXPECT_NE(labels.error().Render().find("a: this key is given twice"), std::string::npos)
      << labels.error().Render();
  std::vector<std::string> fine = {"a=1", "b=2"};
  EXPECT_EQ(ParseLabels(fine)->size(), 2u);
  EXPECT_TRUE(ParseLabels(std::vector<std::string>{})->empty());
}

TEST(LabelsMatch, NeedsEveryWantedLabel) {
  std::vector<DispatchLabel> have = {{"team", "infra"}, {"job", "42"}};
  EXPECT_TRUE(LabelsMatch(have, {}));
  EXPECT_TRUE(LabelsMatch(have, std::vector<DispatchLabel>{{"job", "42"}}));
  EXPECT_TRUE(LabelsMatch(have, std::vector<DispatchLabel>{{"job", "42"}, {"team", "infra"}}));
  EXPECT_FALSE(LabelsMatch(have, std::vector<DispatchLabel>{{"job", "4"}}));
  EXPECT_FALSE(LabelsMatch(have, std::vector<DispatchLabel>{{"job", "42"}, {"team", "web"}}));
  EXPECT_FALSE(LabelsMatch({}, std::vector<DispatchLabel>{{"job", "42"}}));
}

TEST(FormatLabels, JoinsWithCommas) {
  EXPECT_EQ(FormatLabels({}), "");
  EXPECT_EQ(FormatLabels(std::vector<DispatchLabel>{{"a", "1"}, {"b", ""}}), "a=1,b=");
}

}  // namespace
}  // namespace sbx::dispatch
