// Installing raw seccomp programs (child side) and checking them (parent side).
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>

#include <cerrno>
#include <string>

#include "security/seccomp.h"

namespace sbx::security {
namespace {

constexpr size_t kInsnSize = sizeof(sock_filter);
static_assert(kInsnSize == 8, "struct sock_filter is 8 bytes");

bool ProgramShapeOk(std::span<const uint8_t> program) {
  return !program.empty() && program.size() % kInsnSize == 0 &&
         program.size() / kInsnSize <= BPF_MAXINSNS;
}

}  // namespace

int LoadSeccompPrograms(std::span<const BpfProgram> programs) noexcept {
  // Check every program first so a bad one never leaves a half-installed stack.
  for (const BpfProgram& program : programs) {
    if (!ProgramShapeOk(program)) return EINVAL;
  }
  for (const BpfProgram& program : programs) {
    sock_fprog fprog{};
    fprog.len = static_cast<unsigned short>(program.size() / kInsnSize);
    // The kernel copies the instructions out of our memory; no alignment is required
    // of it beyond what the allocator gives a byte vector.
    fprog.filter = reinterpret_cast<sock_filter*>(const_cast<uint8_t*>(program.data()));
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog) != 0) return errno;
  }
  return 0;
}

base::Status ValidateSeccompProgram(std::span<const uint8_t> program) {
  if (program.empty()) return base::Error::Message("Invalid seccomp data, program is empty");
  if (program.size() % kInsnSize != 0) {
    return base::Error::Message("Invalid seccomp data, must be multiple of 8");
  }
  if (program.size() / kInsnSize > BPF_MAXINSNS) {
    return base::Error::Message("Invalid seccomp data, more than " + std::to_string(BPF_MAXINSNS) +
                                " instructions");
  }
  return {};
}

}  // namespace sbx::security
