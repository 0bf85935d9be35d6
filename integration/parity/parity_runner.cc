#include "integration/parity/parity_runner.h"

#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <sstream>

#include "integration/leftovers.h"

namespace sbx::integration::parity {
namespace {

constexpr std::chrono::milliseconds kRunTimeout{20000};

sock_filter Stmt(unsigned code, unsigned k) {
  return {static_cast<__u16>(code), 0, 0, static_cast<__u32>(k)};
}

sock_filter Jump(unsigned code, unsigned k, unsigned jt, unsigned jf) {
  return {static_cast<__u16>(code), static_cast<__u8>(jt), static_cast<__u8>(jf),
          static_cast<__u32>(k)};
}

std::string ProgramBytes(const std::vector<sock_filter>& program) {
  return std::string(reinterpret_cast<const char*>(program.data()),
                     program.size() * sizeof(sock_filter));
}

// The data a kData / kSeccomp* descriptor carries.
std::string FdPayload(const FdSpec& spec) {
  switch (spec.kind) {
    case FdSpec::Kind::kSeccompDenyKeyctl:
      return ProgramBytes({
          Stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
          Jump(BPF_JMP | BPF_JEQ | BPF_K, SYS_keyctl, 0, 1),
          Stmt(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
          Stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      });
    case FdSpec::Kind::kSeccompAllow:
      return ProgramBytes({Stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)});
    case FdSpec::Kind::kSeccompBadLength:
      return "1234567";
    case FdSpec::Kind::kData:
    case FdSpec::Kind::kPathOfFixture:
    case FdSpec::Kind::kCapture:
    case FdSpec::Kind::kOwnNamespace:
      break;
  }
  return spec.data;
}

std::string Expand(const std::string& arg, const std::string& fixture) {
  std::string out = arg;
  for (auto [token, value] : {std::pair<std::string, std::string>{"@PROBE", ProbeHostPath()},
                              std::pair<std::string, std::string>{"@T", fixture}}) {
    for (size_t at; (at = out.find(token)) != std::string::npos;)
      out.replace(at, token.size(), value);
  }
  return out;
}

Args ProfileArgs(Profile profile) {
  switch (profile) {
    case Profile::kTypical:
      return TypicalProfile();
    case Profile::kNoDev: {
      Args args = BaseProfile();
      args.insert(args.end(), {"--proc", "/proc"});
      return args;
    }
    case Profile::kBase:
      return BaseProfile();
    case Profile::kNone:
      break;
  }
  return {};
}

// The descriptors of one run: what the child gets, and the capture ends we read after.
struct RunFds {
  std::vector<Fd> held;                           // kept open until the run is over
  std::vector<std::pair<int, Fd>> capture_reads;  // {fd number, read end}
  RunOptions options;
};

RunFds PrepareFds(const Scenario& scenario, const std::string& fixture) {
  RunFds fds;
  for (const FdSpec& spec : scenario.fds) {
    if (spec.kind == FdSpec::Kind::kPathOfFixture) {
      Fd path(open((fixture + "/dir").c_str(), O_PATH | O_CLOEXEC));
      if (path.get() < 0) std::abort();
      fds.options.pass_fds.emplace_back(spec.number, path.get());
      fds.held.push_back(std::move(path));
      continue;
    }
    if (spec.kind == FdSpec::Kind::kOwnNamespace) {
      Fd ns(open(("/proc/self/ns/" + spec.data).c_str(), O_RDONLY | O_CLOEXEC));
      if (ns.get() < 0) std::abort();
      fds.options.pass_fds.emplace_back(spec.number, ns.get());
      fds.held.push_back(std::move(ns));
      continue;
    }
    Pipe pipe = MakePipe();
    if (spec.kind == FdSpec::Kind::kCapture) {
      fds.options.pass_fds.emplace_back(spec.number, pipe.write_end.get());
      fds.held.push_back(std::move(pipe.write_end));
      fds.capture_reads.emplace_back(spec.number, std::move(pipe.read_end));
      continue;
    }
    std::string payload = FdPayload(spec);  // small: fits the pipe buffer
    if (!payload.empty() && write(pipe.write_end.get(), payload.data(), payload.size()) !=
                                static_cast<ssize_t>(payload.size())) {
      std::abort();
    }
    pipe.write_end.reset();
    fds.options.pass_fds.emplace_back(spec.number, pipe.read_end.get());
    fds.held.push_back(std::move(pipe.read_end));
  }
  fds.options.cwd = scenario.cwd;
  fds.options.ignore_sigchld = scenario.ignore_sigchld;
  fds.options.timeout = scenario.timeout.value_or(kRunTimeout);
  return fds;
}

RunResult RunOnce(const Scenario& scenario, Backend backend, const std::string& fixture,
                  const Args& command, std::string* fd_data) {
  RunFds fds = PrepareFds(scenario, fixture);
  Args argv = BackendPrefix(backend);
  const Args profile = ProfileArgs(scenario.profile);
  for (const Args* part : {&profile, &scenario.options, &command}) {
    for (const std::string& arg : *part) argv.push_back(Expand(arg, fixture));
  }
  RunResult result = RunCommand(argv, fds.options);
  if (scenario.leaves_orphan) EndLeftovers();
  fds.held.clear();  // our copies of the capture write ends: the reads below reach EOF
  for (auto& [number, read_end] : fds.capture_reads) {
    if (fd_data != nullptr) {
      *fd_data += "fd " + std::to_string(number) + ": " + NormalizeDigits(ReadAll(read_end.get()));
      *fd_data += "\n";
    }
  }
  return result;
}

bool IsReport(const Scenario& scenario) {
  // The probe by absolute path, or by name through PATH (SetenvPathLookup).
  return scenario.command.size() == 2 &&
         (scenario.command[0] == kProbe || scenario.command[0] == "probe") &&
         scenario.command[1] == "report";
}

}  // namespace

const char* BackendName(Backend backend) {
  return backend == Backend::kNative ? "native" : "bwrap";
}

Args BackendPrefix(Backend backend) {
  const char* env =
      std::getenv(backend == Backend::kNative ? "SBX_PARITY_NATIVE" : "SBX_PARITY_BWRAP");
  if (env != nullptr && *env != '\0') return Words(env);
  std::string build = SBX_PARITY_BUILD_DIR;
  if (backend == Backend::kNative) return {build + "/compat/bwrap"};
  return {build + "/ateam-sandbox", "bwrap", "--backend", "bwrap"};
}

void PopulateFixture(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) fs::remove_all(entry.path(), ec);
  for (const char* sub : {"dir", "upper", "work", "lower1", "lower2"}) {
    fs::create_directory(dir + "/" + sub, ec);
    fs::permissions(dir + "/" + sub, fs::perms(0755), ec);
  }
  WriteFile(dir + "/dir/f", "fixture\n");
  WriteFile(dir + "/file", "file\n");
  WriteFile(dir + "/lower1/a", "a\n");
  WriteFile(dir + "/lower2/b", "b\n");
}

BackendResult RunBackend(const Scenario& scenario, Backend backend, const std::string& fixture) {
  PopulateFixture(fixture);
  BackendResult result;
  result.run = RunOnce(scenario, backend, fixture, scenario.command, &result.fd_data);
  result.out = IsReport(scenario) ? NormalizeReport(result.run.out, scenario.ignore_keys)
                                  : NormalizeUsage(result.run.out);
  result.err = NormalizeUsage(result.run.err);
  bool has_proc = scenario.profile == Profile::kTypical || scenario.profile == Profile::kNoDev;
  if (IsReport(scenario) && has_proc && (scenario.compare & kMounts) != 0 &&
      result.run.exit_code == 0) {
    PopulateFixture(fixture);
    RunResult mounts =
        RunOnce(scenario, backend, fixture, {"/usr/bin/cat", "/proc/self/mountinfo"}, nullptr);
    result.mounts = "exit=" + std::to_string(mounts.exit_code) + "\n" +
                    NormalizeMountinfo(mounts.out) + NormalizeUsage(mounts.err);
  }
  return result;
}

std::string NormalizeDigits(const std::string& text) {
  static const std::regex kDigits("[0-9]+");
  return std::regex_replace(text, kDigits, "N");
}

std::string NormalizeUsage(const std::string& text) {
  static const std::regex kUsage("(^|\n)usage: [^ ]+ ");
  return std::regex_replace(text, kUsage, "$1usage: <argv0> ");
}

}  // namespace sbx::integration::parity
