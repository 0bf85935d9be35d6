// Filesystem ops: the bind family, --remount-ro, --proc, --dev, --tmpfs (+--size, --perms),
// --mqueue, --dir, --symlink, --chmod, and what must NOT be visible in the new root.
#include <unistd.h>

#include <fstream>
#include <string>

#include "integration/sandbox_test.h"

namespace sbx::integration {
namespace {

using FilesystemTest = SandboxTest;

constexpr char kMissingSource[] = "/nonexistent-sbx-source";

bool HostHasMountPoint(const std::string& point) {
  std::ifstream in("/proc/self/mountinfo");
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> fields = Words(line);
    if (fields.size() > 4 && fields[4] == point) return true;
  }
  return false;
}

// A host directory holding hello.txt, for bind sources.
class BindSource : public TempDir {
 public:
  BindSource() { WriteFile(Sub("hello.txt"), "hello\n"); }
};

TEST_F(FilesystemTest, BindIsWritableAndNosuidNodev) {
  BindSource src;
  Args options = {"--bind", src.path(), "/mnt/data"};
  Report r = ReportWith(options);
  std::vector<std::string> flags = MountFlags(r, "/mnt/data");
  EXPECT_TRUE(Contains(flags, "rw")) << Get(r, "mount./mnt/data");
  EXPECT_TRUE(Contains(flags, "nosuid"));
  EXPECT_TRUE(Contains(flags, "nodev"));
  EXPECT_EQ(Get(ProbeWith(options, {"try-read", "/mnt/data/hello.txt"}), "content"), "hello\\x0a");
  EXPECT_EQ(Get(ProbeWith(options, {"try-write", "/mnt/data/new.txt"}), "try-write"), "OK");
  EXPECT_EQ(ReadFile(src.Sub("new.txt")).value_or("<missing>"), "written by probe\n");
}

TEST_F(FilesystemTest, BindOfFileCreatesFileDestination) {
  BindSource src;
  Report r =
      ProbeWith({"--bind", src.Sub("hello.txt"), "/deep/er/hello"}, {"stat", "/deep/er/hello"});
  EXPECT_EQ(Get(r, "type"), "file");
}

TEST_F(FilesystemTest, BindTrySkipsMissingSource) {
  Report r = ProbeWith({"--bind-try", kMissingSource, "/mnt/x"}, {"stat", "/mnt/x"});
  EXPECT_EQ(Get(r, "stat"), "ENOENT");
}

TEST_F(FilesystemTest, BindTryBindsExistingSource) {
  BindSource src;
  Args options = {"--bind-try", src.path(), "/mnt/data"};
  EXPECT_EQ(Get(ProbeWith(options, {"try-write", "/mnt/data/new.txt"}), "try-write"), "OK");
  EXPECT_TRUE(Contains(MountFlags(ReportWith(options), "/mnt/data"), "nodev"));
}

TEST_F(FilesystemTest, BindAddsNodevSoDevicesCannotBeOpened) {
  Args options = {"--bind", "/dev", "/hostdev"};
  EXPECT_TRUE(Contains(MountFlags(ReportWith(options), "/hostdev"), "nodev"));
  EXPECT_EQ(Get(ProbeWith(options, {"try-read", "/hostdev/null"}), "try-read"), "EACCES");
}

TEST_F(FilesystemTest, DevBindAllowsDevices) {
  Args options = {"--dev-bind", "/dev", "/hostdev"};
  std::vector<std::string> flags = MountFlags(ReportWith(options), "/hostdev");
  EXPECT_FALSE(Contains(flags, "nodev"));
  EXPECT_TRUE(Contains(flags, "nosuid"));
  EXPECT_EQ(Get(ProbeWith(options, {"try-read", "/hostdev/null"}), "try-read"), "OK");
}

TEST_F(FilesystemTest, DevBindTry) {
  Report missing = ProbeWith({"--dev-bind-try", kMissingSource, "/hostdev"}, {"stat", "/hostdev"});
  EXPECT_EQ(Get(missing, "stat"), "ENOENT");
  Args options = {"--dev-bind-try", "/dev", "/hostdev"};
  EXPECT_EQ(Get(ProbeWith(options, {"try-read", "/hostdev/zero"}), "try-read"), "OK");
}

TEST_F(FilesystemTest, RoBindIsReadOnly) {
  BindSource src;
  Args options = {"--ro-bind", src.path(), "/mnt/ro"};
  std::vector<std::string> flags = MountFlags(ReportWith(options), "/mnt/ro");
  EXPECT_TRUE(Contains(flags, "ro"));
  EXPECT_TRUE(Contains(flags, "nosuid"));
  EXPECT_TRUE(Contains(flags, "nodev"));
  EXPECT_EQ(Get(ProbeWith(options, {"try-write", "/mnt/ro/new.txt"}), "try-write"), "EROFS");
  EXPECT_EQ(Get(ProbeWith(options, {"try-read", "/mnt/ro/hello.txt"}), "try-read"), "OK");
  EXPECT_FALSE(ReadFile(src.Sub("new.txt")).has_value());
}

TEST_F(FilesystemTest, RoBindAppliesToEverySubmount) {
  if (!HostHasMountPoint("/dev/pts")) GTEST_SKIP() << "host /dev has no /dev/pts submount";
  Report r = ReportWith({"--ro-bind", "/dev", "/rodev"});
  EXPECT_TRUE(Contains(MountFlags(r, "/rodev"), "ro"));
  EXPECT_TRUE(Contains(MountFlags(r, "/rodev/pts"), "ro")) << Get(r, "mount./rodev/pts");
}

TEST_F(FilesystemTest, RoBindTry) {
  Report missing = ProbeWith({"--ro-bind-try", kMissingSource, "/mnt/ro"}, {"stat", "/mnt/ro"});
  EXPECT_EQ(Get(missing, "stat"), "ENOENT");
  BindSource src;
  Args options = {"--ro-bind-try", src.path(), "/mnt/ro"};
  EXPECT_EQ(Get(ProbeWith(options, {"try-write", "/mnt/ro/x"}), "try-write"), "EROFS");
}

TEST_F(FilesystemTest, RemountRoMakesBindReadOnly) {
  BindSource src;
  Args options = {"--bind", src.path(), "/mnt/rw", "--remount-ro", "/mnt/rw"};
  EXPECT_TRUE(Contains(MountFlags(ReportWith(options), "/mnt/rw"), "ro"));
  EXPECT_EQ(Get(ProbeWith(options, {"try-write", "/mnt/rw/x"}), "try-write"), "EROFS");
}

TEST_F(FilesystemTest, ProcInNewPidNamespaceIsFresh) {
  Report r = ReportWith({"--unshare-pid"});
  EXPECT_EQ(MountType(r, "/proc"), "proc");
  std::vector<std::string> flags = MountFlags(r, "/proc");
  for (const char* flag : {"nosuid", "nodev", "noexec"}) EXPECT_TRUE(Contains(flags, flag)) << flag;
  EXPECT_EQ(Get(r, "pids"), "1 2");
}

TEST_F(FilesystemTest, ProcWithoutPidNamespaceShowsHostProcesses) {
  Report r = ReportWith({});
  EXPECT_EQ(MountType(r, "/proc"), "proc");
  EXPECT_TRUE(Contains(Words(Get(r, "pids")), std::to_string(getpid())));
}

TEST_F(FilesystemTest, DevIsMinimal) {
  Report r = ReportWith({});
  EXPECT_EQ(Get(r, "dev"),
            "core fd full null ptmx pts random shm stderr stdin stdout tty urandom zero");
  EXPECT_EQ(MountType(r, "/dev"), "tmpfs");
  EXPECT_TRUE(Contains(MountFlags(r, "/dev"), "nodev"));
  EXPECT_EQ(MountType(r, "/dev/pts"), "devpts");
  EXPECT_EQ(Get(ProbeWith({}, {"stat", "/dev/stdout"}), "target"), "/proc/self/fd/1");
  EXPECT_EQ(Get(ProbeWith({}, {"stat", "/dev/ptmx"}), "target"), "pts/ptmx");
  EXPECT_EQ(Get(ProbeWith({}, {"stat", "/dev/shm"}), "type"), "dir");
  EXPECT_EQ(Get(ProbeWith({}, {"try-write", "/dev/null"}), "try-write"), "OK");
  EXPECT_EQ(Get(ProbeWith({}, {"try-read", "/dev/zero"}), "content").substr(0, 8), "\\x00\\x00");
}

TEST_F(FilesystemTest, TmpfsIsWritableNosuidNodev) {
  Args options = {"--tmpfs", "/scratch"};
  Report r = ReportWith(options);
  EXPECT_EQ(MountType(r, "/scratch"), "tmpfs");
  EXPECT_TRUE(Contains(MountFlags(r, "/scratch"), "nosuid"));
  EXPECT_TRUE(Contains(MountFlags(r, "/scratch"), "nodev"));
  EXPECT_EQ(Get(ProbeWith(options, {"stat", "/scratch"}), "mode"), "0755");
  EXPECT_EQ(Get(ProbeWith(options, {"try-write", "/scratch/f"}), "try-write"), "OK");
}

TEST_F(FilesystemTest, TmpfsSize) {
  Report r = ProbeWith({"--size", "1048576", "--tmpfs", "/scratch"}, {"stat", "/scratch"});
  EXPECT_EQ(Get(r, "fs_bytes"), "1048576");
}

TEST_F(FilesystemTest, TmpfsPermsAndSizeInEitherOrder) {
  Report a = ProbeWith({"--perms", "01777", "--size", "2097152", "--tmpfs", "/scratch"},
                       {"stat", "/scratch"});
  EXPECT_EQ(Get(a, "mode"), "1777");
  EXPECT_EQ(Get(a, "fs_bytes"), "2097152");
  Report b = ProbeWith({"--size", "0x100000", "--perms", "0700", "--tmpfs", "/scratch"},
                       {"stat", "/scratch"});
  EXPECT_EQ(Get(b, "mode"), "0700");
  EXPECT_EQ(Get(b, "fs_bytes"), "1048576");
}

TEST_F(FilesystemTest, MqueueInNewIpcNamespace) {
  Report r = ReportWith({"--unshare-ipc", "--mqueue", "/dev/mqueue"});
  EXPECT_EQ(MountType(r, "/dev/mqueue"), "mqueue");
}

TEST_F(FilesystemTest, MqueueWithoutIpcNamespace) {
  RunResult r = RunProbe({"--mqueue", "/dev/mqueue"}, {"report"});
  if (IsRoot()) {
    ASSERT_EQ(r.exit_code, 0) << Describe(r);
    EXPECT_EQ(MountType(ParseReport(r.out), "/dev/mqueue"), "mqueue");
  } else {
    // The host's mqueue belongs to the initial IPC namespace: not mountable from a userns.
    EXPECT_EQ(r.exit_code, 1) << Describe(r);
    EXPECT_EQ(r.err, "bwrap: Can't mount mqueue on /newroot/dev/mqueue: Operation not permitted\n");
  }
}

TEST_F(FilesystemTest, DirCreatesParentsWithDefaultMode) {
  Args options = {"--dir", "/a/b/c"};
  Report c = ProbeWith(options, {"stat", "/a/b/c"});
  EXPECT_EQ(Get(c, "type"), "dir");
  EXPECT_EQ(Get(c, "mode"), "0755");
  EXPECT_EQ(Get(ProbeWith(options, {"stat", "/a/b"}), "mode"), "0755");
}

TEST_F(FilesystemTest, DirPermsAlsoNarrowCreatedParents) {
  EXPECT_EQ(Get(ProbeWith({"--perms", "0700", "--dir", "/p/q"}, {"stat", "/p/q"}), "mode"), "0700");
  EXPECT_EQ(Get(ProbeWith({"--perms", "0700", "--dir", "/p/q"}, {"stat", "/p"}), "mode"), "0700");
  EXPECT_EQ(Get(ProbeWith({"--perms", "0750", "--dir", "/p/q"}, {"stat", "/p"}), "mode"), "0750");
}

TEST_F(FilesystemTest, DirOnExistingDirectoryKeepsItsMode) {
  Report r = ProbeWith({"--tmpfs", "/t", "--perms", "0700", "--dir", "/t"}, {"stat", "/t"});
  EXPECT_EQ(Get(r, "mode"), "0755");
}

TEST_F(FilesystemTest, SymlinkIsCreatedUnresolved) {
  BindSource src;
  Args options = {"--ro-bind", src.path(),  "/data",          "--symlink", "/data/hello.txt",
                  "/link",     "--symlink", "does/not/exist", "/dangling"};
  Report link = ProbeWith(options, {"stat", "/link"});
  EXPECT_EQ(Get(link, "type"), "symlink");
  EXPECT_EQ(Get(link, "target"), "/data/hello.txt");
  EXPECT_EQ(Get(ProbeWith(options, {"try-read", "/link"}), "content"), "hello\\x0a");
  EXPECT_EQ(Get(ProbeWith(options, {"stat", "/dangling"}), "target"), "does/not/exist");
  EXPECT_EQ(Get(ProbeWith({}, {"stat", "/bin"}), "target"), "usr/bin");
}

TEST_F(FilesystemTest, ChmodChangesExistingPath) {
  Args options = {"--tmpfs", "/t",   "--dir",   "/t/d", "--chmod",
                  "0700",    "/t/d", "--chmod", "1777", "/t"};
  EXPECT_EQ(Get(ProbeWith(options, {"stat", "/t/d"}), "mode"), "0700");
  EXPECT_EQ(Get(ProbeWith(options, {"stat", "/t"}), "mode"), "1777");
}

TEST_F(FilesystemTest, NewRootIsTmpfsAndHidesHostAndSetupPaths) {
  Report r = ReportWith({});
  EXPECT_EQ(MountType(r, "/"), "tmpfs");
  for (const auto& [key, value] : r) {
    EXPECT_EQ(key.find("oldroot"), std::string::npos) << key;
    EXPECT_EQ(key.find("newroot"), std::string::npos) << key;
  }
  for (const char* path : {"/oldroot", "/newroot", "/tmp", "/home", "/root", "/var", "/run"}) {
    EXPECT_EQ(Get(ProbeWith({}, {"stat", path}), "stat"), "ENOENT") << path;
  }
}

}  // namespace
}  // namespace sbx::integration
