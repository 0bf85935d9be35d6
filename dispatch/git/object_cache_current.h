// Whether an object cache already holds what its source has (object_cache.h), so that a
// warm dispatch fetches nothing: the source's branches, tags and HEAD as
// `git ls-remote --symref` prints them, against the refs and HEAD the cache recorded when
// it was last filled. When they are equal the cache's objects are all the source's refs
// reach (the fetch that filled it completed and was checked by git), and the scratch
// fetch, its connectivity walk and the install have nothing to add. Any difference, or a
// listing that is not what git prints, means a fetch as before.
//
// Pure functions on text: the listing comes from the source (a hostile repository's ref
// names pass through it); the cache's files are the caller's own.
#pragma once

#include <optional>
#include <string>

#include "dispatch/git/object_cache.h"

namespace sbx::dispatch {

// The refs a `git ls-remote --symref` listing shows as a fetch into the cache would record
// them: refs/heads/ and refs/tags/ names with their ids (a tag's peeled "^{}" line and
// every other namespace left out, as `git clone --bare` leaves them), and HEAD as
// "ref: NAME" when it is a symbolic ref, its id otherwise, empty when there is none.
// nullopt when a line is not "<id>\t<name>" or "ref: <target>\t<name>".
std::optional<CacheRefs> ParseRemoteListing(const std::string& listing);

// The refs and HEAD of a cache from its packed-refs and HEAD files, as InstallIntoCache
// wrote them; nullopt when either is not in that form.
std::optional<CacheRefs> ParseCacheRefs(const std::string& packed_refs, const std::string& head);

// The same refs (in any order) and the same HEAD.
bool SameRefs(const CacheRefs& a, const CacheRefs& b);

}  // namespace sbx::dispatch
