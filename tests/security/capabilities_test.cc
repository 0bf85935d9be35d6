// Pure tests of the capability decisions: resolving --cap-add/--cap-drop, the decision
// table, and the kernel model checked against the bwrap 0.8.0 table measured on this
// project's reference machine (see the comment at the top of capabilities.h).
#include "security/capabilities.h"

#include <gtest/gtest.h>
#include <linux/capability.h>

#include <string>
#include <vector>

namespace sbx::security {
namespace {

constexpr int kLastCap = 40;
constexpr CapBits Bit(int cap) { return CapBits{1} << cap; }

// The sets named in the measured table.
constexpr CapBits kF = AllCaps(kLastCap);            // 000001ffffffffff
constexpr CapBits kC = kF & ~Bit(CAP_SYS_RESOURCE);  // the root caller's caps
constexpr CapBits kN = Bit(CAP_NET_ADMIN);           // 0000000000001000
constexpr CapBits kS = kC & ~Bit(CAP_SYS_ADMIN);     // 000001fffedfffff
constexpr CapBits kU = kF & ~Bit(CAP_SYS_ADMIN);     // 000001ffffdfffff
static_assert(kC == 0x000001fffeffffffULL && kS == 0x000001fffedfffffULL);
static_assert(kU == 0x000001ffffdfffffULL && kN == 0x1000);

CapChange Add(std::optional<int> cap) { return {CapChange::Kind::kAdd, cap}; }
CapChange Drop(std::optional<int> cap) { return {CapChange::Kind::kDrop, cap}; }

TEST(ResolveCapabilitiesTest, AppliesChangesInOrder) {
  const std::vector<CapChange> changes = {Drop(std::nullopt), Add(CAP_NET_ADMIN),
                                          Add(CAP_SYS_ADMIN), Drop(CAP_SYS_ADMIN)};
  auto caps = ResolveCapabilities(kC, changes, kLastCap);
  ASSERT_TRUE(caps) << caps.error().Render();
  EXPECT_EQ(*caps, kN);
}

TEST(ResolveCapabilitiesTest, AllMeansUpToLastCap) {
  const std::vector<CapChange> add_all = {Add(std::nullopt)};
  EXPECT_EQ(*ResolveCapabilities(0, add_all, kLastCap), kF);
  EXPECT_EQ(*ResolveCapabilities(0, add_all, 37), AllCaps(37));
  const std::vector<CapChange> add_all_drop_one = {Add(std::nullopt), Drop(CAP_SYS_ADMIN)};
  EXPECT_EQ(*ResolveCapabilities(0, add_all_drop_one, kLastCap), kU);
}

TEST(ResolveCapabilitiesTest, NoChangesKeepsInitial) {
  EXPECT_EQ(*ResolveCapabilities(kC, {}, kLastCap), kC);
  EXPECT_EQ(*ResolveCapabilities(0, {}, kLastCap), 0U);
}

TEST(ResolveCapabilitiesTest, CapsAboveLastCapAreMasked) {
  const std::vector<CapChange> changes = {Add(45), Add(CAP_NET_ADMIN)};
  EXPECT_EQ(*ResolveCapabilities(0, changes, kLastCap), kN);
}

TEST(ResolveCapabilitiesTest, RejectsUnrepresentableNumbers) {
  for (int cap : {-1, 64, 1000}) {
    const std::vector<CapChange> changes = {Add(cap)};
    auto caps = ResolveCapabilities(0, changes, kLastCap);
    ASSERT_FALSE(caps) << cap;
    EXPECT_EQ(caps.error().Render(), "unknown cap: " + std::to_string(cap));
  }
}

TEST(AllCapsTest, Edges) {
  EXPECT_EQ(AllCaps(0), 1U);
  EXPECT_EQ(AllCaps(40), 0x1ffffffffffULL);
  EXPECT_EQ(AllCaps(63), ~CapBits{0});
  EXPECT_EQ(AllCaps(-1), 0U);
}

TEST(DecideCapabilitiesTest, RootWithoutOptionsSkipsCapset) {
  const CapPlan plan = DecideCapabilities({.caller_is_root = true,
                                           .new_user_namespace = false,
                                           .cap_options_used = false,
                                           .resolved = kC,
                                           .last_cap = kLastCap});
  EXPECT_EQ(plan.bounding, std::nullopt);
  EXPECT_TRUE(plan.skip_capset);
  EXPECT_EQ(plan.ambient, kC);
  EXPECT_TRUE(plan.tolerate_capset_eperm);
}

TEST(DecideCapabilitiesTest, RootInUserNamespaceTrimsBoundingOnly) {
  const CapPlan plan = DecideCapabilities({.caller_is_root = true,
                                           .new_user_namespace = true,
                                           .cap_options_used = false,
                                           .resolved = kC,
                                           .last_cap = kLastCap});
  EXPECT_EQ(plan.bounding, kC);
  EXPECT_TRUE(plan.skip_capset);
}

TEST(DecideCapabilitiesTest, RootWithOptionsSetsAllThree) {
  const CapPlan plan = DecideCapabilities({.caller_is_root = true,
                                           .new_user_namespace = false,
                                           .cap_options_used = true,
                                           .resolved = kS,
                                           .last_cap = kLastCap});
  EXPECT_EQ(plan.bounding, std::nullopt);
  EXPECT_FALSE(plan.skip_capset);
  EXPECT_EQ(plan.permitted, kS);
  EXPECT_EQ(plan.effective, kS);
  EXPECT_EQ(plan.inheritable, kS);
  EXPECT_EQ(plan.ambient, kS);
  EXPECT_TRUE(plan.tolerate_capset_eperm);
}

TEST(DecideCapabilitiesTest, UnprivilegedAlwaysCallsCapset) {
  const CapPlan none = DecideCapabilities({.caller_is_root = false,
                                           .new_user_namespace = true,
                                           .cap_options_used = false,
                                           .resolved = 0,
                                           .last_cap = kLastCap});
  EXPECT_EQ(none.bounding, 0U);
  EXPECT_FALSE(none.skip_capset);
  EXPECT_EQ(none.permitted, 0U);
  EXPECT_EQ(none.ambient, 0U);
  EXPECT_FALSE(none.tolerate_capset_eperm);

  const CapPlan net = DecideCapabilities({.caller_is_root = false,
                                          .new_user_namespace = true,
                                          .cap_options_used = true,
                                          .resolved = kN,
                                          .last_cap = kLastCap});
  EXPECT_EQ(net.bounding, kN);
  EXPECT_EQ(net.permitted, kN);
  EXPECT_EQ(net.inheritable, kN);
  EXPECT_EQ(net.ambient, kN);
}

// One row of the measured table: how bwrap was called and what the command saw.
struct MeasuredRow {
  const char* name;
  bool root;
  bool userns;
  std::vector<CapChange> changes;
  uid_t sandbox_uid;
  CapState seen;
};

CapState Sets(CapBits inh, CapBits prm, CapBits eff, CapBits bnd, CapBits amb) {
  return {.inheritable = inh, .permitted = prm, .effective = eff, .bounding = bnd, .ambient = amb};
}

std::vector<MeasuredRow> MeasuredTable() {
  const auto none = std::nullopt;
  return {
      {"root", true, false, {}, 0, Sets(0, kC, kC, kC, 0)},
      {"root userns", true, true, {}, 0, Sets(0, kC, kC, kC, 0)},
      {"root userns uid1000", true, true, {}, 1000, Sets(0, 0, 0, kC, 0)},
      {"root drop ALL", true, false, {Drop(none)}, 0, Sets(0, 0, 0, kC, 0)},
      {"root drop SYS_ADMIN", true, false, {Drop(CAP_SYS_ADMIN)}, 0, Sets(kS, kS, kS, kC, kS)},
      {"root add NET_ADMIN", true, false, {Add(CAP_NET_ADMIN)}, 0, Sets(kC, kC, kC, kC, kC)},
      {"root drop ALL add NET_ADMIN",
       true,
       false,
       {Drop(none), Add(CAP_NET_ADMIN)},
       0,
       Sets(kN, kN, kN, kC, kN)},
      {"root add ALL", true, false, {Add(none)}, 0, Sets(0, kC, kC, kC, 0)},
      {"root add SYS_RESOURCE", true, false, {Add(CAP_SYS_RESOURCE)}, 0, Sets(0, kC, kC, kC, 0)},
      {"root userns add NET_ADMIN uid1000",
       true,
       true,
       {Add(CAP_NET_ADMIN)},
       1000,
       Sets(kC, kC, kC, kC, kC)},
      {"root userns drop ALL add NET_ADMIN",
       true,
       true,
       {Drop(none), Add(CAP_NET_ADMIN)},
       0,
       Sets(kN, kN, kN, kN, kN)},
      {"root userns drop ALL", true, true, {Drop(none)}, 0, Sets(0, 0, 0, 0, 0)},
      {"root userns drop SYS_ADMIN uid1000",
       true,
       true,
       {Drop(CAP_SYS_ADMIN)},
       1000,
       Sets(kS, kS, kS, kS, kS)},
      {"root userns add ALL uid1000", true, true, {Add(none)}, 1000, Sets(kF, kF, kF, kF, kF)},
      {"user", false, true, {}, 1001, Sets(0, 0, 0, 0, 0)},
      {"user uid0", false, true, {}, 0, Sets(0, 0, 0, 0, 0)},
      {"user drop ALL uid0", false, true, {Drop(none)}, 0, Sets(0, 0, 0, 0, 0)},
      {"user add NET_ADMIN", false, true, {Add(CAP_NET_ADMIN)}, 1001, Sets(kN, kN, kN, kN, kN)},
      {"user add NET_ADMIN uid0", false, true, {Add(CAP_NET_ADMIN)}, 0, Sets(kN, kN, kN, kN, kN)},
      {"user add ALL", false, true, {Add(none)}, 1001, Sets(kF, kF, kF, kF, kF)},
      {"user add ALL uid0", false, true, {Add(none)}, 0, Sets(kF, kF, kF, kF, kF)},
      {"user add ALL drop SYS_ADMIN",
       false,
       true,
       {Add(none), Drop(CAP_SYS_ADMIN)},
       1001,
       Sets(kU, kU, kU, kU, kU)},
  };
}

TEST(PredictCapsAfterExecTest, ReproducesTheMeasuredBwrapTable) {
  // The root caller that was measured: C in P, E and the bounding set.
  const CapState root_caller = Sets(0, kC, kC, kC, 0);
  for (const MeasuredRow& row : MeasuredTable()) {
    SCOPED_TRACE(row.name);
    auto resolved = ResolveCapabilities(row.root ? kC : 0, row.changes, kLastCap);
    ASSERT_TRUE(resolved);
    const CapPlan plan = DecideCapabilities({.caller_is_root = row.root,
                                             .new_user_namespace = row.userns,
                                             .cap_options_used = !row.changes.empty(),
                                             .resolved = *resolved,
                                             .last_cap = kLastCap});
    const CapState before = row.userns ? FreshUserNamespaceCaps(kLastCap) : root_caller;
    const auto after = PredictCapsAfterExec(plan, before, row.sandbox_uid);
    ASSERT_TRUE(after.has_value());
    EXPECT_EQ(*after, row.seen) << std::hex << "inh " << after->inheritable << " prm "
                                << after->permitted << " eff " << after->effective << " bnd "
                                << after->bounding << " amb " << after->ambient;
  }
}

TEST(PredictCapsAfterExecTest, UntoleratedCapsetFailureIsReported) {
  CapPlan plan;
  plan.permitted = plan.effective = plan.inheritable = kF;
  const CapState weak = Sets(0, kN, kN, kF, 0);
  EXPECT_EQ(PredictCapsAfterExec(plan, weak, 0), std::nullopt);
  plan.tolerate_capset_eperm = true;
  EXPECT_EQ(PredictCapsAfterExec(plan, weak, 0), Sets(0, kN, kN, kF, 0));
}

TEST(ParseCapStatusTest, ReadsTheFiveLines) {
  const std::string status =
      "Name:\tcat\nCapInh:\t0000000000001000\nCapPrm:\t000001fffeffffff\n"
      "CapEff:\t000001fffeffffff\nCapBnd:\t000001ffffffffff\nCapAmb:\t0000000000000000\n"
      "NoNewPrivs:\t1\n";
  auto state = ParseCapStatus(status);
  ASSERT_TRUE(state) << state.error().Render();
  EXPECT_EQ(*state, Sets(kN, kC, kC, kF, 0));
}

TEST(ParseCapStatusTest, MissingLineIsAnError) {
  auto state = ParseCapStatus("CapInh:\t0\nCapPrm:\t0\n");
  ASSERT_FALSE(state);
  EXPECT_EQ(state.error().Render(), "no CapEff: line in status");
}

TEST(CapBitsToStringTest, NamesCaps) {
  EXPECT_EQ(CapBitsToString(0, kLastCap), "none");
  EXPECT_EQ(CapBitsToString(kF, kLastCap), "all");
  EXPECT_EQ(CapBitsToString(kN | Bit(CAP_CHOWN), kLastCap), "cap_chown,cap_net_admin");
}

TEST(DescribeCapPlanTest, SaysWhatHappens) {
  const CapPlan skip = DecideCapabilities({.caller_is_root = true, .resolved = kC});
  const auto lines = DescribeCapPlan(skip);
  ASSERT_EQ(lines.size(), 3U);
  EXPECT_EQ(lines[0], "capabilities: bounding set unchanged (no new user namespace)");
  EXPECT_NE(lines[1].find("capset skipped"), std::string::npos);

  const CapPlan user =
      DecideCapabilities({.new_user_namespace = true, .cap_options_used = true, .resolved = kN});
  const auto user_lines = DescribeCapPlan(user);
  EXPECT_EQ(user_lines[0], "capabilities: bounding set keeps cap_net_admin");
  EXPECT_EQ(user_lines[1], "capabilities: permitted=effective=inheritable cap_net_admin");
  EXPECT_EQ(user_lines[2], "capabilities: ambient raise cap_net_admin before exec");
}

}  // namespace
}  // namespace sbx::security
