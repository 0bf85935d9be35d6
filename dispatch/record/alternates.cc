#include "dispatch/record/alternates.h"

#include <sstream>

#include <fmt/format.h>

#include "dispatch/sys/caller_stderr.h"

namespace sbx::dispatch {
namespace {

bool HasControl(const std::string& text) {
  for (unsigned char c : text) {
    if (c < 0x20 || c == 0x7f) return true;
  }
  return false;
}

// Every component of the absolute `path` after the leading '/' non-empty, not "." or "..".
bool PlainAbsolute(const std::string& path) {
  const std::string closed = path + "/";
  return path.starts_with('/') && closed.find("//") == std::string::npos &&
         closed.find("/./") == std::string::npos && closed.find("/../") == std::string::npos;
}

}  // namespace

base::Result<std::vector<AlternateStore>> ParseWorkspaceAlternates(const std::string& text) {
  std::vector<AlternateStore> stores;
  const std::string suffix = "/objects";
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line.starts_with('#')) continue;
    auto refuse = [&](const char* why) {
      return base::Error::Message(
          fmt::format("the workspace borrows objects from {}: {}", EscapeForTerminal(line), why));
    };
    if (HasControl(line) || !PlainAbsolute(line) || !line.ends_with(suffix) ||
        line.size() == suffix.size()) {
      return refuse("not an object cache's objects directory");
    }
    std::string cache = line.substr(0, line.size() - suffix.size());
    size_t slash = cache.rfind('/');
    AlternateStore store{.root = slash == 0 ? "/" : cache.substr(0, slash),
                         .name = cache.substr(slash + 1)};
    if (store.name.starts_with('.')) return refuse("not an object cache");
    if (stores.size() == kMaxAlternateStores) {
      return refuse(fmt::format("more than {} stores", kMaxAlternateStores).c_str());
    }
    stores.push_back(std::move(store));
  }
  return stores;
}

}  // namespace sbx::dispatch
