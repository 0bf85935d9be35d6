#include "dispatch/identity/host_ids.h"

#include <dirent.h>
#include <grp.h>
#include <pwd.h>

#include <cctype>
#include <charconv>
#include <fstream>
#include <string>

#include "base/c_handle.h"

namespace sbx::dispatch {

bool AddStatusIds(std::string_view value, std::set<uid_t>* into) {
  int found = 0;
  size_t at = 0;
  while (at < value.size()) {
    while (at < value.size() && (value[at] == '\t' || value[at] == ' ')) ++at;
    if (at == value.size()) break;
    uid_t id = 0;
    auto [end, ec] = std::from_chars(value.data() + at, value.data() + value.size(), id);
    if (ec != std::errc() || end == value.data() + at) return false;
    into->insert(id);
    ++found;
    at = static_cast<size_t>(end - value.data());
  }
  return found > 0;
}

IdsInUse ScanProcessIds(const char* proc) {
  IdsInUse ids;
  base::CHandle<DIR, ::closedir> dir(::opendir(proc));
  if (!dir) return ids;
  while (const dirent* entry = ::readdir(dir.get())) {
    if (std::isdigit(static_cast<unsigned char>(entry->d_name[0])) == 0) continue;
    std::ifstream status(std::string(proc) + "/" + entry->d_name + "/status");
    std::string line;
    while (std::getline(status, line)) {
      if (line.starts_with("Uid:")) (void)AddStatusIds(std::string_view(line).substr(4), &ids.uids);
      if (line.starts_with("Gid:")) {
        (void)AddStatusIds(std::string_view(line).substr(4), &ids.gids);
        break;  // Gid: follows Uid:
      }
    }
  }
  return ids;
}

bool PasswdHasUid(uid_t uid) { return ::getpwuid(uid) != nullptr; }
bool GroupHasGid(gid_t gid) { return ::getgrgid(gid) != nullptr; }

}  // namespace sbx::dispatch
