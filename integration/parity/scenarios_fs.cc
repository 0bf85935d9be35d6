// Parity rows: filesystem operations and the monitoring / synchronisation fds
// (docs/bwrap-behaviour.md).
#include <string>

#include "integration/parity/scenario.h"

namespace sbx::integration::parity {
namespace {

constexpr char k080NoOverlay[] =
    "0.8.0 has no overlay options (--overlay-src, --overlay, --tmp-overlay, --ro-overlay; "
    "added in 0.11.0)";
constexpr char k080SymlinkText[] =
    "0.8.0 reports every existing --symlink destination as `File exists` (0.11.1 names the "
    "existing target or says it is not a symlink)";
constexpr char kLockFileRace[] =
    "bwrap's pid-1 reaper opens --lock-file files only after forking the command, so the "
    "command may already have run (and printed) when bwrap fails; the native backend fails "
    "before the command starts";
constexpr char kOverlaySrcUnknown[] = "bwrap: Unknown option --overlay-src\n";

}  // namespace

void AddFilesystemScenarios(std::vector<Scenario>* table) {
  using Kind = FdSpec::Kind;
  table->insert(
      table->end(),
      {
          {.name = "Bind", .options = {"--bind", "@T/dir", "/mnt"}},
          {.name = "BindWrite",
           .options = {"--bind", "@T/dir", "/mnt"},
           .command = {kProbe, "try-write", "/mnt/new"}},
          {.name = "BindFileDest",
           .options = {"--bind", "@T/file", "/deep/er/file"},
           .command = {kProbe, "stat", "/deep/er"},
           .compare = kExitCode | kStderr,
           .known_difference = "0.8.0 creates the parents of a bind destination 0700; 0.11.1 "
                               "creates them 0755 (narrowed only by --perms), as we do"},
          {.name = "BindTryMissing", .options = {"--bind-try", "@T/missing", "/mnt"}},
          {.name = "BindMissingSource", .options = {"--bind", "@T/missing", "/mnt"}},
          {.name = "DevBind", .options = {"--dev-bind", "/dev/null", "/null"}},
          {.name = "DevBindTryMissing", .options = {"--dev-bind-try", "@T/missing", "/mnt"}},
          {.name = "RoBind",
           .options = {"--ro-bind", "@T/dir", "/mnt"},
           .command = {kProbe, "try-write", "/mnt/f"}},
          {.name = "RoBindTry", .options = {"--ro-bind-try", "@T/dir", "/mnt"}},
          {.name = "BindFd",
           .options = {"--bind-fd", "5", "/mnt"},
           .fds = {{5, Kind::kPathOfFixture}}},
          {.name = "RoBindFd",
           .options = {"--ro-bind-fd", "5", "/mnt"},
           .command = {kProbe, "try-write", "/mnt/f"},
           .fds = {{5, Kind::kPathOfFixture}}},
          {.name = "BindFdBad", .options = {"--bind-fd", "77", "/mnt"}},
          {.name = "RoBindFdMissingArgument", .options = {"--ro-bind-fd", "5"}, .command = {}},
          {.name = "RemountRo", .options = {"--bind", "@T/dir", "/mnt", "--remount-ro", "/mnt"}},
          {.name = "RemountRoNotMountPoint", .options = {"--dir", "/d", "--remount-ro", "/d"}},
          {.name = "RemountRoMissing", .options = {"--remount-ro", "/nonexistent"}},
          {.name = "Tmpfs", .options = {"--tmpfs", "/tmp"}},
          {.name = "TmpfsSizePerms",
           .options = {"--size", "1048576", "--perms", "0700", "--tmpfs", "/scratch"}},
          {.name = "TmpfsPermsSizeHex",
           .options = {"--perms", "0750", "--size", "0x200000", "--tmpfs", "/scratch"}},
          {.name = "Mqueue", .options = {"--unshare-ipc", "--mqueue", "/mq"}},
          {.name = "MqueueWithoutIpc", .options = {"--mqueue", "/mq"}},
          {.name = "DirPerms",
           .options = {"--perms", "0700", "--dir", "/d/e"},
           .command = {kProbe, "stat", "/d"}},
          {.name = "DirUnderReadOnly", .options = {"--dir", "/usr/newdir"}},
          {.name = "File",
           .options = {"--file", "5", "/f"},
           .command = {kProbe, "try-read", "/f"},
           .fds = {{5, Kind::kData, "hello file\n"}}},
          {.name = "FilePerms",
           .options = {"--perms", "0640", "--file", "5", "/f"},
           .command = {kProbe, "stat", "/f"},
           .fds = {{5, Kind::kData, "x"}}},
          {.name = "FileBadFd", .options = {"--file", "77", "/f"}},
          {.name = "BindData",
           .options = {"--perms", "0640", "--bind-data", "5", "/bd"},
           .command = {kProbe, "stat", "/bd"},
           .fds = {{5, Kind::kData, "data"}}},
          {.name = "RoBindData",
           .options = {"--ro-bind-data", "5", "/bd"},
           .command = {kProbe, "try-write", "/bd"},
           .fds = {{5, Kind::kData, "data"}}},
          {.name = "Symlink",
           .options = {"--symlink", "/etc/hostname", "/l"},
           .command = {kProbe, "stat", "/l"}},
          {.name = "SymlinkIdempotent",
           .options = {"--symlink", "usr/bin", "/bin"},
           .compare = 0,
           .known_difference = std::string(k080SymlinkText) + "; 0.11.1 accepts an identical one",
           .bwrap_stderr = "bwrap: Can't make symlink at /bin: File exists\n"},
          {.name = "SymlinkConflict",
           .options = {"--symlink", "/x", "/bin"},
           .compare = kExitCode | kStdout,
           .known_difference = k080SymlinkText,
           .bwrap_stderr = "bwrap: Can't make symlink at /bin: File exists\n"},
          {.name = "SymlinkOverDir",
           .options = {"--symlink", "/x", "/etc"},
           .compare = kExitCode | kStdout,
           .known_difference = k080SymlinkText,
           .bwrap_stderr = "bwrap: Can't make symlink at /etc: File exists\n"},
          {.name = "Chmod",
           .options = {"--dir", "/d", "--chmod", "0700", "/d"},
           .command = {kProbe, "stat", "/d"}},
          {.name = "ChmodMissing", .options = {"--chmod", "0755", "/nonexistent"}},
          {.name = "ChmodInvalid", .options = {"--chmod", "9", "/etc"}},
          {.name = "PermsInvalid", .options = {"--perms", "999", "--dir", "/d"}},
          {.name = "PermsNotFollowed", .options = {"--perms", "0755", "--chdir", "/"}},
          {.name = "PermsTwice", .options = {"--perms", "0755", "--perms", "0700", "--dir", "/d"}},
          {.name = "SizeNotFollowed", .options = {"--size", "100", "--dir", "/d"}},
          {.name = "SizeZero", .options = {"--size", "0", "--tmpfs", "/t"}},
          {.name = "SizeTooBig", .options = {"--size", "9223372036854775809", "--tmpfs", "/t"}},
          {.name = "BindFileThenDir",
           .options = {"--bind", "@T/file", "/x", "--bind", "@T/dir", "/x/y"}},
          {.name = "TmpOverlay",
           .options = {"--overlay-src", "@T/lower1", "--tmp-overlay", "/ov"},
           .compare = 0,
           .known_difference = k080NoOverlay,
           .bwrap_stderr = kOverlaySrcUnknown},
          {.name = "RoOverlay",
           .options = {"--overlay-src", "@T/lower1", "--overlay-src", "@T/lower2", "--ro-overlay",
                       "/ov"},
           .compare = 0,
           .known_difference = k080NoOverlay,
           .bwrap_stderr = kOverlaySrcUnknown},
          {.name = "Overlay",
           .options = {"--overlay-src", "@T/lower1", "--overlay", "@T/upper", "@T/work", "/ov"},
           .compare = 0,
           .known_difference = k080NoOverlay,
           .bwrap_stderr = kOverlaySrcUnknown},
          {.name = "OverlayWithoutSrc", .options = {"--overlay", "@T/upper", "@T/work", "/ov"}},
          {.name = "RoOverlayOneSrc",
           .options = {"--overlay-src", "@T/lower1", "--ro-overlay", "/o"}},
          {.name = "OverlaySrcTrailing", .options = {"--overlay-src", "@T/lower1", "--dir", "/d"}},
      });
}

void AddFdScenarios(std::vector<Scenario>* table) {
  using Kind = FdSpec::Kind;
  table->insert(
      table->end(),
      {
          {.name = "LockFile", .options = {"--lock-file", "/etc/hostname"}},
          {.name = "LockFileMissing",
           .options = {"--lock-file", "/nonexistent"},
           .compare = kExitCode | kStderr,
           .known_difference = kLockFileRace},
          {.name = "SyncFd", .options = {"--sync-fd", "5"}, .fds = {{5, Kind::kCapture}}},
          {.name = "SyncFdAsPid1",
           .options = {"--unshare-pid", "--as-pid-1", "--sync-fd", "5"},
           .fds = {{5, Kind::kCapture}}},
          {.name = "SyncFdInvalid", .options = {"--sync-fd", "-1"}},
          {.name = "BlockFd", .options = {"--block-fd", "5"}, .fds = {{5, Kind::kData, "x"}}},
          {.name = "InfoFd", .options = {"--info-fd", "5"}, .fds = {{5, Kind::kCapture}}},
          {.name = "InfoFdAllNamespaces",
           .options = {"--unshare-all", "--info-fd", "5"},
           .fds = {{5, Kind::kCapture}}},
          {.name = "InfoFdInvalid", .options = {"--info-fd", "x"}},
          {.name = "JsonStatusFd",
           .options = {"--unshare-pid", "--json-status-fd", "5"},
           .command = {kProbe, "exit", "3"},
           .fds = {{5, Kind::kCapture}}},
          {.name = "JsonStatusFdExecFails",
           .options = {"--json-status-fd", "5"},
           .command = {"/nonexistent"},
           .fds = {{5, Kind::kCapture}}},
          {.name = "UsernsBlockFdWithoutUnshareUser", .options = {"--userns-block-fd", "5"}},
          {.name = "UsernsBlockFdWithoutInfoFd",
           .options = {"--unshare-user", "--userns-block-fd", "5"}},
          {.name = "UsernsBlockFd",
           .options = {"--unshare-user", "--info-fd", "5", "--userns-block-fd", "6"},
           .profile = Profile::kNoDev,
           .fds = {{5, Kind::kCapture}, {6, Kind::kData, "x"}},
           .compare = kExitCode | kFdData,
           .known_difference =
               "nobody wrote the id maps, so the setup root cannot be made: bwrap's mount(2) of "
               "the tmpfs succeeds and its mkdir fails (\"Creating newroot failed\"), our "
               "fsmount(2) fails on the unmapped owner already (\"Failed to mount tmpfs\"); "
               "both with EOVERFLOW and exit 1",
           .bwrap_stderr = "bwrap: Creating newroot failed: Value too large for defined data "
                           "type\n"},
      });
}

}  // namespace sbx::integration::parity
