// Checks of a DispatchRequest's host paths, made before anything is created: relative
// --ro/--rw paths become absolute (against the caller's cwd, as --out does), paths that
// would cover the runtime's own places are refused, --credentials must name a readable file
// and a destination inside the home. Each failure is one line for `run` to print.
#pragma once

#include <string>

#include "base/error.h"
#include "dispatch/request/request.h"

namespace sbx::dispatch {

// The --credentials file is read here, once: its content goes to `credentials_content`
// when given.
base::Status CheckRequestPaths(DispatchRequest& request, const std::string& cwd, bool root_caller,
                               std::string* credentials_content = nullptr);

// The host files the sandbox's generated ones are mounted over (the host's /etc is bound
// read-only, so nothing can be created in it): `etc` is normally "/etc".
base::Status CheckHostMountPoints(const std::string& etc);

// --credentials SRC[:DEST] split, with DEST defaulting to the preset's (relative to the
// home; "" when neither names one).
struct CredentialsSpec {
  std::string source;
  std::string dest;
};
CredentialsSpec SplitCredentials(const std::string& value, const AgentProfile& profile);

}  // namespace sbx::dispatch
