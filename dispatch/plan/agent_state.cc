#include "dispatch/plan/agent_state.h"

#include <algorithm>

#include <fmt/format.h>

#include "base/json.h"
#include "dispatch/request/checks.h"

namespace sbx::dispatch {
namespace {

// The last value `env` gives NAME ("" when none).
std::string Value(const std::vector<std::string>& env, const std::string& name) {
  std::string value;
  for (const std::string& entry : env) {
    if (entry.starts_with(name + "=")) value = entry.substr(name.size() + 1);
  }
  return value;
}

// Claude Code's ~/.claude.json as it leaves it once a user finished its first run in this
// workspace: the theme picked, the project trusted, the key answered.
std::string ClaudeState(const std::string& workspace, const std::vector<std::string>& env) {
  // An approved key is remembered by its last 20 characters; any other is asked about.
  constexpr size_t kKeySuffix = 20;
  const std::string key = Value(env, "ANTHROPIC_API_KEY");
  std::string approved;
  if (!key.empty()) {
    approved = base::JsonQuote(key.size() > kKeySuffix ? key.substr(key.size() - kKeySuffix) : key);
  }
  return fmt::format(
      "{{\n"
      "  \"hasCompletedOnboarding\": true,\n"
      "  \"theme\": \"dark\",\n"
      "  \"customApiKeyResponses\": {{\"approved\": [{}], \"rejected\": []}},\n"
      "  \"projects\": {{\n"
      "    {}: {{\"hasTrustDialogAccepted\": true, \"hasCompletedProjectOnboarding\": true,\n"
      "      \"allowedTools\": []}}\n"
      "  }}\n"
      "}}\n",
      approved, base::JsonQuote(workspace));
}

std::string OpencodeConfig() {
  return "{\n"
         "  \"$schema\": \"https://opencode.ai/config.json\",\n"
         "  \"autoupdate\": false,\n"
         "  \"share\": \"disabled\"\n"
         "}\n";
}

}  // namespace

std::vector<HomeFile> AgentStateFiles(const DispatchRequest& request, const std::string& workspace,
                                      const std::vector<std::string>& sandbox_env) {
  std::vector<HomeFile> files;
  switch (request.agent) {
    case AgentPreset::kClaude:
      files.push_back({".claude.json", ClaudeState(workspace, sandbox_env)});
      break;
    case AgentPreset::kOpencode:
      files.push_back({".config/opencode/opencode.json", OpencodeConfig()});
      break;
    case AgentPreset::kNone:
      break;
  }
  // A --credentials file for the same place is the caller's own state: it wins.
  const AgentProfile profile = ProfileFor(request.agent);
  std::erase_if(files, [&](const HomeFile& file) {
    return std::any_of(request.credentials.begin(), request.credentials.end(),
                       [&](const std::string& value) {
                         return SplitCredentials(value, profile).dest == file.dest;
                       });
  });
  return files;
}

}  // namespace sbx::dispatch
