// The manifest of an object cache (object_cache.h): the source it mirrors and each pack
// file as it was copied in (name, size, modification time). Written by the caller last,
// after the files it names; read back before every use. Internal to the cache's files.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "dispatch/git/object_cache.h"

namespace sbx::dispatch {

inline constexpr const char* kCacheManifestName = "ateam-cache";
// The source's stamp (source_stamp.h) as it was when the cache's refs were last found to be
// the source's; a file a cache may lack.
inline constexpr const char* kCacheStampName = "ateam-source-stamp";

struct CacheManifest {
  std::string source;
  std::vector<CachedFile> files;
};

std::string RenderCacheManifest(const CacheManifest& manifest);
// nullopt when the text is no manifest of this version.
std::optional<CacheManifest> ParseCacheManifest(const std::string& text);

// "pack-<40 or 64 hex digits>.pack" or ".idx": the only files a cache's objects/pack holds.
bool IsPackFileName(const std::string& name);

// A refname the cache accepts: refs/heads/ or refs/tags/, then what git's check-ref-format
// allows, in short (no control characters, space, "..", "~^:?*[\\", no "@{", no component
// starting with '.' or ending with ".lock").
bool IsCacheRefName(const std::string& name);
// 40 or 64 lowercase hex digits.
bool IsObjectId(const std::string& text);

}  // namespace sbx::dispatch
