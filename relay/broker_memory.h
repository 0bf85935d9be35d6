// SecretMemory: bytes that must never leave the host relay's memory (a brokered credential,
// and the request heads that carry it on their way into TLS).
//
// The pages come from their own anonymous mapping, so each protection covers exactly them:
//   MADV_DONTDUMP   left out of any core dump of the process
//   MADV_WIPEONFORK a child forked or cloned without CLONE_VM (the sandbox, bwrap) sees them
//                   as zeros: the sandbox is cloned from the process that holds the secret
//   mlock           (Lock(), for the secret itself) never written to swap
// and they are zeroed (explicit_bzero) before they are unmapped. The whole process is
// also made non-dumpable while a broker route exists (dispatch), which keeps ptrace and
// /proc/PID/mem of the same uid out; these flags cover what that does not.
// Caller: any single thread; not copyable.
#pragma once

#include <cstddef>
#include <string_view>

#include "base/error.h"

namespace sbx::relay {

class SecretMemory {
 public:
  // At least `size` bytes (rounded up to whole pages), zeroed.
  static base::Result<SecretMemory> Allocate(size_t size);
  SecretMemory() = default;
  ~SecretMemory();
  SecretMemory(SecretMemory&& other) noexcept;
  SecretMemory& operator=(SecretMemory&& other) noexcept;
  SecretMemory(const SecretMemory&) = delete;
  SecretMemory& operator=(const SecretMemory&) = delete;

  // mlock(2) of the pages; fails (EPERM, ENOMEM past RLIMIT_MEMLOCK) with context.
  base::Status Lock();

  [[nodiscard]] char* data() const { return data_; }
  [[nodiscard]] size_t size() const { return size_; }
  [[nodiscard]] bool empty() const { return data_ == nullptr; }

 private:
  void Release();
  char* data_ = nullptr;
  size_t size_ = 0;
};

// A secret value (a header's value) in SecretMemory, locked.
class BrokerSecret {
 public:
  // Copies `value` into locked SecretMemory. Refused: empty, over 8 KiB, or holding a byte
  // a header value cannot carry (CR, LF, NUL, other controls but TAB).
  static base::Result<BrokerSecret> Make(std::string_view value);
  [[nodiscard]] std::string_view value() const { return {memory_.data(), length_}; }

 private:
  SecretMemory memory_;
  size_t length_ = 0;
};

// A bounded byte queue in SecretMemory: the plaintext on its way to the upstream's TLS.
// Bytes taken out are zeroed at once, so a secret sits in it only until TLS has it.
class SecretQueue {
 public:
  static base::Result<SecretQueue> Make(size_t capacity);
  [[nodiscard]] std::string_view pending() const { return {memory_.data() + head_, tail_ - head_}; }
  [[nodiscard]] size_t size() const { return tail_ - head_; }
  [[nodiscard]] bool empty() const { return head_ == tail_; }
  [[nodiscard]] size_t capacity() const { return memory_.size(); }
  // Room for Append() (after moving what is pending to the front).
  [[nodiscard]] size_t room() const { return memory_.size() - size(); }
  // False, appending nothing, when `bytes` do not fit in room().
  bool Append(std::string_view bytes);
  // Drops the first `n` pending bytes, zeroing them.
  void Consume(size_t n);

 private:
  SecretMemory memory_;
  size_t head_ = 0;
  size_t tail_ = 0;
};

// Header values a secret may be: printable ASCII, TAB and bytes 0x80-0xff (obs-text), no
// leading or trailing blank.
bool IsValidSecretValue(std::string_view value);

}  // namespace sbx::relay
