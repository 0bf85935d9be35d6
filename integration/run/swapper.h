// A local attacker racing the host side of `run`: a forked process that becomes another uid
// (the --run-as uid, or a stranger), watches directories with inotify, and on every event
// tries to replace what `run` is about to touch with a symlink to a root-owned target or to
// a directory of its own. It finds each dispatch by watching the dispatch root, then polls
// for the dispatch's workspace and out dir until its uid may watch them, and from then on
// watches every directory below them.
//
// Test code: setup failures abort. Root only (it switches uids).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "integration/harness.h"

namespace sbx::integration::run {

struct SwapperOptions {
  uid_t uid = 0;
  gid_t gid = 0;
  // Directories watched from the start (a dispatch root, a shared directory). A directory
  // created in one of them is taken for a dispatch: its workspace and out are watched too.
  std::vector<std::string> watch;
  std::string victim_file;  // root-owned: what files are swapped for a link to
  std::string victim_dir;   // root-owned: what directories are swapped for a link to
  std::string theirs_dir;   // the attacker's: config, hooks/ (a hostile git directory)
  // Empty: every entry an event names is swapped, once, from the start. Otherwise only
  // this path below the workspace (".git", ".git/config", ".git/hooks"...), every time it
  // is back, once an entry named `armed_by` was written in a watched directory ("index":
  // the clone's checkout is done; a file the agent writes last: the agent is done).
  std::string swap_path;
  std::string armed_by;
  // Names in a watched directory (not a dispatch) the attacker puts a link at as soon as
  // an event names an entry that contains it (the status document's temporary file).
  std::vector<std::string> plant;
};

struct SwapperReport {
  int watches = 0;  // directories watched
  int events = 0;
  int swaps = 0;  // entries replaced by a link
  [[nodiscard]] std::string Describe() const;
};

class Swapper {
 public:
  explicit Swapper(const SwapperOptions& options);
  Swapper(const Swapper&) = delete;
  Swapper& operator=(const Swapper&) = delete;
  ~Swapper();
  // False when it could not become its uid (one this user namespace does not map).
  [[nodiscard]] bool started() const { return started_; }
  // Stops the process and returns what it did.
  SwapperReport Stop();

 private:
  bool started_ = false;
  pid_t pid_ = -1;
  Fd stop_;    // closed to stop the swapper
  Fd report_;  // its report, written when it stops
};

}  // namespace sbx::integration::run
