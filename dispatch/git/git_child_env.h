// What every git the host side runs (the clone, and the steps around it) starts with: no
// system or global configuration file but one of ours, a memfd nobody else can replace,
// and none of the caller's variables that point git at another repository, index or
// configuration. One place, so the clone and the later steps cannot drift apart.
#pragma once

#include <string>
#include <vector>

namespace sbx::dispatch {

struct GitChildConfig {
  // Directories git may treat as repositories although another uid owns them.
  std::vector<std::string> safe_directories;
  // The steps after the clone, which only ever read local repositories: no hook, no
  // fsmonitor, no transport but file, and none of the caller's variables that name a
  // program (ssh, askpass, a proxy, an external diff). The clone itself keeps the
  // caller's transports.
  bool offline = false;
};

// A value in git's config syntax: quoted, with '\', '"' and a newline escaped.
std::string GitConfigQuote(const std::string& value);

// The configuration git reads as its global file.
std::string GitConfigText(const GitChildConfig& config);

// In the git child, before it execs git: the configuration written to a memfd that git
// reads as /proc/self/fd/N (every git process of the step inherits it), and git's
// environment set. 0, or the errno of the failed memfd step.
int PrepareGitChild(const GitChildConfig& config);

}  // namespace sbx::dispatch
