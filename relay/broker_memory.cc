#include "relay/broker_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

namespace sbx::relay {

namespace {

constexpr size_t kMaxSecretBytes = 8192;

size_t PageRounded(size_t size) {
  const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  return (size + page - 1) / page * page;
}

}  // namespace

base::Result<SecretMemory> SecretMemory::Allocate(size_t size) {
  SecretMemory memory;
  const size_t length = PageRounded(size == 0 ? 1 : size);
  void* pages = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (pages == MAP_FAILED) return base::ErrnoError("Can't map memory for a brokered secret");
  memory.data_ = static_cast<char*>(pages);
  memory.size_ = length;
  // Both are kernel guarantees the design relies on: refuse when either is missing.
  if (::madvise(pages, length, MADV_DONTDUMP) != 0) {
    return base::ErrnoError("madvise(MADV_DONTDUMP) for a brokered secret");
  }
  if (::madvise(pages, length, MADV_WIPEONFORK) != 0) {
    return base::ErrnoError("madvise(MADV_WIPEONFORK) for a brokered secret");
  }
  return memory;
}

base::Status SecretMemory::Lock() {
  if (::mlock(data_, size_) != 0) {
    return base::ErrnoError("Can't lock a brokered secret in memory (mlock, RLIMIT_MEMLOCK)");
  }
  return {};
}

void SecretMemory::Release() {
  if (data_ == nullptr) return;
  ::explicit_bzero(data_, size_);
  ::munlock(data_, size_);
  ::munmap(data_, size_);
  data_ = nullptr;
  size_ = 0;
}

SecretMemory::~SecretMemory() { Release(); }

SecretMemory::SecretMemory(SecretMemory&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

SecretMemory& SecretMemory::operator=(SecretMemory&& other) noexcept {
  if (this != &other) {
    Release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

base::Result<SecretQueue> SecretQueue::Make(size_t capacity) {
  auto memory = SecretMemory::Allocate(capacity);
  if (!memory) return memory.error();
  SecretQueue queue;
  queue.memory_ = std::move(*memory);
  return queue;
}

bool SecretQueue::Append(std::string_view bytes) {
  if (bytes.size() > room()) return false;
  if (memory_.size() - tail_ < bytes.size()) {
    std::memmove(memory_.data(), memory_.data() + head_, tail_ - head_);
    ::explicit_bzero(memory_.data() + (tail_ - head_), head_);
    tail_ -= head_;
    head_ = 0;
  }
  std::memcpy(memory_.data() + tail_, bytes.data(), bytes.size());
  tail_ += bytes.size();
  return true;
}

void SecretQueue::Consume(size_t n) {
  n = std::min(n, size());
  ::explicit_bzero(memory_.data() + head_, n);
  head_ += n;
  if (head_ == tail_) head_ = tail_ = 0;
}

bool IsValidSecretValue(std::string_view value) {
  if (value.empty() || value.size() > kMaxSecretBytes) return false;
  if (value.front() == ' ' || value.front() == '\t' || value.back() == ' ' ||
      value.back() == '\t') {
    return false;
  }
  for (char c : value) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte == '\t') continue;
    if (byte < 0x20 || byte == 0x7f) return false;
  }
  return true;
}

base::Result<BrokerSecret> BrokerSecret::Make(std::string_view value) {
  if (!IsValidSecretValue(value)) {
    return base::Error(EINVAL,
                       "A brokered secret must be 1 to 8192 bytes of header text (no CR, LF, NUL "
                       "or other control byte, no blank at either end)");
  }
  auto memory = SecretMemory::Allocate(value.size());
  if (!memory) return memory.error();
  if (auto locked = memory->Lock(); !locked) return locked.error();
  BrokerSecret secret;
  std::memcpy(memory->data(), value.data(), value.size());
  secret.memory_ = std::move(*memory);
  secret.length_ = value.size();
  return secret;
}

}  // namespace sbx::relay
