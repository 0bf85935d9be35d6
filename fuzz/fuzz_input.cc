#include "fuzz/fuzz_input.h"

#include <cstdio>
#include <cstdlib>

namespace sbx::fuzz {

std::vector<std::string> SplitOnNul(std::string_view data) {
  std::vector<std::string> words;
  while (!data.empty()) {
    const size_t nul = data.find('\0');
    words.emplace_back(data.substr(0, nul));
    if (nul == std::string_view::npos) break;
    data.remove_prefix(nul + 1);
  }
  return words;
}

uint8_t InputReader::Byte() {
  if (data_.empty()) return 0;
  const auto byte = static_cast<uint8_t>(data_.front());
  data_.remove_prefix(1);
  return byte;
}

uint64_t InputReader::U64() {
  uint64_t value = 0;
  for (int i = 0; i < 8; ++i) value = (value << 8) | Byte();
  return value;
}

std::string InputReader::Word() {
  const size_t nul = data_.find('\0');
  std::string word(data_.substr(0, nul));
  data_.remove_prefix(nul == std::string_view::npos ? data_.size() : nul + 1);
  return word;
}

std::string_view InputReader::Rest() {
  std::string_view rest = data_;
  data_ = {};
  return rest;
}

void Check(bool ok, std::string_view what) {
  if (ok) return;
  std::fprintf(stderr, "fuzz check failed: %.*s\n", static_cast<int>(what.size()), what.data());
  std::abort();
}

}  // namespace sbx::fuzz
