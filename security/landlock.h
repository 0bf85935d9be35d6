// Landlock: a second, independent restriction of the agent, enforced by the kernel beside
// the mounts, the network namespace and seccomp (docs/landlock.md says what each rule adds).
//
// Three parts, each applied when the kernel's Landlock ABI has it:
//   fs     (ABI >= 2) writes only beneath the listed directories and to the listed device
//          files and the agent's own stdio files; reads and execution are left to the mounts
//   net    (ABI >= 4) TCP connect only to the listed ports (any address: Landlock rules are
//          per port), TCP bind nowhere
//   scope  (ABI >= 6) abstract Unix sockets and signals only within the agent's domain
// ABI 1 gets no fs part: it cannot allow a rename or link across directories at all.
//
// Who calls it: the supervisor (supervise/). BuildLandlockRuleset is pure; the ruleset fd
// is created in the supervisor before it forks the agent (CreateLandlockRuleset), and the
// agent's child only calls RestrictSelfWithLandlock before exec. Raw syscalls: the uapi
// header of Debian 12 stops at ABI 2, so the later constants and structs are defined here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"

namespace sbx::security {

// Access rights (uapi linux/landlock.h), with the ABI that introduced each.
inline constexpr uint64_t kLandlockFsExecute = 1ULL << 0;
inline constexpr uint64_t kLandlockFsWriteFile = 1ULL << 1;
inline constexpr uint64_t kLandlockFsReadFile = 1ULL << 2;
inline constexpr uint64_t kLandlockFsReadDir = 1ULL << 3;
inline constexpr uint64_t kLandlockFsRemoveDir = 1ULL << 4;
inline constexpr uint64_t kLandlockFsRemoveFile = 1ULL << 5;
inline constexpr uint64_t kLandlockFsMakeChar = 1ULL << 6;
inline constexpr uint64_t kLandlockFsMakeDir = 1ULL << 7;
inline constexpr uint64_t kLandlockFsMakeReg = 1ULL << 8;
inline constexpr uint64_t kLandlockFsMakeSock = 1ULL << 9;
inline constexpr uint64_t kLandlockFsMakeFifo = 1ULL << 10;
inline constexpr uint64_t kLandlockFsMakeBlock = 1ULL << 11;
inline constexpr uint64_t kLandlockFsMakeSym = 1ULL << 12;
inline constexpr uint64_t kLandlockFsRefer = 1ULL << 13;                 // ABI 2
inline constexpr uint64_t kLandlockFsTruncate = 1ULL << 14;              // ABI 3
inline constexpr uint64_t kLandlockFsIoctlDev = 1ULL << 15;              // ABI 5
inline constexpr uint64_t kLandlockNetBindTcp = 1ULL << 0;               // ABI 4
inline constexpr uint64_t kLandlockNetConnectTcp = 1ULL << 1;            // ABI 4
inline constexpr uint64_t kLandlockScopeAbstractUnixSocket = 1ULL << 0;  // ABI 6
inline constexpr uint64_t kLandlockScopeSignal = 1ULL << 1;              // ABI 6

// The rights a rule on a non-directory may carry (the kernel refuses others with EINVAL).
inline constexpr uint64_t kLandlockFileRights = kLandlockFsExecute | kLandlockFsWriteFile |
                                                kLandlockFsReadFile | kLandlockFsTruncate |
                                                kLandlockFsIoctlDev;

// The device files of the sandbox's /dev the agent may write to (and ioctl): the standard
// ones, the controlling tty and the pty pair (/dev/ptmx resolves into /dev/pts).
inline constexpr const char* kLandlockDeviceFiles[] = {"/dev/null",   "/dev/zero",    "/dev/full",
                                                       "/dev/random", "/dev/urandom", "/dev/tty",
                                                       "/dev/ptmx",   "/dev/pts"};

struct LandlockPolicy {
  bool fs = true;
  bool net = true;
  bool scope = true;
  std::vector<std::string> writable;    // directories (or files): write, create, remove
  std::vector<std::string> devices;     // device files: write, truncate, ioctl
  std::vector<uint16_t> connect_ports;  // TCP ports the agent may connect to
  std::vector<int> stdio_fds;           // fds whose files the agent may reopen for writing
};

struct LandlockPathRule {
  std::string path;
  uint64_t access = 0;  // as for a directory; trimmed to kLandlockFileRights for a file
};

struct LandlockFdRule {
  int fd = -1;
  uint64_t access = 0;  // trimmed by file type when the rule is added
};

// What is applied for one ABI: the handled masks (trimmed to the ABI) and the rules.
// Everything handled and not allowed by a rule is refused (EACCES, EPERM for scopes).
struct LandlockRuleset {
  int abi = 0;
  uint64_t handled_fs = 0;
  uint64_t handled_net = 0;
  uint64_t scoped = 0;
  std::vector<LandlockPathRule> paths;
  std::vector<LandlockFdRule> fds;
  std::vector<uint16_t> connect_ports;  // sorted, unique
  [[nodiscard]] bool Empty() const { return handled_fs == 0 && handled_net == 0 && scoped == 0; }
};

// The kernel's Landlock ABI version, or 0 when Landlock is missing or disabled.
int LandlockAbi();

// Pure: the ruleset `policy` becomes on a kernel with `abi` (0: nothing is handled).
LandlockRuleset BuildLandlockRuleset(const LandlockPolicy& policy, int abi);

// The names of the parts a ruleset enforces ("fs", "net", "scope"), in that order.
std::vector<std::string> LandlockParts(const LandlockRuleset& ruleset);

// A few human-readable lines for the printed plan and the status document.
std::vector<std::string> DescribeLandlock(const LandlockRuleset& ruleset);

// Parent side: creates the ruleset and adds every rule (path rules through O_PATH fds; a
// path that does not exist is skipped, an fd that is not a regular file or a device, or
// not open for writing, too). The fd is close-on-exec. An invalid fd for an empty ruleset.
base::Result<base::UniqueFd> CreateLandlockRuleset(const LandlockRuleset& ruleset);

// Child side, before exec: sets no_new_privs and restricts the calling thread (and all it
// starts) with `ruleset_fd`. Async-signal-safe; returns 0 or an errno. Irreversible.
int RestrictSelfWithLandlock(int ruleset_fd) noexcept;

}  // namespace sbx::security
