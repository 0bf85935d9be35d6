// Checks of a DispatchRequest's host paths, made before anything is created: relative
// --ro/--rw paths become absolute (against the caller's cwd, as --out does), paths that
// would cover the runtime's own places are refused, --credentials must name a readable file
// and a destination inside the home. Each failure is one line for `run` to print.
#pragma once

#include <string>
#include <vector>

#include "base/error.h"
#include "dispatch/request/request.h"

namespace sbx::dispatch {

// One --credentials file as the sandbox gets it: its content, read once by
// CheckRequestPaths, and where it goes (relative to the home).
struct CredentialsCopy {
  std::string dest;
  std::string content;
};

// Each --credentials file is read here, once: the copies go to `credentials` when given, in
// the order of the flags. Each DEST ends up relative to the home in `request.credentials`
// ("SRC:DEST", SRC absolute); two files for one DEST are refused.
base::Status CheckRequestPaths(DispatchRequest& request, const std::string& cwd, bool root_caller,
                               std::vector<CredentialsCopy>* credentials = nullptr);

// The host files the sandbox's generated ones are mounted over (the host's /etc is bound
// read-only, so nothing can be created in it): `etc` is normally "/etc".
base::Status CheckHostMountPoints(const std::string& etc);

// --credentials SRC[:DEST] split at its first ':', with DEST defaulting to the preset's
// (relative to the home; "" when neither names one). DEST as given: relative to the home
// or absolute inside it.
struct CredentialsSpec {
  std::string source;
  std::string dest;
};
CredentialsSpec SplitCredentials(const std::string& value, const AgentProfile& profile);

}  // namespace sbx::dispatch
