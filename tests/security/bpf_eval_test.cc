// The evaluator itself, on small hand-written programs, so seccomp tests can trust it.
#include "tests/support/bpf_eval.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <vector>

namespace sbx::testing {
namespace {

constexpr uint32_t kNrOffset = offsetof(seccomp_data, nr);
constexpr uint32_t kArg0Low = offsetof(seccomp_data, args);
constexpr uint32_t kArg0High = offsetof(seccomp_data, args) + 4;

TEST(BpfEvalTest, LoadsFieldsInNativeOrder) {
  const std::vector<sock_filter> prog = {BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kArg0High),
                                         BPF_STMT(BPF_RET | BPF_A, 0)};
  EXPECT_EQ(*EvalBpf(prog, MakeSeccompData(1, {0x1234567800000009ULL})), 0x12345678U);
  const std::vector<sock_filter> low = {BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kArg0Low),
                                        BPF_STMT(BPF_RET | BPF_A, 0)};
  EXPECT_EQ(*EvalBpf(low, MakeSeccompData(1, {0x1234567800000009ULL})), 9U);
}

TEST(BpfEvalTest, JumpsAndAlu) {
  // A = nr & 0xf0; if (A >= 0x20) return 1; if (A & 0x10) return 2; return 3
  const std::vector<sock_filter> prog = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kNrOffset),
      BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0xf0),
      BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x20, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, 1),
      BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, 0x10, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, 2),
      BPF_STMT(BPF_RET | BPF_K, 3),
  };
  EXPECT_EQ(*EvalBpf(prog, MakeSeccompData(0x25)), 1U);
  EXPECT_EQ(*EvalBpf(prog, MakeSeccompData(0x15)), 2U);
  EXPECT_EQ(*EvalBpf(prog, MakeSeccompData(0x05)), 3U);
}

TEST(BpfEvalTest, ScratchMemoryIndexRegisterAndJa) {
  const std::vector<sock_filter> prog = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kNrOffset),  // A = nr
      BPF_STMT(BPF_ST, 3),                            // M[3] = A
      BPF_STMT(BPF_LDX | BPF_W | BPF_IMM, 10),        // X = 10
      BPF_STMT(BPF_ALU | BPF_ADD | BPF_X, 0),         // A += X
      BPF_STMT(BPF_MISC | BPF_TAX, 0),                // X = A
      BPF_STMT(BPF_LD | BPF_W | BPF_MEM, 3),          // A = M[3]
      BPF_JUMP(BPF_JMP | BPF_JA, 1, 0, 0),            // skip one
      BPF_STMT(BPF_RET | BPF_K, 99),
      BPF_JUMP(BPF_JMP | BPF_JGT | BPF_X, 0, 0, 1),  // A > X ?
      BPF_STMT(BPF_RET | BPF_K, 1),
      BPF_STMT(BPF_MISC | BPF_TXA, 0),  // A = X
      BPF_STMT(BPF_RET | BPF_A, 0),
  };
  EXPECT_EQ(*EvalBpf(prog, MakeSeccompData(5)), 15U);
}

TEST(BpfEvalTest, RejectsMalformedPrograms) {
  const std::vector<sock_filter> past_end = {BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kNrOffset)};
  EXPECT_FALSE(EvalBpf(past_end, MakeSeccompData(1)));
  const std::vector<sock_filter> outside = {BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 64),
                                            BPF_STMT(BPF_RET | BPF_A, 0)};
  EXPECT_FALSE(EvalBpf(outside, MakeSeccompData(1)));
  const std::vector<sock_filter> unaligned = {BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 2),
                                              BPF_STMT(BPF_RET | BPF_A, 0)};
  EXPECT_FALSE(EvalBpf(unaligned, MakeSeccompData(1)));
  const std::vector<sock_filter> byte_load = {BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 0),
                                              BPF_STMT(BPF_RET | BPF_A, 0)};
  EXPECT_FALSE(EvalBpf(byte_load, MakeSeccompData(1)));
  const std::vector<sock_filter> jump_out = {BPF_JUMP(BPF_JMP | BPF_JA, 5, 0, 0),
                                             BPF_STMT(BPF_RET | BPF_K, 0)};
  EXPECT_FALSE(EvalBpf(jump_out, MakeSeccompData(1)));
  const std::vector<uint8_t> odd(12, 0);
  EXPECT_FALSE(EvalBpfBytes(odd, MakeSeccompData(1)));
}

}  // namespace
}  // namespace sbx::testing
