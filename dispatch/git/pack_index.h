// A pack index (.idx, version 2, SHA-1 names) read without git: the object names it lists
// and the checksum of the pack it belongs to. The object cache's repack (a root caller's
// cache, object_cache_repack.h) checks with it that the one pack the dispatch's user wrote
// names every object the cache's old packs named before those go: the new index came
// from another uid, so every count and offset in it is checked against the file's size.
//
// Layout: "\377tOc", version 2 (big-endian), 256 cumulative counts by first name byte
// (fanout), then N names (20 bytes each, ascending), N CRCs, N 4-byte offsets, up to N
// 8-byte offsets, the pack's checksum and the index's own (20 bytes each).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/error.h"

namespace sbx::dispatch {

inline constexpr size_t kPackIndexHeaderBytes = 8 + 256 * 4;
inline constexpr size_t kPackIndexNameBytes = 20;
inline constexpr size_t kPackIndexTrailerBytes = 2 * kPackIndexNameBytes;

// The object count the header (its first kPackIndexHeaderBytes bytes) gives when it is a
// version 2 index whose fanout never decreases and whose file of `file_size` bytes has room
// for exactly that many entries; nullopt otherwise.
std::optional<uint32_t> PackIndexCount(std::string_view header, uint64_t file_size);

// Whether `names` (count * 20 bytes) ascend strictly and each sits where the fanout of
// `header` puts names of its first byte.
bool PackIndexNamesFit(std::string_view header, std::string_view names);

// Whether the strictly ascending `names` hold `name` (20 bytes).
bool PackIndexHasName(std::string_view names, std::string_view name);

struct PackIndex {
  uint32_t count = 0;
  std::string names;          // count * 20 bytes, ascending
  std::string pack_checksum;  // the checksum the pack ends with
};

// The index open at `fd` (a regular file), read piece by piece and checked as above; an
// error naming `what` when it is no sound index.
base::Result<PackIndex> ReadPackIndex(int fd, const std::string& what);

}  // namespace sbx::dispatch
