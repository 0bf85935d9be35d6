#include "netns/link_state.h"

#include <gtest/gtest.h>
#include <net/if.h>
#include <sys/socket.h>

#include "tests/netns/ns_child.h"

namespace sbx::netns {
namespace {

TEST(LinkStateTest, DescribesLinks) {
  std::vector<LinkState> links(2);
  links[0].index = 1;
  links[0].name = "lo";
  links[0].flags = IFF_UP | IFF_LOOPBACK | IFF_RUNNING;
  links[0].addresses = {{AF_INET, "127.0.0.1", 8, 254, 0x80}, {AF_INET6, "::1", 128, 254, 0}};
  links[1].index = 7;
  links[1].name = "eth0";
  EXPECT_EQ(DescribeLinks(links),
            "1: lo <UP,LOOPBACK,RUNNING> 127.0.0.1/8 ::1/128\n"
            "7: eth0 <>\n");
  EXPECT_TRUE(links[0].up());
  EXPECT_TRUE(links[0].HasAddress(AF_INET6, "::1"));
  EXPECT_FALSE(links[0].HasAddress(AF_INET, "::1"));
  EXPECT_FALSE(links[1].running());
  EXPECT_EQ(FindLink(links, "eth0"), &links[1]);
  EXPECT_EQ(FindLink(links, "wlan0"), nullptr);
}

TEST(LinkStateTest, ListsTheCallersNamespace) {
  auto links = ListLinks();
  ASSERT_TRUE(links) << links.error().Render();
  const LinkState* lo = FindLink(*links, "lo");
  ASSERT_NE(lo, nullptr) << DescribeLinks(*links);
  EXPECT_TRUE(lo->loopback());
  for (size_t i = 1; i < links->size(); ++i) {
    EXPECT_LT((*links)[i - 1].index, (*links)[i].index);
  }
}

// A fresh network namespace holds lo alone, down, without addresses.
TEST(LinkStateTest, FreshNetnsHasOnlyLoDown) {
  auto outcome = testing::RunInChild([]() -> std::string {
    if (auto entered = testing::EnterUserAndNetNs(false); !entered.empty()) return entered;
    auto links = ListLinks();
    if (!links) return links.error().Render();
    if (DescribeLinks(*links) != "1: lo <LOOPBACK>\n") {
      return "unexpected links:\n" + DescribeLinks(*links);
    }
    return {};
  });
  if (outcome.skipped()) GTEST_SKIP() << outcome.message;
  EXPECT_TRUE(outcome.passed()) << outcome.message;
}

}  // namespace
}  // namespace sbx::netns
