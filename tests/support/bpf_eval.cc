#include "tests/support/bpf_eval.h"

#include <array>
#include <cstring>
#include <string>
#include <vector>

namespace sbx::testing {
namespace {

using base::Error;

constexpr uint32_t kScratchSlots = BPF_MEMWORDS;  // 16

struct Machine {
  uint32_t a = 0;
  uint32_t x = 0;
  std::array<uint32_t, kScratchSlots> mem{};
};

Error Bad(size_t pc, const std::string& what) {
  return Error::Message("bpf: instruction " + std::to_string(pc) + ": " + what);
}

// LD/LDX: the value an instruction loads, or an Error.
base::Result<uint32_t> LoadValue(const sock_filter& insn, size_t pc, const Machine& m,
                                 const seccomp_data& data) {
  if (BPF_SIZE(insn.code) != BPF_W) return Bad(pc, "only 32-bit loads are allowed");
  switch (BPF_MODE(insn.code)) {
    case BPF_IMM:
      return insn.k;
    case BPF_MEM:
      if (insn.k >= kScratchSlots) return Bad(pc, "scratch index out of range");
      return m.mem[insn.k];
    case BPF_LEN:
      return static_cast<uint32_t>(sizeof(seccomp_data));
    case BPF_ABS: {
      if (BPF_CLASS(insn.code) != BPF_LD) return Bad(pc, "LDX ABS is not valid");
      if (insn.k % 4 != 0 || insn.k + 4 > sizeof(seccomp_data)) {
        return Bad(pc, "load outside seccomp_data");
      }
      uint32_t word = 0;
      std::memcpy(&word, reinterpret_cast<const uint8_t*>(&data) + insn.k, sizeof(word));
      return word;
    }
    default:
      return Bad(pc, "load mode not allowed in seccomp");
  }
}

base::Result<uint32_t> Alu(const sock_filter& insn, size_t pc, uint32_t a, uint32_t x) {
  const uint32_t v = BPF_SRC(insn.code) == BPF_X ? x : insn.k;
  switch (BPF_OP(insn.code)) {
    case BPF_ADD:
      return a + v;
    case BPF_SUB:
      return a - v;
    case BPF_MUL:
      return a * v;
    case BPF_DIV:
      if (v == 0) return Bad(pc, "division by zero");
      return a / v;
    case BPF_MOD:
      if (v == 0) return Bad(pc, "modulo by zero");
      return a % v;
    case BPF_OR:
      return a | v;
    case BPF_AND:
      return a & v;
    case BPF_XOR:
      return a ^ v;
    case BPF_LSH:
      return v >= 32 ? 0 : a << v;
    case BPF_RSH:
      return v >= 32 ? 0 : a >> v;
    case BPF_NEG:
      return 0U - a;
    default:
      return Bad(pc, "unknown ALU op");
  }
}

// JMP: how many instructions to skip after pc.
base::Result<uint32_t> JumpOffset(const sock_filter& insn, size_t pc, uint32_t a, uint32_t x) {
  if (BPF_OP(insn.code) == BPF_JA) return insn.k;
  const uint32_t v = BPF_SRC(insn.code) == BPF_X ? x : insn.k;
  bool taken = false;
  switch (BPF_OP(insn.code)) {
    case BPF_JEQ:
      taken = a == v;
      break;
    case BPF_JGT:
      taken = a > v;
      break;
    case BPF_JGE:
      taken = a >= v;
      break;
    case BPF_JSET:
      taken = (a & v) != 0;
      break;
    default:
      return Bad(pc, "unknown jump op");
  }
  return static_cast<uint32_t>(taken ? insn.jt : insn.jf);
}

// Executes one non-RET instruction; returns the number of instructions to skip.
base::Result<uint32_t> Step(const sock_filter& insn, size_t pc, Machine& m,
                            const seccomp_data& data) {
  switch (BPF_CLASS(insn.code)) {
    case BPF_LD:
    case BPF_LDX: {
      auto v = LoadValue(insn, pc, m, data);
      if (!v) return v.error();
      (BPF_CLASS(insn.code) == BPF_LD ? m.a : m.x) = *v;
      return 0U;
    }
    case BPF_ST:
    case BPF_STX:
      if (insn.k >= kScratchSlots) return Bad(pc, "scratch index out of range");
      m.mem[insn.k] = BPF_CLASS(insn.code) == BPF_ST ? m.a : m.x;
      return 0U;
    case BPF_ALU: {
      auto v = Alu(insn, pc, m.a, m.x);
      if (!v) return v.error();
      m.a = *v;
      return 0U;
    }
    case BPF_JMP:
      return JumpOffset(insn, pc, m.a, m.x);
    case BPF_MISC:
      if (BPF_MISCOP(insn.code) == BPF_TAX) {
        m.x = m.a;
      } else {
        m.a = m.x;
      }
      return 0U;
    default:
      return Bad(pc, "unknown instruction class");
  }
}

}  // namespace

base::Result<uint32_t> EvalBpf(std::span<const sock_filter> program, const seccomp_data& data) {
  Machine m;
  size_t pc = 0;
  // Classic BPF only jumps forward, so this loop ends; pc is checked on every step.
  while (pc < program.size()) {
    const sock_filter& insn = program[pc];
    if (BPF_CLASS(insn.code) == BPF_RET) {
      switch (BPF_RVAL(insn.code)) {
        case BPF_K:
          return insn.k;
        case BPF_A:
          return m.a;
        default:
          return Bad(pc, "RET X is not valid in seccomp");
      }
    }
    auto skip = Step(insn, pc, m, data);
    if (!skip) return skip.error();
    pc += 1 + static_cast<size_t>(*skip);
  }
  return Bad(pc, "ran past the end of the program");
}

base::Result<uint32_t> EvalBpfBytes(std::span<const uint8_t> program, const seccomp_data& data) {
  if (program.size() % sizeof(sock_filter) != 0) {
    return Error::Message("bpf: program length is not a multiple of 8");
  }
  std::vector<sock_filter> insns(program.size() / sizeof(sock_filter));
  std::memcpy(insns.data(), program.data(), program.size());
  return EvalBpf(insns, data);
}

seccomp_data MakeSeccompData(int nr, std::initializer_list<uint64_t> args, uint32_t arch) {
  seccomp_data data{};
  data.nr = nr;
  data.arch = arch;
  size_t i = 0;
  for (uint64_t arg : args) {
    if (i == 6) break;
    data.args[i++] = arg;
  }
  return data;
}

}  // namespace sbx::testing
