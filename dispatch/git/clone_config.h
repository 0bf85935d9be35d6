// What a fresh clone's git directory is given before the agent sees it: a config written
// from scratch with only keys that run nothing, and its HEAD commit read from the refs git
// just wrote (no git process needed on the host for it).
#pragma once

#include <string>

namespace sbx::dispatch {

// A value (or a subsection name) in git's config syntax: quoted, '\\' and '"' escaped.
std::string QuoteGitConfigValue(const std::string& value);

// remote.origin.url for a clone of `repo`: a local directory by its absolute path (as git
// clone records it), anything else as given.
std::string CloneOriginUrl(const std::string& repo);

// The config written into a fresh clone: core settings, the origin remote and `branch`'s
// upstream. Only keys that run nothing.
std::string CloneGitConfig(const std::string& origin_url, const std::string& branch, bool sha256);

// The commit a fresh clone's branch points to: refs/heads/BRANCH, else its line in
// packed-refs. Empty for an unborn branch.
std::string CloneHeadCommit(int gitfd, const std::string& branch);

}  // namespace sbx::dispatch
