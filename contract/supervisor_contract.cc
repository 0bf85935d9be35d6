#include "contract/supervisor_contract.h"

#include <string_view>

#include "base/unknown_option.h"

namespace sbx::contract {
namespace {

using base::Error;
using base::Result;

constexpr std::string_view kRoute = "--route";
constexpr std::string_view kProbeTimeout = "--probe-timeout-ms";
constexpr std::string_view kLandlock = "--landlock";
constexpr std::string_view kLandlockWrite = "--landlock-write";
constexpr std::string_view kTty = "--tty";
constexpr std::string_view kTtySize = "--tty-size";
constexpr std::string_view kReport = "--report";

void Add(std::vector<std::string>& argv, std::string_view name, const std::string& value) {
  argv.emplace_back(name);
  argv.push_back(value);
}

// Splits "--name=value" or "--name value"; advances `i` past a separate value. nullopt
// when args[i] is not option `name` (a longer name that starts the same is another option).
std::optional<Result<std::string>> TakeOptionValue(std::span<const std::string> args, size_t& i,
                                                   std::string_view name) {
  std::string_view arg = args[i];
  if (arg.substr(0, name.size()) != name) return std::nullopt;
  std::string_view rest = arg.substr(name.size());
  if (!rest.empty()) {
    if (rest[0] != '=') return std::nullopt;
    return Result<std::string>(std::string(rest.substr(1)));
  }
  if (i + 1 >= args.size()) {
    return Result<std::string>(Error::Message(std::string(name) + " needs a value"));
  }
  ++i;
  return Result<std::string>(args[i]);
}

// "ADDR:PORT=SOCKET_PATH" split at the first '='; an Error without one.
Result<SupervisorRoute> SplitRoute(const std::string& text) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos) {
    return Error::Message("bad --route '" + text + "': expected ADDR:PORT=SOCKET_PATH");
  }
  return SupervisorRoute{text.substr(0, eq), text.substr(eq + 1)};
}

}  // namespace

std::string SupervisorBinaryInside() { return std::string(kTunnelDir) + "/supervisor"; }

std::string RouteSocketInside(size_t index) {
  return std::string(kTunnelDir) + "/route-" + std::to_string(index) + ".sock";
}

std::string TtySocketInside() { return std::string(kTunnelDir) + "/" + kTtySocketName; }
std::string ReportSocketInside() { return std::string(kTunnelDir) + "/" + kReportSocketName; }

std::vector<std::string> WriteSupervisorArgs(const SupervisorArgs& args) {
  std::vector<std::string> argv;
  if (args.help) return {"--help"};
  for (const SupervisorRoute& route : args.routes)
    Add(argv, kRoute, route.listen + "=" + route.socket);
  if (args.probe_timeout) Add(argv, kProbeTimeout, *args.probe_timeout);
  if (args.landlock) Add(argv, kLandlock, *args.landlock);
  for (const std::string& path : args.landlock_write) Add(argv, kLandlockWrite, path);
  if (args.tty) Add(argv, kTty, *args.tty);
  if (args.tty_size) Add(argv, kTtySize, *args.tty_size);
  if (args.report) Add(argv, kReport, *args.report);
  argv.emplace_back("--");
  argv.insert(argv.end(), args.command.begin(), args.command.end());
  return argv;
}

std::vector<std::string> SupervisorCommand(const SupervisorArgs& args) {
  std::vector<std::string> argv = {SupervisorBinaryInside(), "supervise"};
  std::vector<std::string> rest = WriteSupervisorArgs(args);
  argv.insert(argv.end(), rest.begin(), rest.end());
  return argv;
}

Result<SupervisorArgs> ParseSupervisorArgs(std::span<const std::string> args) {
  SupervisorArgs parsed;
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg.empty() || arg[0] != '-') break;
    if (arg == "--help" || arg == "-h") {
      SupervisorArgs help;
      help.help = true;
      return help;
    }
    // Longer names first where one starts with another (--landlock-write, --tty-size).
    if (auto route = TakeOptionValue(args, i, kRoute)) {
      if (!*route) return route->error();
      auto split = SplitRoute(**route);
      if (!split) return split.error();
      parsed.routes.push_back(std::move(*split));
    } else if (auto timeout = TakeOptionValue(args, i, kProbeTimeout)) {
      if (!*timeout) return timeout->error();
      parsed.probe_timeout = std::move(**timeout);
    } else if (auto write = TakeOptionValue(args, i, kLandlockWrite)) {
      if (!*write) return write->error();
      parsed.landlock_write.push_back(std::move(**write));
    } else if (auto parts = TakeOptionValue(args, i, kLandlock)) {
      if (!*parts) return parts->error();
      parsed.landlock = std::move(**parts);
    } else if (auto size = TakeOptionValue(args, i, kTtySize)) {
      if (!*size) return size->error();
      parsed.tty_size = std::move(**size);
    } else if (auto tty = TakeOptionValue(args, i, kTty)) {
      if (!*tty) return tty->error();
      parsed.tty = std::move(**tty);
    } else if (auto report = TakeOptionValue(args, i, kReport)) {
      if (!*report) return report->error();
      parsed.report = std::move(**report);
    } else {
      const std::vector<std::string> known = {std::string(kRoute),    std::string(kProbeTimeout),
                                              std::string(kLandlock), std::string(kLandlockWrite),
                                              std::string(kTty),      std::string(kTtySize),
                                              std::string(kReport),   "--help"};
      std::string name = arg.substr(0, arg.find('='));
      return Error::Message(
          base::UnknownNameMessage("option", name, known, "ateam-sandbox supervise --help"));
    }
  }
  parsed.command.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
  if (parsed.command.empty()) return Error::Message("no command given (after --)");
  return parsed;
}

}  // namespace sbx::contract
