#include "dispatch/identity/lease.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <sstream>

#include <fmt/format.h>

#include "base/c_handle.h"
#include "base/safe_path.h"
#include "dispatch/identity/host_ids.h"
#include "dispatch/identity/subordinate.h"
#include "dispatch/sys/at_file.h"
#include "dispatch/sys/subordinate_env.h"

namespace sbx::dispatch {
namespace {

std::optional<uint32_t> LeaseFileUid(std::string_view name) {
  uint32_t value = 0;
  if (name.empty() || name.size() > 10 || name.front() == '0') return std::nullopt;
  auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), value);
  if (ec != std::errc() || end != name.data() + name.size()) return std::nullopt;
  return value;
}

base::Error Tampered(const std::string& path, const std::string& why) {
  return base::Error::Message(fmt::format(
      "the lease directory is not root's alone: {} {}; remove what does not belong there", path,
      why));
}

// A lease file as it must be: a regular file of the owner, one link, writable by it only.
base::Status CheckLeaseStat(const struct stat& st, uid_t owner, const std::string& path) {
  if (!S_ISREG(st.st_mode)) return Tampered(path, "is not a regular file");
  if (st.st_uid != owner) return Tampered(path, fmt::format("belongs to uid {}", st.st_uid));
  if ((st.st_mode & 07077) != 0) return Tampered(path, "has a mode other than 0600");
  if (st.st_nlink != 1) return Tampered(path, "has other hard links");
  return {};
}

// The lease directory, made 0700 when missing, verified from / (every component root's
// or the owner's, no symlink, not writable by others), and every entry in it checked: a
// regular lease file named by a uid, or nothing may be there. `seen`, when given, gets the
// number of lease files and the highest uid that has one.
struct LeaseFilesSeen {
  size_t count = 0;
  std::optional<uint32_t> highest;
};
base::Result<base::UniqueFd> OpenLeaseDir(const std::string& dir, uid_t owner, bool create,
                                          LeaseFilesSeen* seen = nullptr) {
  if (create) {
    auto made = base::OpenOrMakeTrustedDir(dir, 0700, owner);
    if (!made) return made.error();
  }
  // Opened again with no symlink anywhere on the way: the lease directory is at its own
  // place, never somewhere a link leads.
  auto opened = base::OpenTrustedDir(dir, owner);
  if (!opened) return opened.error();
  auto fd = base::OpenBeneath(opened->get(), ".", O_RDONLY | O_DIRECTORY);
  if (!fd) return fd.error();
  struct stat dst {};
  if (::fstat(fd->get(), &dst) != 0) return base::ErrnoError("Can't stat", dir);
  if (dst.st_uid != owner || (dst.st_mode & 077) != 0) {
    return Tampered(dir, "is not a 0700 directory of the caller's");
  }
  // Read through a dup: closedir closes what it was given.
  base::CHandle<DIR, ::closedir> listing(::fdopendir(::dup(fd->get())));
  if (!listing) return base::ErrnoError("Can't read", dir);
  ::rewinddir(listing.get());
  while (const dirent* entry = ::readdir(listing.get())) {
    const std::string name = entry->d_name;
    if (name == "." || name == "..") continue;
    const std::string path = fmt::format("{}/{}", dir, name);
    const auto uid = LeaseFileUid(name);
    if (!uid) return Tampered(path, "is not a lease file");
    struct stat st {};
    if (::fstatat(fd->get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) continue;
      return base::ErrnoError("Can't stat", path);
    }
    if (auto checked = CheckLeaseStat(st, owner, path); !checked) return checked.error();
    if (seen != nullptr) {
      ++seen->count;
      if (!seen->highest || *uid > *seen->highest) seen->highest = *uid;
    }
  }
  return std::move(*fd);
}

base::Result<std::string> ReadAll(int fd, const std::string& path) {
  std::string text;
  char buf[4096];
  off_t at = 0;
  while (true) {
    ssize_t n = ::pread(fd, buf, sizeof buf, at);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return base::ErrnoError("Can't read", path);
    if (n == 0) return text;
    text.append(buf, static_cast<size_t>(n));
    at += n;
    if (text.size() > 1 << 20) return base::Error::Message(path + ": lease record too long");
  }
}

base::Status WriteRecord(int fd, const std::string& text, const std::string& path) {
  if (::ftruncate(fd, 0) != 0) return base::ErrnoError("Can't truncate", path);
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::pwrite(fd, text.data() + done, text.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return base::ErrnoError("Can't write", path);
    done += static_cast<size_t>(n);
  }
  // The record is what keeps the uid taken after a crash of the host: on disk before the
  // uid is used for anything.
  if (::fsync(fd) != 0) return base::ErrnoError("Can't sync", path);
  return {};
}

bool AnyPathExists(const std::vector<std::string>& paths) {
  for (const auto& path : paths) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0 || errno != ENOENT) return true;
  }
  return false;
}

// Whether `name` in `dir_fd` is still the file `opened` was stat'ed from.
bool StillNamed(int dir_fd, const std::string& name, const struct stat& opened) {
  struct stat now {};
  return ::fstatat(dir_fd, name.c_str(), &now, AT_SYMLINK_NOFOLLOW) == 0 &&
         now.st_dev == opened.st_dev && now.st_ino == opened.st_ino;
}

enum class LeaseFile {
  kFree,      // locked, its record names no path that exists: ours to take
  kHeld,      // a run holds it, or a path of its record exists
  kReplaced,  // removed by `gc` between our open and our lock: the name is free again
};

// Opens (with `create`, made when missing), checks and locks the lease file `name`; `fd`
// holds it when it is free.
base::Result<LeaseFile> LockFreeLeaseFile(int dir_fd, const std::string& name,
                                          const std::string& path, uid_t owner, bool create,
                                          base::UniqueFd* fd) {
  auto opened = base::OpenBeneath(dir_fd, name, create ? O_RDWR | O_CREAT : O_RDWR, 0600);
  if (!opened) return opened.error();
  struct stat st {};
  if (::fstat(opened->get(), &st) != 0) return base::ErrnoError("Can't stat", path);
  if (auto checked = CheckLeaseStat(st, owner, path); !checked) return checked.error();
  if (::flock(opened->get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK) return base::ErrnoError("Can't lock", path);
    return LeaseFile::kHeld;  // a run holds it
  }
  // `gc` removes a free lease file while it holds its lock: one opened before that and
  // locked after is no longer the file at the name, where another run may make a new one.
  if (!StillNamed(dir_fd, name, st)) return LeaseFile::kReplaced;
  // Locked: now the record can be trusted to stay as read.
  auto text = ReadAll(opened->get(), path);
  if (!text) return text.error();
  // A finished dispatch whose files may still be there holds it too.
  if (AnyPathExists(ParseLeaseRecord(*text).paths)) return LeaseFile::kHeld;
  *fd = std::move(*opened);
  return LeaseFile::kFree;
}

bool HostHasIds(uid_t uid, gid_t gid, const IdsInUse& running) {
  return running.uids.contains(uid) || running.gids.contains(gid) || PasswdHasUid(uid) ||
         GroupHasGid(gid);
}

}  // namespace

std::string RenderLeaseRecord(const std::string& dispatch_id,
                              const runtime::SandboxSpec::HostIds& ids,
                              const std::vector<std::string>& paths) {
  std::string text = fmt::format("dispatch {}\nuid {}\ngid {}\n", dispatch_id, ids.uid, ids.gid);
  for (const auto& path : paths) {
    // A path is one line: a newline in it would forge another record line.
    if (path.find('\n') == std::string::npos) text += "path " + path + "\n";
  }
  return text;
}

LeaseInfo ParseLeaseRecord(const std::string& text) {
  LeaseInfo info;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with("dispatch ")) info.dispatch_id = line.substr(9);
    if (line.starts_with("uid "))
      info.uid = static_cast<uid_t>(std::strtoul(line.c_str() + 4, nullptr, 10));
    if (line.starts_with("gid "))
      info.gid = static_cast<gid_t>(std::strtoul(line.c_str() + 4, nullptr, 10));
    if (line.starts_with("path ")) info.paths.push_back(line.substr(5));
  }
  return info;
}

base::Result<IdLease> IdLease::Acquire(const LeaseOptions& options, const std::string& dispatch_id,
                                       const std::vector<std::string>& paths) {
  if (auto st = CheckIdRange(options.range); !st) return st.error();
  LeaseFilesSeen seen;
  auto dir = OpenLeaseDir(options.dir, options.owner, /*create=*/true, &seen);
  if (!dir) return dir.error();
  // Where the scan starts: while there are few lease files, just above the highest id that
  // has one, so that the first id tried is free even when hundreds of kept dispatches hold
  // theirs (each id passed over costs a lock, a read and a look at its paths); then round
  // from the range's start, where the ids of removed dispatches come free again. Past
  // `fresh_ids_until` files, from the start: free files are taken again before new ones
  // are made (the directory's check above looks at every file).
  const uint32_t count = options.range.count;
  uint32_t start = 0;
  const std::optional<uint32_t>& highest = seen.highest;
  if (seen.count < options.fresh_ids_until && highest && *highest >= options.range.first_uid &&
      *highest - options.range.first_uid < count - 1) {
    start = *highest - options.range.first_uid + 1;
  }
  // Once per acquisition: the ids processes have now. A process that takes one of the
  // range's ids later can only be root's doing, and root's runs take them through here.
  const IdsInUse running = options.taken ? IdsInUse{} : ScanProcessIds();
  auto taken = [&](uid_t uid, gid_t gid) {
    return options.taken ? options.taken(uid, gid) : HostHasIds(uid, gid, running);
  };
  size_t held = 0;
  int replaced_tries = 0;
  for (uint32_t step = 0; step < count; ++step) {
    const uint32_t i = (start + step) % count;
    const uid_t uid = options.range.first_uid + i;
    const gid_t gid = options.range.first_gid + i;
    if (uid == options.overflow_uid || gid == options.overflow_gid || uid == 65534 ||
        gid == 65534) {
      continue;
    }
    const std::string name = std::to_string(uid);
    const std::string path = options.dir + "/" + name;
    // Before creating anything: an id somebody has is never a lease, not even a file. A
    // lease file that is there is looked at first: most are held by dispatches, and those
    // are passed over without looking the id up in passwd and group (each a file read).
    struct stat there {};
    const bool exists = ::fstatat(dir->get(), name.c_str(), &there, AT_SYMLINK_NOFOLLOW) == 0;
    if (!exists && taken(uid, gid)) continue;
    base::UniqueFd fd;
    auto state = LockFreeLeaseFile(dir->get(), name, path, options.owner, /*create=*/true, &fd);
    if (!state) return state.error();
    if (*state == LeaseFile::kHeld) {
      ++held;
      continue;
    }
    if (*state == LeaseFile::kReplaced) {
      if (++replaced_tries <= 3) --step;  // the id again: a gc is not a loop
      continue;
    }
    if (exists && taken(uid, gid)) continue;  // the lock goes with the fd
    IdLease lease;
    lease.fd_ = std::move(fd);
    lease.dispatch_id_ = dispatch_id;
    lease.shown_path_ = path;
    lease.ids_ = {uid, gid};
    if (auto st2 = lease.Record(paths); !st2) return st2.error();
    return lease;
  }
  return base::Error::Message(fmt::format(
      "no free uid left for this dispatch in {} (uids {}-{}): {} held by dispatches (their "
      "directories still exist; `ateam-sandbox gc` removes finished ones), the rest named in "
      "passwd/group or used by a process",
      options.range.source, options.range.first_uid,
      uint64_t{options.range.first_uid} + options.range.count - 1, held));
}

base::Status IdLease::Record(const std::vector<std::string>& paths) {
  return WriteRecord(fd_.get(), RenderLeaseRecord(dispatch_id_, ids_, paths), shown_path_);
}

base::Result<std::vector<LeaseInfo>> ListLeases(const std::string& dir, uid_t owner) {
  std::vector<LeaseInfo> leases;
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0 && errno == ENOENT) return leases;
  auto fd = OpenLeaseDir(dir, owner, /*create=*/false);
  if (!fd) return fd.error();
  base::CHandle<DIR, ::closedir> listing(::fdopendir(::dup(fd->get())));
  if (!listing) return base::ErrnoError("Can't read", dir);
  ::rewinddir(listing.get());  // the dup shares the offset the check left at the end
  while (const dirent* entry = ::readdir(listing.get())) {
    const std::string name = entry->d_name;
    if (!LeaseFileUid(name)) continue;
    auto file = base::OpenBeneath(fd->get(), name, O_RDONLY);
    if (!file) continue;  // released and removed meanwhile
    auto text = ReadAll(file->get(), fmt::format("{}/{}", dir, name));
    if (!text) return text.error();
    LeaseInfo info = ParseLeaseRecord(*text);
    info.uid = *LeaseFileUid(name);
    // A shared lock we can take means no run holds the exclusive one.
    info.running = ::flock(file->get(), LOCK_SH | LOCK_NB) != 0;
    info.in_use = info.running || AnyPathExists(info.paths);
    leases.push_back(std::move(info));
  }
  std::sort(leases.begin(), leases.end(),
            [](const LeaseInfo& a, const LeaseInfo& b) { return a.uid < b.uid; });
  return leases;
}

base::Result<size_t> PruneFreeLeases(const std::string& dir, uid_t owner, bool dry_run) {
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0 && errno == ENOENT) return size_t{0};
  auto fd = OpenLeaseDir(dir, owner, /*create=*/false);
  if (!fd) return fd.error();
  auto names = ListDirAt(fd->get());
  if (!names) return names.error();
  size_t removed = 0;
  for (const auto& name : *names) {
    if (!LeaseFileUid(name)) continue;
    // Locked while it is looked at and removed, as Acquire takes it: a run that opened it
    // before finds, once it has the lock, that the name is no longer this file, and so
    // does another gc; a file removed meanwhile, or held, is passed over.
    base::UniqueFd file;
    auto state = LockFreeLeaseFile(fd->get(), name, fmt::format("{}/{}", dir, name), owner,
                                   /*create=*/false, &file);
    if (!state || *state != LeaseFile::kFree) continue;
    if (!dry_run && ::unlinkat(fd->get(), name.c_str(), 0) != 0) {
      return base::ErrnoError("Can't remove", fmt::format("{}/{}", dir, name));
    }
    ++removed;
  }
  return removed;
}

base::Result<LeaseOptions> HostLeaseOptions(uid_t overflow_uid, gid_t overflow_gid) {
  LeaseOptions options;
  if (auto ns = InSubordinateNamespace()) {
    // `run --identity subuid`: the caller's own subordinate ids, leased in its own directory.
    auto dir = SubordinateLeaseDir();
    if (!dir) return dir.error();
    options.dir = std::move(*dir);
    options.range = {
        1, 1, ns->count,
        fmt::format("the subordinate ids of uid {} (/etc/subuid, /etc/subgid)", ns->caller_uid)};
  } else {
    auto range = ResolveIdRange(std::getenv(kIdRangeEnv));  // NOLINT(concurrency-mt-unsafe)
    if (!range) return range.error();
    options.range = std::move(*range);
  }
  options.owner = ::geteuid();
  options.overflow_uid = overflow_uid;
  options.overflow_gid = overflow_gid;
  return options;
}

}  // namespace sbx::dispatch
