// Helpers that turn a fuzzer's byte string into the arguments of the function under test.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sbx::fuzz {

// The input cut at every NUL byte, as argv would arrive: "a\0b" -> {"a", "b"}; an empty
// input gives no words, a trailing NUL no empty last word.
std::vector<std::string> SplitOnNul(std::string_view data);

// Reads a fuzzer input front to back: fixed-size numbers first, then NUL-terminated
// strings. Past the end it returns zeros and empty strings, so every input is usable.
class InputReader {
 public:
  InputReader(const uint8_t* data, size_t size)
      : data_(reinterpret_cast<const char*>(data), size) {}

  uint8_t Byte();
  uint64_t U64();
  // The bytes up to the next NUL (or the end); the NUL is consumed.
  std::string Word();
  [[nodiscard]] bool empty() const { return data_.empty(); }
  // Whatever is left, consumed.
  std::string_view Rest();

 private:
  std::string_view data_;
};

// Aborts (so libFuzzer reports the input) with `what` on stderr when `ok` is false.
void Check(bool ok, std::string_view what);

}  // namespace sbx::fuzz
