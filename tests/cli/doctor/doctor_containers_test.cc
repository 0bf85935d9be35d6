// The container and LSM verdicts of doctor, from injected /proc and sysfs texts.
#include "cli/doctor/doctor_containers.h"

#include <cerrno>
#include <string>

#include <gtest/gtest.h>

#include "cli/doctor/doctor_probes.h"

namespace sbx::cli::doctor {
namespace {

Caller User() {
  Caller caller;
  caller.euid = 1000;
  caller.egid = 1000;
  caller.max_user_namespaces = 15000;
  return caller;
}

Caller Root() {
  Caller caller = User();
  caller.euid = 0;
  caller.egid = 0;
  return caller;
}

// /proc/self/mountinfo of a process in a Docker container with the default masked paths.
constexpr const char* kDockerMountinfo =
    "600 500 0:60 / / rw,relatime master:1 - overlay overlay rw\n"
    "601 600 0:62 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw\n"
    "602 601 0:62 /sys /proc/sys ro,nosuid,nodev,noexec,relatime - proc proc rw\n"
    "603 601 0:64 / /proc/acpi ro,relatime - tmpfs tmpfs ro\n"
    "604 601 0:5 /null /proc/kcore rw,nosuid - devtmpfs udev rw\n"
    "605 601 0:5 /null /proc/keys rw,nosuid - devtmpfs udev rw\n"
    "606 601 0:5 /null /proc/timer_list rw,nosuid - devtmpfs udev rw\n"
    "607 601 0:65 / /proc/scsi ro,relatime - tmpfs tmpfs ro\n";

constexpr const char* kHostMountinfo =
    "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
    "23 22 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw\n"
    "40 23 0:35 / /proc/sys/fs/binfmt_misc rw,relatime shared:20 - autofs systemd-1 rw\n";

TEST(DoctorContainersTest, ParsesSeccompAndCapabilitiesFromStatus) {
  ContainerFacts facts;
  ParseProcStatus(
      "Name:\tx\nCapEff:\t00000000a80425fb\nNoNewPrivs:\t1\nSeccomp:\t2\n"
      "Seccomp_filters:\t1\n",
      &facts);
  EXPECT_EQ(facts.seccomp_mode, 2);
  EXPECT_EQ(facts.seccomp_filters, 1);
  ASSERT_TRUE(facts.cap_effective);
  EXPECT_EQ(*facts.cap_effective, 0xa80425fbULL);
}

TEST(DoctorContainersTest, DockerMaskedProcIsAFailWithTheRuntimeFlags) {
  const ProcMasking masking = ParseProcMasking(kDockerMountinfo);
  EXPECT_TRUE(masking.sys_read_only);
  EXPECT_EQ(masking.masked.size(), 5U);
  ContainerFacts facts;
  facts.mountinfo = kDockerMountinfo;
  const Check check = ProcMaskingCheck(facts);
  EXPECT_EQ(check.status, CheckStatus::kFail);
  EXPECT_NE(check.detail.find("/proc/acpi, /proc/kcore, /proc/keys, /proc/timer_list and 1 more"),
            std::string::npos)
      << check.detail;
  EXPECT_NE(check.detail.find("/proc/sys read-only"), std::string::npos) << check.detail;
  EXPECT_NE(check.fix.find("--security-opt systempaths=unconfined"), std::string::npos);
  EXPECT_NE(check.fix.find("procMount: Unmasked"), std::string::npos);
  EXPECT_NE(check.fix.find("empty linux.maskedPaths and linux.readonlyPaths"), std::string::npos);
}

TEST(DoctorContainersTest, HostProcWithBinfmtMiscIsOk) {
  ContainerFacts facts;
  facts.mountinfo = kHostMountinfo;
  EXPECT_EQ(ProcMaskingCheck(facts).status, CheckStatus::kOk);
}

TEST(DoctorContainersTest, SeccompEpermOnUserNamespacesIsTheBlocker) {
  ContainerFacts facts;
  facts.seccomp_mode = 2;
  facts.seccomp_filters = 1;
  facts.userns_errno = EPERM;
  for (const Caller& caller : {User(), Root()}) {
    const Check check = SeccompFilterCheck(caller, facts);
    EXPECT_EQ(check.status, CheckStatus::kFail);
    EXPECT_NE(check.detail.find("1 seccomp filter(s)"), std::string::npos) << check.detail;
    EXPECT_NE(check.fix.find("--security-opt seccomp=unconfined"), std::string::npos);
    EXPECT_NE(check.fix.find("seccompProfile.type: Unconfined"), std::string::npos);
    EXPECT_NE(check.fix.find("no linux.seccomp in the OCI spec"), std::string::npos);
    EXPECT_EQ(UserNamespaceBlocker(caller, facts, EPERM), check.fix);
  }
}

TEST(DoctorContainersTest, DockerRefusingUnshareOutrightIsSeccomp) {
  ContainerFacts facts;
  facts.seccomp_mode = 2;
  facts.unshare_errno = EPERM;
  facts.userns_errno = EPERM;
  Caller caller = User();
  caller.unprivileged_userns_clone = 0;  // even then: unshare(0) is refused by the filter
  EXPECT_TRUE(SeccompBlocksUserNamespaces(caller, facts));
}

TEST(DoctorContainersTest, EpermFromTheDebianSysctlIsNotBlamedOnSeccomp) {
  ContainerFacts facts;
  facts.seccomp_mode = 2;
  facts.userns_errno = EPERM;
  Caller caller = User();
  caller.unprivileged_userns_clone = 0;
  EXPECT_FALSE(SeccompBlocksUserNamespaces(caller, facts));
  EXPECT_EQ(SeccompFilterCheck(caller, facts).status, CheckStatus::kInfo);
  EXPECT_NE(UserNamespaceBlocker(caller, facts, EPERM).find("unprivileged_userns_clone=1"),
            std::string::npos);
}

TEST(DoctorContainersTest, AFilterThatPassesUserNamespacesIsInfo) {
  ContainerFacts facts;
  facts.seccomp_mode = 2;
  facts.seccomp_filters = 3;
  const Check check = SeccompFilterCheck(User(), facts);
  EXPECT_EQ(check.status, CheckStatus::kInfo);
  EXPECT_NE(check.detail.find("passes it"), std::string::npos) << check.detail;
  EXPECT_EQ(SeccompFilterCheck(User(), ContainerFacts{}).status, CheckStatus::kOk);
}

TEST(DoctorContainersTest, MaxUserNamespacesZeroNamesTheSysctl) {
  Caller caller = Root();
  caller.max_user_namespaces = 0;
  EXPECT_NE(UserNamespaceBlocker(caller, {}, ENOSPC).find("user.max_user_namespaces is 0"),
            std::string::npos);
  EXPECT_NE(UserNamespaceBlocker(Root(), {}, ENOSPC).find("limit is reached"), std::string::npos);
}

TEST(DoctorContainersTest, UbuntuRestrictionWithoutOurProfileFailsWithTheInstallFix) {
  Caller caller = User();
  caller.apparmor_restrict_userns = 1;
  ContainerFacts facts;
  facts.apparmor_label = "unconfined";
  facts.apparmor_profiles = "bwrap (unconfined)\nunprivileged_userns (enforce)\n";
  const Check check = AppArmorCheck(caller, facts);
  EXPECT_EQ(check.status, CheckStatus::kFail);
  EXPECT_NE(check.detail.find("profile ateam-sandbox is not loaded"), std::string::npos)
      << check.detail;
  EXPECT_NE(check.fix.find("apparmor_parser -r /etc/apparmor.d/ateam-sandbox"), std::string::npos);
  EXPECT_NE(check.fix.find("kernel.apparmor_restrict_unprivileged_userns=0"), std::string::npos);
  EXPECT_NE(MountBlockerFix(caller, facts).find("/etc/apparmor.d/ateam-sandbox"),
            std::string::npos);
}

TEST(DoctorContainersTest, UbuntuRestrictionUnderOurProfileIsOk) {
  Caller caller = User();
  caller.apparmor_restrict_userns = 1;
  ContainerFacts facts;
  facts.apparmor_label = "ateam-sandbox (unconfined)";
  facts.apparmor_profiles = "ateam-sandbox (unconfined)\n";
  EXPECT_EQ(AppArmorCheck(caller, facts).status, CheckStatus::kOk);
  // Loaded, but this copy of the binary is not the one it attaches to.
  facts.apparmor_label = "unconfined";
  const Check check = AppArmorCheck(caller, facts);
  EXPECT_EQ(check.status, CheckStatus::kFail);
  EXPECT_NE(check.fix.find("/usr/bin/ateam-sandbox"), std::string::npos) << check.fix;
}

TEST(DoctorContainersTest, ProfileListMatchesWholeNames) {
  EXPECT_TRUE(ProfileLoaded("a (enforce)\nateam-sandbox (unconfined)\n", "ateam-sandbox"));
  EXPECT_FALSE(ProfileLoaded("ateam-sandbox-old (enforce)\n", "ateam-sandbox"));
  EXPECT_FALSE(ProfileLoaded("", "ateam-sandbox"));
}

TEST(DoctorContainersTest, DockerDefaultAppArmorNamesTheSecurityOpt) {
  ContainerFacts facts;
  facts.apparmor_label = "docker-default (enforce)";
  const Check check = AppArmorCheck(Root(), facts);
  EXPECT_EQ(check.status, CheckStatus::kInfo);
  EXPECT_NE(check.fix.find("--security-opt apparmor=unconfined"), std::string::npos) << check.fix;
  EXPECT_NE(check.fix.find("appArmorProfile.type: Unconfined"), std::string::npos) << check.fix;
}

TEST(DoctorContainersTest, SelinuxLabelIsNotAnAppArmorProfile) {
  ContainerFacts facts;
  facts.apparmor_label = "system_u:system_r:container_t:s0:c1,c2";
  const Check check = AppArmorCheck(User(), facts);
  EXPECT_EQ(check.status, CheckStatus::kInfo);
  EXPECT_NE(check.detail.find("SELinux label"), std::string::npos) << check.detail;
}

TEST(DoctorContainersTest, RootCapabilities) {
  EXPECT_FALSE(RootCapabilitiesCheck(User(), {}));
  ContainerFacts facts;
  facts.cap_effective = 0xa80425fbULL;  // Docker's default set
  facts.uid_map = "         0          0 4294967295\n";
  auto check = RootCapabilitiesCheck(Root(), facts);
  ASSERT_TRUE(check);
  EXPECT_EQ(check->status, CheckStatus::kOk);
  facts.cap_effective = 0xa80425fbULL & ~(1ULL << 7);  // --cap-drop SETUID
  check = RootCapabilitiesCheck(Root(), facts);
  EXPECT_EQ(check->status, CheckStatus::kFail);
  EXPECT_NE(check->detail.find("CAP_SETUID"), std::string::npos) << check->detail;
  // uid 0 of a namespace that maps only itself runs sandboxes as itself: nothing to hand over.
  facts.uid_map = "         0       1000          1\n";
  check = RootCapabilitiesCheck(Root(), facts);
  EXPECT_EQ(check->status, CheckStatus::kInfo);
}

}  // namespace
}  // namespace sbx::cli::doctor
