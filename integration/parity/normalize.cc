// Report and mountinfo normalization for the parity matrix; the rules are listed in
// parity_runner.h and docs/bwrap-compat.md.
#include <algorithm>
#include <regex>
#include <sstream>

#include "integration/parity/parity_runner.h"

namespace sbx::integration::parity {
namespace {

// A pid of the host pid namespace, as a relation that is the same in every run.
std::string PidRelation(const std::string& value, const Report& report) {
  if (value == Get(report, "pid")) return "self";
  if (value == Get(report, "ppid")) return "parent";
  return "host";
}

std::vector<std::string> Fields(const std::string& line) {
  std::vector<std::string> fields;
  std::istringstream in(line);
  for (std::string field; std::getline(in, field, ' ');) fields.push_back(field);
  return fields;
}

}  // namespace

std::string NormalizeReport(const std::string& text, const std::vector<std::string>& ignore) {
  Report report = ParseReport(text);
  Report out = report;
  for (auto& [key, value] : out) {
    if (key.rfind("ns.", 0) == 0 && value != "unavailable") {
      value = value == HostNamespace(key.substr(3)) ? "host" : "new";
    }
  }
  // Host pids: the pid namespace is the host's, or unreadable (no /proc) while the probe's
  // pid is not one a fresh pid namespace would give it.
  bool host_pids = Get(out, "ns.pid") == "host" ||
                   (Get(out, "ns.pid") == "unavailable" && report["pid"].size() > 1);
  if (host_pids) {
    for (const char* key : {"pgid", "sid"}) out[key] = PidRelation(report[key], report);
    out["pid"] = "self";
    out["ppid"] = "parent";
    if (out["pids"] != "unavailable") out["pids"] = "<host pids>";
  }
  for (const std::string& key : ignore) out.erase(key);
  std::string normalized;
  for (const auto& [key, value] : out) normalized += key + ": " + value + "\n";
  // Lines that are not `key: value` (there should be none) are kept visible.
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.find(": ") == std::string::npos && (line.empty() || line.back() != ':')) {
      normalized += "unparsed: " + line + "\n";
    }
  }
  return normalized;
}

std::string NormalizeMountinfo(const std::string& text) {
  static const std::regex kPeer("(shared|master|propagate_from):[0-9]+");
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> fields = Fields(line);
    if (fields.size() < 7) {
      lines.push_back("unparsed: " + line);
      continue;
    }
    // Drop the mount id and parent id; anonymous device numbers are allocated per mount.
    std::string device = fields[2].rfind("0:", 0) == 0 ? "0:*" : fields[2];
    std::string rest = device;
    for (size_t i = 3; i < fields.size(); ++i) rest += " " + fields[i];
    lines.push_back(std::regex_replace(rest, kPeer, "$1:N"));
  }
  std::sort(lines.begin(), lines.end());
  std::string out;
  for (const std::string& line : lines) out += line + "\n";
  return out;
}

}  // namespace sbx::integration::parity
