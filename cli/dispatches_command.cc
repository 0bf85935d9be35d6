#include "cli/dispatches_command.h"

#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <optional>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "base/json.h"
#include "cli/cache_listing.h"
#include "cli/parse_options.h"
#include "dispatch/host/orphan_cgroups.h"
#include "dispatch/host/stale_state.h"
#include "dispatch/identity/lease.h"
#include "dispatch/record/list.h"
#include "dispatch/record/status_json.h"
#include "dispatch/request/human_units.h"
#include "dispatch/request/labels.h"
#include "dispatch/sys/caller_stderr.h"

namespace sbx::cli {
namespace {

constexpr int kFailureExit = 125;

int Fail(const char* command, const std::string& message) {
  fmt::print(stderr, "ateam-sandbox {}: {}\n", command, dispatch::EscapeForTerminal(message));
  return kFailureExit;
}

// Parses `args` into `app`; nullopt when parsing is done with the command's result (help
// printed, or an error).
std::optional<int> Parse(CLI::App& app, const char* command, std::span<const std::string> args) {
  return ParseOptions(app, args,
                      [command](const std::string& message) { return Fail(command, message); });
}

// A record that still says "running" with nobody holding the lock: its run was killed
// (SIGKILL, the host went down) before it could say how the dispatch ended.
bool Lost(const dispatch::DispatchEntry& e) {
  return !e.running && e.record && e.record->reason == "running";
}

// The EXIT and REASON columns: the record's, or what is known without one.
std::pair<std::string, std::string> ExitAndReason(const dispatch::DispatchEntry& e) {
  if (e.running) return {"-", "running"};
  if (Lost(e)) return {"-", "lost"};
  if (!e.record) return {"-", "no status"};
  return {e.record->exit_code ? std::to_string(*e.record->exit_code) : "-", e.record->reason};
}

std::string EntryJson(const dispatch::DispatchEntry& e) {
  using base::JsonQuote;
  auto quoted_or_null = [](const std::string& s) { return s.empty() ? "null" : JsonQuote(s); };
  const auto& rec = e.record;
  std::string state = e.running ? "running" : Lost(e) ? "lost" : rec ? "finished" : "no-status";
  return fmt::format(
      R"({{"kind": "dispatch", "id": {}, "path": {}, "age_seconds": {}, "size_bytes": {}, "state": {}, )"
      R"("exit_code": {}, "reason": {}, "error": {}, "started_at": {}, "labels": {}}})",
      JsonQuote(e.id), JsonQuote(e.path), e.age_seconds, e.size_bytes, JsonQuote(state),
      rec && rec->exit_code ? std::to_string(*rec->exit_code) : "null",
      rec ? quoted_or_null(rec->reason) : "null", rec ? quoted_or_null(rec->error) : "null",
      rec ? quoted_or_null(rec->started_at) : "null",
      dispatch::RenderLabelsJson(rec ? rec->labels : std::vector<dispatch::DispatchLabel>{}));
}

void AddRootOption(CLI::App& app, std::optional<std::string>& root) {
  app.add_option("--workspace-root", root,
                 "the dispatch root `run` was given (default: run's default for this caller)");
}

// --label KEY=VALUE filters (repeatable): a dispatch is selected when its record has every
// one; with none, every dispatch is.
void AddLabelFilter(CLI::App& app, std::vector<std::string>& texts) {
  app.add_option("--label", texts,
                 "only dispatches run with this label (repeatable: all must match)");
}

bool Selected(const dispatch::DispatchEntry& e,
              const std::vector<dispatch::DispatchLabel>& wanted) {
  if (wanted.empty()) return true;
  return e.record && dispatch::LabelsMatch(e.record->labels, wanted);
}

// The REASON column, and the labels after it when any listed dispatch has some.
std::string ReasonColumn(const std::string& reason, const std::string& labels, bool with_labels) {
  if (!with_labels || labels.empty()) return reason;
  return fmt::format("{:<22}  {}", reason, labels);
}

}  // namespace

int RunLsCommand(std::span<const std::string> args) {
  CLI::App app{"List this caller's dispatch directories", "ateam-sandbox ls"};
  std::optional<std::string> workspace_root;
  std::optional<std::string> cache_root;
  bool json = false;
  std::vector<std::string> label_texts;
  AddRootOption(app, workspace_root);
  AddCacheRootOption(app, cache_root);
  app.add_flag("--json", json,
               "one JSON array: an object per dispatch, then one per object cache (\"kind\")");
  AddLabelFilter(app, label_texts);
  if (auto done = Parse(app, "ls", args)) return *done;
  auto wanted = dispatch::ParseLabels(label_texts);
  if (!wanted) return Fail("ls", wanted.error().Render());
  auto root = dispatch::OpenCallerDispatchRoot(workspace_root);
  if (!root) return Fail("ls", root.error().Render());
  auto entries = dispatch::ListDispatches(*root, static_cast<int64_t>(std::time(nullptr)));
  if (!entries) return Fail("ls", entries.error().Render());
  std::erase_if(*entries, [&](const dispatch::DispatchEntry& e) { return !Selected(e, *wanted); });
  if (json) {
    std::vector<std::string> objects;
    for (const auto& e : *entries) objects.push_back(EntryJson(e));
    // The caches after the dispatches, unless --label selects dispatches only.
    if (wanted->empty()) {
      if (auto error = CachesJson(cache_root, &objects)) return Fail("ls", *error);
    }
    fmt::print("[");
    for (size_t i = 0; i < objects.size(); ++i) {
      fmt::print("{}\n  {}", i == 0 ? "" : ",", objects[i]);
    }
    fmt::print("{}]\n", objects.empty() ? "" : "\n");
    return 0;
  }
  if (entries->empty()) return PrintCaches(cache_root);
  const bool with_labels = std::any_of(entries->begin(), entries->end(), [](const auto& e) {
    return e.record && !e.record->labels.empty();
  });
  fmt::print("{:<12}  {:>4}  {:>5}  {:>4}  {}\n", "ID", "AGE", "SIZE", "EXIT",
             ReasonColumn("REASON", "LABELS", with_labels));
  uint64_t total = 0;
  for (const auto& e : *entries) {
    auto [exit, reason] = ExitAndReason(e);
    std::string labels = e.record ? dispatch::FormatLabels(e.record->labels) : "";
    fmt::print("{:<12}  {:>4}  {:>5}  {:>4}  {}\n", e.id, dispatch::FormatAge(e.age_seconds),
               dispatch::FormatSize(e.size_bytes), exit, ReasonColumn(reason, labels, with_labels));
    total += e.size_bytes;
  }
  fmt::print("{} dispatch{}, {} in {}\n", entries->size(), entries->size() == 1 ? "" : "es",
             dispatch::FormatSize(total), root->path);
  return PrintCaches(cache_root);
}

// What no dispatch owns any more: cgroups and state directories a lost janitor left.
// False when something could not be removed (said on stderr).
bool CollectOrphanedState(bool dry_run) {
  bool failed = false;
  auto orphans = dispatch::RemoveOrphanCgroups(dry_run);
  for (const auto& path : orphans.removed) {
    fmt::print("{} orphaned cgroup {}\n", dry_run ? "would remove" : "removed",
               dispatch::EscapeForTerminal(path));
  }
  if (orphans.kept_unsure > 0) {
    fmt::print(
        "kept {} dispatch cgroup{} no running dispatch names: a running dispatch's state "
        "directory names none yet (a run starting, or of an older version); gc again "
        "later\n",
        orphans.kept_unsure, orphans.kept_unsure == 1 ? "" : "s");
  }
  for (const auto& line : orphans.failed) {
    fmt::print(stderr, "ateam-sandbox gc: {}\n", dispatch::EscapeForTerminal(line));
    failed = true;
  }
  // A root caller's released uid leases: their files go, the directory keeps the held ones.
  if (::geteuid() == 0) {
    auto pruned = dispatch::PruneFreeLeases(dispatch::kLeaseDir, 0, dry_run);
    if (!pruned) {
      fmt::print(stderr, "ateam-sandbox gc: {}\n",
                 dispatch::EscapeForTerminal(pruned.error().Render()));
      failed = true;
    } else if (*pruned > 0) {
      fmt::print("{} {} released uid lease{} in {}\n", dry_run ? "would remove" : "removed",
                 *pruned, *pruned == 1 ? "" : "s", dispatch::kLeaseDir);
    }
  }
  auto stale = dispatch::RemoveStaleState(dry_run);
  for (const auto& path : stale.removed) {
    fmt::print("{} stale state {}\n", dry_run ? "would remove" : "removed",
               dispatch::EscapeForTerminal(path));
  }
  for (const auto& line : stale.failed) {
    fmt::print(stderr, "ateam-sandbox gc: {}\n", dispatch::EscapeForTerminal(line));
    failed = true;
  }
  return !failed;
}

int RunGcCommand(std::span<const std::string> args) {
  CLI::App app{"Remove this caller's finished dispatch directories", "ateam-sandbox gc"};
  std::optional<std::string> workspace_root;
  std::optional<std::string> cache_root;
  std::string older_than;
  bool dry_run = false;
  std::vector<std::string> label_texts;
  AddRootOption(app, workspace_root);
  AddCacheRootOption(app, cache_root);
  app.add_option("--older-than", older_than,
                 "only dispatches unchanged, and object caches unused, for DURATION (30m, 12h, 7d; "
                 "default: every finished one, every unused cache)");
  app.add_flag("--dry-run", dry_run, "say what would be removed, remove nothing");
  AddLabelFilter(app, label_texts);
  if (auto done = Parse(app, "gc", args)) return *done;
  auto wanted = dispatch::ParseLabels(label_texts);
  if (!wanted) return Fail("gc", wanted.error().Render());
  int64_t min_age = 0;
  if (!older_than.empty()) {
    auto seconds = dispatch::ParseDurationSeconds(older_than);
    if (!seconds) return Fail("gc", seconds.error().Render());
    min_age = *seconds;
  }
  auto root = dispatch::OpenCallerDispatchRoot(workspace_root);
  if (!root) return Fail("gc", root.error().Render());
  auto entries = dispatch::ListDispatches(*root, static_cast<int64_t>(std::time(nullptr)));
  if (!entries) return Fail("gc", entries.error().Render());
  uint64_t freed = 0;
  size_t removed = 0;
  bool failed = false;
  for (const auto& e : *entries) {
    if (e.age_seconds < min_age || !Selected(e, *wanted)) continue;
    auto done =
        CollectOne(e.running, dry_run, fmt::format("kept {}: its run is still going", e.id),
                   fmt::format("{}  {:>5}  {}", e.id, dispatch::FormatSize(e.size_bytes), e.path),
                   [&] { return dispatch::RemoveFinishedDispatch(*root, e); });
    if (done == Collected::kFailed) failed = true;
    if (done != Collected::kRemoved) continue;
    freed += e.size_bytes;
    ++removed;
  }
  fmt::print("{} {} in {} dispatch{}\n", dry_run ? "would free" : "freed",
             dispatch::FormatSize(freed), removed, removed == 1 ? "" : "es");
  // Then what no dispatch owns any more: cgroups and state directories a lost janitor left.
  // Not with a --label: gc then touches only the dispatches it selects.
  if (!wanted->empty()) return failed ? kFailureExit : 0;
  if (!CollectOrphanedState(dry_run)) failed = true;
  // And the object caches no dispatch used for as long.
  if (CollectCaches(cache_root, min_age, dry_run) != 0) failed = true;
  return failed ? kFailureExit : 0;
}

int RunRmCommand(std::span<const std::string> args) {
  CLI::App app{"Remove finished dispatch directories by id", "ateam-sandbox rm"};
  std::optional<std::string> workspace_root;
  std::vector<std::string> ids;
  AddRootOption(app, workspace_root);
  app.add_option("id", ids, "the dispatch ids, as ls shows them")->required();
  if (auto done = Parse(app, "rm", args)) return *done;
  auto root = dispatch::OpenCallerDispatchRoot(workspace_root);
  if (!root) return Fail("rm", root.error().Render());
  const auto now = static_cast<int64_t>(std::time(nullptr));
  bool failed = false;
  for (const std::string& id : ids) {
    auto entry = dispatch::FindDispatch(*root, id, now);
    if (!entry) {
      Fail("rm", fmt::format("no dispatch {} in {}", id, root->path));
      failed = true;
      continue;
    }
    // The run's lock decides, taken for the removal: a run that is still going keeps it.
    auto done = entry->running ? base::Result<bool>(false)
                               : dispatch::RemoveFinishedDispatch(*root, *entry);
    if (!done || !*done) {
      Fail("rm", done ? fmt::format("{}: its run is still going; not removed", id)
                      : done.error().Render());
      failed = true;
      continue;
    }
    fmt::print("removed {}  {:>5}  {}\n", id, dispatch::FormatSize(entry->size_bytes), entry->path);
  }
  return failed ? kFailureExit : 0;
}

}  // namespace sbx::cli
