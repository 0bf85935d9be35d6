#include "dispatch/git/pack_index.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace sbx::dispatch {
namespace {

uint32_t BigEndian32(std::string_view bytes, size_t at) {
  const auto byte = [&](size_t i) { return static_cast<uint32_t>(static_cast<uint8_t>(bytes[i])); };
  return (byte(at) << 24) | (byte(at + 1) << 16) | (byte(at + 2) << 8) | byte(at + 3);
}

uint32_t Fanout(std::string_view header, size_t first_byte) {
  return BigEndian32(header, 8 + first_byte * 4);
}

// Reads `size` bytes at `offset` of `fd`; false on a short file or an error (errno set).
bool ReadExactly(int fd, uint64_t offset, size_t size, std::string* out) {
  out->assign(size, '\0');
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::pread(fd, out->data() + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

std::optional<uint32_t> PackIndexCount(std::string_view header, uint64_t file_size) {
  if (header.size() < kPackIndexHeaderBytes || header.substr(0, 4) != "\377tOc" ||
      BigEndian32(header, 4) != 2) {
    return std::nullopt;
  }
  for (size_t i = 1; i < 256; ++i) {
    if (Fanout(header, i) < Fanout(header, i - 1)) return std::nullopt;
  }
  const uint64_t count = Fanout(header, 255);
  // Names, CRCs and 4-byte offsets for each object, then at most one 8-byte offset each.
  const uint64_t least =
      kPackIndexHeaderBytes + count * (kPackIndexNameBytes + 8) + kPackIndexTrailerBytes;
  if (file_size < least || (file_size - least) % 8 != 0 || (file_size - least) / 8 > count) {
    return std::nullopt;
  }
  return static_cast<uint32_t>(count);
}

bool PackIndexNamesFit(std::string_view header, std::string_view names) {
  if (header.size() < kPackIndexHeaderBytes || names.size() % kPackIndexNameBytes != 0) {
    return false;
  }
  const size_t count = names.size() / kPackIndexNameBytes;
  if (Fanout(header, 255) != count) return false;
  for (size_t i = 0; i < count; ++i) {
    std::string_view name = names.substr(i * kPackIndexNameBytes, kPackIndexNameBytes);
    const auto first = static_cast<uint8_t>(name[0]);
    const uint32_t below = first == 0 ? 0 : Fanout(header, first - 1U);
    if (i < below || i >= Fanout(header, first)) return false;
    if (i > 0 && names.substr((i - 1) * kPackIndexNameBytes, kPackIndexNameBytes) >= name) {
      return false;
    }
  }
  return true;
}

bool PackIndexHasName(std::string_view names, std::string_view name) {
  size_t low = 0;
  size_t high = names.size() / kPackIndexNameBytes;
  while (low < high) {
    size_t mid = low + (high - low) / 2;
    std::string_view at = names.substr(mid * kPackIndexNameBytes, kPackIndexNameBytes);
    if (at == name) return true;
    if (at < name) {
      low = mid + 1;
    } else {
      high = mid;
    }
  }
  return false;
}

base::Result<PackIndex> ReadPackIndex(int fd, const std::string& what) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return base::ErrnoError("Can't stat", what);
  if (!S_ISREG(st.st_mode)) return base::Error::Message(what + " is not a regular file");
  const auto size = static_cast<uint64_t>(st.st_size);
  std::string header;
  if (!ReadExactly(fd, 0, kPackIndexHeaderBytes, &header)) {
    return base::Error::Message(what + " is no pack index (too short)");
  }
  auto count = PackIndexCount(header, size);
  if (!count) return base::Error::Message(what + " is no version 2 pack index of its size");
  PackIndex index;
  index.count = *count;
  if (!ReadExactly(fd, kPackIndexHeaderBytes, size_t{*count} * kPackIndexNameBytes, &index.names) ||
      !ReadExactly(fd, size - kPackIndexTrailerBytes, kPackIndexNameBytes, &index.pack_checksum)) {
    return base::ErrnoError("Can't read", what);
  }
  if (!PackIndexNamesFit(header, index.names)) {
    return base::Error::Message(what + ": its object names are not in the index's order");
  }
  return index;
}

}  // namespace sbx::dispatch
