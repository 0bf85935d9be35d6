#include "cli/value_names.h"

#include <utility>

namespace sbx::cli {
namespace {

// Names no subcommand has are harmless here: an option added later finds its name ready.
constexpr std::pair<std::string_view, std::string_view> kValueNames[] = {
    // run
    {"--repo", "SRC"},
    {"--rev", "REV"},
    {"--workspace", "DIR"},
    {"--out", "DIR"},
    {"--credentials", "SRC[:DEST]"},
    {"--agent", "NAME"},
    {"--env", "NAME"},
    {"--setenv", "NAME=VALUE"},
    {"--ro", "PATH"},
    {"--rw", "PATH"},
    {"--allow", "HOST[:PORT][=ADDR:PORT][,tls|tcp|broker]"},
    {"--broker-secret", "HOST:HEADER=@FILE|$NAME"},
    {"--broker-ca", "FILE"},
    {"--ledger", "FILE"},
    {"--backend", "BACKEND"},
    {"--bwrap-path", "PATH"},
    {"--timeout", "DURATION"},
    {"--grace", "DURATION"},
    {"--status-json", "FILE"},
    {"--seccomp-allow", "GROUP"},
    {"--landlock-allow", "fs|net|scope"},
    {"--run-as", "USER|UID[:GID]"},
    {"--identity", "IDENTITY"},
    {"--patch", "FILE"},
    {"--id-file", "FILE"},
    {"--tmpfs-size", "SIZE"},
    {"--memory", "SIZE"},
    {"--disk", "SIZE"},
    {"--inodes", "N"},
    {"--pids", "N"},
    {"--cpus", "N"},
    {"--limits", "MODE"},
    {"--label", "KEY=VALUE"},
    // run, ls, gc, rm
    {"--workspace-root", "DIR"},
    // run, ls, gc, harvest
    {"--cache-root", "DIR"},
    // gc
    {"--older-than", "DURATION"},
    // harvest
    {"workspace", "DIR"},
    {"--base", "REV"},
    {"--output", "FILE"},
    // rm
    {"id", "ID"},
    {"ids", "ID"},
};

}  // namespace

std::string_view ValueNameFor(std::string_view option) {
  for (const auto& [name, value] : kValueNames) {
    if (name == option) return value;
  }
  return "";
}

}  // namespace sbx::cli
