// A small classic-BPF interpreter for seccomp programs, so tests can check what a compiled
// policy does for a given system call without installing it (as sandbox2's bpf_evaluator
// and Chromium's bpf_dsl verifier do). It understands every classic opcode a seccomp
// program may contain: loads from struct seccomp_data (32-bit words, native byte order),
// immediates, the scratch memory, ALU with K or X, all jumps, RET K/A, TAX/TXA.
#pragma once

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include <cstdint>
#include <initializer_list>
#include <span>

#include "base/error.h"

namespace sbx::testing {

// Runs `program` over `data` and returns the 32-bit value it returns. An Error for a
// malformed program: a jump or fall-through past the end, a load outside seccomp_data or
// not 4-byte aligned, an unknown opcode, a scratch index above 15.
base::Result<uint32_t> EvalBpf(std::span<const sock_filter> program, const seccomp_data& data);

// The same over the raw bytes libseccomp exports (length must be a multiple of 8).
base::Result<uint32_t> EvalBpfBytes(std::span<const uint8_t> program, const seccomp_data& data);

// seccomp_data for system call `nr` with up to six arguments.
seccomp_data MakeSeccompData(int nr, std::initializer_list<uint64_t> args = {},
                             uint32_t arch = AUDIT_ARCH_X86_64);

// The action part of a seccomp return value (SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO, ...)
// and its data part (the errno for SECCOMP_RET_ERRNO).
constexpr uint32_t SeccompAction(uint32_t ret) { return ret & SECCOMP_RET_ACTION_FULL; }
constexpr uint32_t SeccompData(uint32_t ret) { return ret & SECCOMP_RET_DATA; }

}  // namespace sbx::testing
