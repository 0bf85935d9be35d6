// The state an --agent preset's agent finds in the throwaway home, so that it starts as it
// does for a user who set it up once: no first-run onboarding, the workspace trusted, the
// key it was given accepted. The home is new for every dispatch, so without this an
// interactive agent would stop at the same questions every time.
//
//   claude    ~/.claude.json: onboarding done, the workspace's project trusted (no trust
//             dialog), and ANTHROPIC_API_KEY, when the sandbox's environment has one,
//             approved (claude remembers approved keys by their last 20 characters).
//   opencode  ~/.config/opencode/opencode.json: no self-update and no sharing (neither has a
//             route out of the sandbox).
//
// Each is a writable file of the sandbox's uid (the agent rewrites its state as it goes);
// a --credentials file given for the same place takes its place.
#pragma once

#include <string>
#include <vector>

#include "base/error.h"
#include "dispatch/request/request.h"

namespace sbx::dispatch {

struct HomeFile {
  std::string dest;  // relative to the home
  std::string content;
};

// `sandbox_env`: the agent's environment as the layout builds it (NAME=VALUE);
// `workspace`: the workspace's path inside (the same as on the host).
std::vector<HomeFile> AgentStateFiles(const DispatchRequest& request, const std::string& workspace,
                                      const std::vector<std::string>& sandbox_env);

}  // namespace sbx::dispatch
