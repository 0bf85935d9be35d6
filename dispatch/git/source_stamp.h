// The stamp of a source repository's refs: what the kernel says of every file and directory
// its refs live in (HEAD, packed-refs, config, reftable/, each entry below refs/), so that a
// warm dispatch of an unchanged source knows its object cache is current without asking
// git (`git ls-remote`: three processes). Git changes a ref by writing a file and renaming
// it into place, which gives the file a new inode and its directory a new modification
// time; an edit in place changes the file's times. Either changes the stamp.
//
// Only a stamp that cannot miss a change is made: when any entry was changed less than
// kRacySeconds ago, a later change within the same clock tick could leave its times as
// they are, so there is no stamp (nullopt) and the refs are listed by git as before. The
// stamp is taken before the listing or fetch it is recorded with: a change between the two
// makes the next stamp differ.
//
// Read as the dispatch's user in a child (dispatch/sys/run_as_child.h), as git reads the
// source; no symlink below the git directories is followed, nothing is opened but
// directories.
#pragma once

#include <ctime>
#include <optional>
#include <string>

#include "dispatch/git/workspace.h"

namespace sbx::dispatch {

inline constexpr time_t kRacySeconds = 2;
// Past this many entries (a repository of loose refs by the ten thousand) no stamp is made.
inline constexpr size_t kMaxStampEntries = 20000;
// A stamp is compared with the one its cache recorded, which is read up to this size: a
// larger one could never match, and is no stamp.
inline constexpr size_t kMaxStampBytes = size_t{4} << 20;

// The stamp of the local repository `source`, or nullopt (no git directory found, an entry
// that can't be read, one changed too recently, too many).
std::optional<std::string> ReadSourceStamp(const std::string& source, const RunAsIds& ids);

// The same, in this process (the child's body; exposed for tests). `now` is the time the
// racy check measures from.
std::optional<std::string> SourceStampNow(const std::string& source, const struct timespec& now);

}  // namespace sbx::dispatch
