// The one line `run` prints before the agent starts, when a person is watching (stderr is
// a terminal): where this dispatch's files are. Silent otherwise: scripts read the status
// document.
#pragma once

#include <string>

#include "base/error.h"
#include "base/output_file.h"

namespace sbx::dispatch {

// --id-file: "<id>\n" as the whole file (base/output_file.h), written once the dispatch's
// directory and its "running" record exist, before the agent starts.
base::Status WriteIdFile(base::OutputFile& file, const std::string& id);

// "ateam-sandbox run: dispatch <id>: workspace <path>, out <path>" on stderr, when stderr
// is a terminal.
void AnnounceDispatch(const std::string& id, const std::string& workspace, const std::string& out);

}  // namespace sbx::dispatch
