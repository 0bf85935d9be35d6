// Namespace and identity options: --unshare-*, --share-net, --hostname, --uid, --gid.
// A namespace counts as new when the probe's /proc/self/ns/X link differs from the test
// process's own.
#include <unistd.h>

#include <string>

#include "integration/sandbox_test.h"

namespace sbx::integration {
namespace {

using NamespacesTest = SandboxTest;

std::string HostName() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return name;
}

bool HasCgroupNamespaces() { return access("/proc/self/ns/cgroup", F_OK) == 0; }

// The uid_map line the sandbox should see for sandbox uid `inner`. An unprivileged caller
// maps its own uid; with --dev (part of TypicalProfile) bwrap maps it to 0 at the first
// level and adds a second user namespace, so the sandbox sees `inner 0 1`.
std::string ExpectedIdMap(unsigned inner, unsigned outer, bool with_dev) {
  unsigned mapped = IsRoot() || with_dev ? 0 : outer;
  return std::to_string(inner) + " " + std::to_string(mapped) + " 1";
}

TEST_F(NamespacesTest, NoOptionsKeepsHostNamespacesExceptMount) {
  Report r = ReportWith({});
  EXPECT_NE(Get(r, "ns.mnt"), HostNamespace("mnt"));
  for (const char* ns : {"ipc", "net", "pid", "uts", "cgroup"}) {
    EXPECT_EQ(Get(r, std::string("ns.") + ns), HostNamespace(ns)) << ns;
  }
  if (IsRoot()) {
    // Root without --unshare-user keeps the host user namespace and its full id map.
    EXPECT_EQ(Get(r, "ns.user"), HostNamespace("user"));
  } else {
    // Not root: the user namespace is implied.
    EXPECT_NE(Get(r, "ns.user"), HostNamespace("user"));
  }
  EXPECT_EQ(Get(r, "uid"), std::to_string(getuid()));
  EXPECT_EQ(Get(r, "gid"), std::to_string(getgid()));
}

TEST_F(NamespacesTest, UnshareUserMapsCallerIds) {
  Report r = ReportWith({"--unshare-user"});
  EXPECT_NE(Get(r, "ns.user"), HostNamespace("user"));
  EXPECT_EQ(Get(r, "uid"), std::to_string(getuid()));
  EXPECT_EQ(Get(r, "euid"), std::to_string(getuid()));
  EXPECT_EQ(Get(r, "gid"), std::to_string(getgid()));
  EXPECT_EQ(Get(r, "uid_map"), ExpectedIdMap(getuid(), getuid(), true));
  EXPECT_EQ(Get(r, "gid_map"), ExpectedIdMap(getgid(), getgid(), true));
  EXPECT_EQ(Get(r, "setgroups"), "deny");
}

TEST_F(NamespacesTest, UnshareUserWithoutDevMapsCallerDirectly) {
  Report r = ProbeWith({"--unshare-user"}, {"report"}, {}, ProfileWithoutDev());
  EXPECT_EQ(Get(r, "uid_map"), ExpectedIdMap(getuid(), getuid(), false));
  EXPECT_EQ(Get(r, "gid_map"), ExpectedIdMap(getgid(), getgid(), false));
}

TEST_F(NamespacesTest, UnshareUserTryCreatesUserNamespaceEvenForRoot) {
  Report r = ReportWith({"--unshare-user-try"});
  EXPECT_NE(Get(r, "ns.user"), HostNamespace("user"));
  EXPECT_EQ(Get(r, "uid_map"), ExpectedIdMap(getuid(), getuid(), true));
}

TEST_F(NamespacesTest, UnshareIpc) {
  Report r = ReportWith({"--unshare-ipc"});
  EXPECT_NE(Get(r, "ns.ipc"), HostNamespace("ipc"));
  EXPECT_EQ(Get(r, "ns.net"), HostNamespace("net"));
}

TEST_F(NamespacesTest, UnsharePidMakesCommandPid2UnderReaper) {
  Report r = ReportWith({"--unshare-pid"});
  EXPECT_NE(Get(r, "ns.pid"), HostNamespace("pid"));
  EXPECT_EQ(Get(r, "pid"), "2");
  EXPECT_EQ(Get(r, "ppid"), "1");
  EXPECT_EQ(Get(r, "pids"), "1 2");
}

TEST_F(NamespacesTest, UnshareNetLeavesOnlyLoopbackUp) {
  TcpListener listener;
  Report r = ReportWith({"--unshare-net"});
  EXPECT_NE(Get(r, "ns.net"), HostNamespace("net"));
  EXPECT_EQ(Get(r, "links"), "lo");
  EXPECT_EQ(Get(r, "link.lo"), "UP,LOOPBACK,RUNNING 127.0.0.1");
  Report c =
      ProbeWith({"--unshare-net"}, {"connect", "127.0.0.1", std::to_string(listener.port())});
  EXPECT_EQ(Get(c, "connect"), "ECONNREFUSED");
  EXPECT_FALSE(listener.AcceptAndRead().has_value());
}

// The new network namespace belongs to the sandbox's user namespace (so its capabilities
// there cover it), whichever process made it; under an unprivileged caller's --dev the
// sandbox runs in a nested namespace, and the owner is its parent, out of its scope.
TEST_F(NamespacesTest, NewNetworkNamespaceBelongsToTheSandboxUserNamespace) {
  Report flat = ProbeWith({"--unshare-all"}, {"netns-owner"}, {}, ProfileWithoutDev());
  EXPECT_EQ(Get(flat, "netns_owner"), "self");
  Report nested = ProbeWith({"--unshare-all"}, {"netns-owner"});
  EXPECT_EQ(Get(nested, "netns_owner"), IsRoot() ? "self" : "ancestor");
  Report root_only = ProbeWith({"--unshare-net"}, {"netns-owner"}, {}, ProfileWithoutDev());
  EXPECT_EQ(Get(root_only, "netns_owner"), "self");
}

TEST_F(NamespacesTest, SharedNetworkReachesHostLoopback) {
  TcpListener listener;
  Report c = ProbeWith({}, {"connect", "127.0.0.1", std::to_string(listener.port())});
  EXPECT_EQ(Get(c, "connect"), "OK");
  EXPECT_EQ(listener.AcceptAndRead().value_or("<nothing>"), "hello from probe\n");

  UdpReceiver receiver;
  Report u = ProbeWith({}, {"udp", "127.0.0.1", std::to_string(receiver.port())});
  EXPECT_EQ(Get(u, "udp"), "OK");
  EXPECT_EQ(receiver.Receive().value_or("<nothing>"), "probe");
}

TEST_F(NamespacesTest, UnshareNetIsolatesUdp) {
  UdpReceiver receiver;
  Report u = ProbeWith({"--unshare-net"}, {"udp", "127.0.0.1", std::to_string(receiver.port())});
  EXPECT_EQ(Get(u, "udp"), "OK");  // lo is up inside: the datagram is sent, to nobody
  EXPECT_FALSE(receiver.Receive().has_value());
}

TEST_F(NamespacesTest, UnshareUtsKeepsHostname) {
  Report r = ReportWith({"--unshare-uts"});
  EXPECT_NE(Get(r, "ns.uts"), HostNamespace("uts"));
  EXPECT_EQ(Get(r, "hostname"), HostName());
}

TEST_F(NamespacesTest, HostnameSetsNameInNewUts) {
  Report r = ReportWith({"--unshare-uts", "--hostname", "sbx-probe-host"});
  EXPECT_EQ(Get(r, "hostname"), "sbx-probe-host");
  EXPECT_NE(HostName(), "sbx-probe-host");  // the host's UTS namespace is untouched
}

TEST_F(NamespacesTest, RepeatedHostnameLastWins) {
  RunResult r =
      RunProbe({"--unshare-uts", "--hostname", "first", "--hostname", "second"}, {"report"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(Get(ParseReport(r.out), "hostname"), "second");
  EXPECT_EQ(r.err, "bwrap: Only the last --hostname option will take effect\n");
}

TEST_F(NamespacesTest, UnshareCgroup) {
  if (!HasCgroupNamespaces()) GTEST_SKIP() << "kernel has no cgroup namespaces";
  Report r = ReportWith({"--unshare-cgroup"});
  EXPECT_NE(Get(r, "ns.cgroup"), HostNamespace("cgroup"));
}

TEST_F(NamespacesTest, UnshareCgroupTry) {
  Report r = ReportWith({"--unshare-cgroup-try"});
  if (HasCgroupNamespaces()) {
    EXPECT_NE(Get(r, "ns.cgroup"), HostNamespace("cgroup"));
  } else {
    EXPECT_EQ(Get(r, "ns.cgroup"), "unavailable");
  }
}

TEST_F(NamespacesTest, UnshareAllCreatesEveryNamespace) {
  Report r = ReportWith({"--unshare-all"});
  for (const char* ns : {"user", "ipc", "pid", "net", "uts", "mnt"}) {
    EXPECT_NE(Get(r, std::string("ns.") + ns), HostNamespace(ns)) << ns;
  }
  if (HasCgroupNamespaces()) {
    EXPECT_NE(Get(r, "ns.cgroup"), HostNamespace("cgroup"));
  }
  EXPECT_EQ(Get(r, "links"), "lo");
}

TEST_F(NamespacesTest, ShareNetAfterUnshareAllKeepsHostNetwork) {
  Report r = ReportWith({"--unshare-all", "--share-net"});
  EXPECT_EQ(Get(r, "ns.net"), HostNamespace("net"));
  EXPECT_NE(Get(r, "ns.ipc"), HostNamespace("ipc"));
  EXPECT_NE(Get(r, "ns.pid"), HostNamespace("pid"));
}

TEST_F(NamespacesTest, ShareNetBeforeUnshareAllHasNoEffect) {
  Report r = ReportWith({"--share-net", "--unshare-all"});
  EXPECT_NE(Get(r, "ns.net"), HostNamespace("net"));
}

TEST_F(NamespacesTest, UidAndGidInsideUserNamespace) {
  Report r = ReportWith({"--unshare-user", "--uid", "1234", "--gid", "5678"});
  EXPECT_EQ(Get(r, "uid"), "1234");
  EXPECT_EQ(Get(r, "euid"), "1234");
  EXPECT_EQ(Get(r, "gid"), "5678");
  EXPECT_EQ(Get(r, "egid"), "5678");
  EXPECT_EQ(Get(r, "uid_map"), ExpectedIdMap(1234, getuid(), true));
  EXPECT_EQ(Get(r, "gid_map"), ExpectedIdMap(5678, getgid(), true));
}

TEST_F(NamespacesTest, UidWithoutDevMapsCallerDirectly) {
  Report r = ProbeWith({"--unshare-user", "--uid", "1234"}, {"report"}, {}, ProfileWithoutDev());
  EXPECT_EQ(Get(r, "uid"), "1234");
  EXPECT_EQ(Get(r, "uid_map"), ExpectedIdMap(1234, getuid(), false));
}

TEST_F(NamespacesTest, UidWithoutUnshareUser) {
  RunResult r = RunProbe({"--uid", "5", "--gid", "6"}, {"report"});
  if (IsRoot()) {
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(r.err, "bwrap: Specifying --uid requires --unshare-user or --userns\n");
  } else {
    // Not root: the user namespace is implied, so --uid just works.
    ASSERT_EQ(r.exit_code, 0) << Describe(r);
    Report report = ParseReport(r.out);
    EXPECT_EQ(Get(report, "uid"), "5");
    EXPECT_EQ(Get(report, "gid"), "6");
  }
}

}  // namespace
}  // namespace sbx::integration
