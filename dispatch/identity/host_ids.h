// Which host uids and gids are somebody's already: the ones a lease must never take
// (dispatch/identity/lease.h). A passwd or group entry names an id for good; a running
// process has one for now (any of its real, effective, saved or filesystem ids).
#pragma once

#include <sys/types.h>

#include <set>
#include <string_view>

namespace sbx::dispatch {

struct IdsInUse {
  std::set<uid_t> uids;
  std::set<gid_t> gids;
};

// Every Uid:/Gid: line of /proc/*/status (`proc` for tests). Processes that end while the
// scan reads are skipped.
IdsInUse ScanProcessIds(const char* proc = "/proc");

// The four ids of one "Uid:\t1\t2\t3\t4" (or Gid:) line's value, added to `into`; false
// when the text is not such a line.
bool AddStatusIds(std::string_view value, std::set<uid_t>* into);

// getpwuid / getgrgid: the id is a named user or group on this host.
bool PasswdHasUid(uid_t uid);
bool GroupHasGid(gid_t gid);

}  // namespace sbx::dispatch
