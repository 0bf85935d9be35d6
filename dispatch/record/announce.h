// The one line `run` prints before the agent starts, when a person is watching (stderr is
// a terminal): where this dispatch's files are. Silent otherwise: scripts read the status
// document.
#pragma once

#include <string>

namespace sbx::dispatch {

// "ateam-sandbox run: dispatch <id>: workspace <path>, out <path>" on stderr, when stderr
// is a terminal.
void AnnounceDispatch(const std::string& id, const std::string& workspace, const std::string& out);

}  // namespace sbx::dispatch
