// <root>/<id>/status.json: how the dispatch's run ended, kept in the dispatch directory
// itself (the status document of docs/usage.md, the same text --status-json gets), so that
// `ateam-sandbox ls` can show it later. <id> is the caller's own and never mounted in the
// sandbox: the agent cannot write or plant anything there.
//
// DispatchDirEnd is what `run` does with <id> once the result is final: write the record,
// or, for `run --rm`, remove the whole directory. It holds a copy of the descriptor that
// carries the run's lock (dispatch/host/lock.h), so <id> stays locked until then.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"
#include "dispatch/host/prepare.h"
#include "dispatch/request/result.h"

namespace sbx::dispatch {

inline constexpr char kDispatchRecordName[] = "status.json";

// Writes `text` as <dir_fd>/status.json: a new file (0600, O_EXCL, never through a link)
// under a temporary name, then renamed over the name.
base::Status WriteDispatchRecord(int dir_fd, const std::string& text);

// The fields of a record that `ls` shows.
struct DispatchRecord {
  std::optional<int> exit_code;
  std::string reason;      // dispatch.h ReasonName
  std::string error;       // "" when null
  std::string started_at;  // RFC 3339, UTC
  std::string workspace;
  std::string out;
  std::vector<DispatchLabel> labels;  // run --label (dispatch/request/labels.h)
};
// Reads these fields of a status document (the top-level object only). nullopt when it has
// no `reason`, or breaks off inside a string (a truncated or foreign file).
std::optional<DispatchRecord> ParseDispatchRecord(std::string_view text);

class DispatchDirEnd {
 public:
  // Called once <id> exists (nothing to do when this run made no <id>): keeps copies of the
  // root's and <id>'s descriptors. `remove`: --rm.
  base::Status Hold(const DispatchDirs& dirs, const RunAsIds& run_as, bool remove);
  // With the result final: nothing when <id> is gone already (a run that failed before the
  // agent started removed it); with --rm, removes it (dispatch_dir.h); else writes the record.
  // A failure is one line on stderr: the run's own result stands.
  void Finish(const DispatchResult& result);
  // The record of a dispatch that has not ended (`reason` "running", `exit_code` null),
  // written once <id> exists and before the agent starts, so whoever finds <id> finds its
  // record; Finish replaces it. A failure is one line on stderr.
  void WriteRunning(const DispatchResult& result);

 private:
  base::UniqueFd root_fd_;
  base::UniqueFd dir_fd_;
  std::string id_;
  std::string path_;
  RunAsIds run_as_;
  bool remove_ = false;
};

}  // namespace sbx::dispatch
