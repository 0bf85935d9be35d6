// Broker routes end to end: `run --allow HOST=ADDR:PORT,broker --broker-secret ...` with a
// local TLS stand-in for the API (agents/fake_anthropic.py, its certificate from a test CA
// given as --broker-ca). The stand-in must see the real key; the sandbox must hold it
// nowhere (environment, home, workspace, out dir, the memory of each of its processes); a
// request for another Host, or in a smuggling shape, must never reach the stand-in.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "integration/run/agents/agent_support.h"
#include "integration/run/run_support.h"

namespace sbx::integration::run {
namespace {

constexpr char kApiHost[] = "api.anthropic.com";
// Made up per test run below; never a real key.
std::string MakeKey() { return "sk-ant-sbx-brokered-" + std::to_string(::getpid()) + "-k3y"; }

constexpr const char* kClaudeQuiet[] = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
                                        "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1",
                                        "DISABLE_ERROR_REPORTING=1"};

size_t Count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// Every process below `root` (not `root` itself: run, the host relay, holds the secret by
// design), from /proc/*/stat.
std::vector<int> Descendants(int root) {
  std::vector<std::pair<int, int>> parents;  // pid, ppid
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit)) continue;
    std::string stat = ReadFile(entry.path().string() + "/stat").value_or("");
    size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 2));
    std::string state;
    int ppid = 0;
    rest >> state >> ppid;
    parents.emplace_back(std::stoi(name), ppid);
  }
  std::set<int> found = {root};
  for (bool grew = true; grew;) {
    grew = false;
    for (auto [pid, ppid] : parents) {
      if (found.count(ppid) != 0 && found.insert(pid).second) grew = true;
    }
  }
  found.erase(root);
  return {found.begin(), found.end()};
}

struct MemoryScan {
  int processes = 0;                 // whose memory could be read
  std::vector<std::string> holders;  // "PID (comm)" of each process that holds the needle
  std::string unreadable;
};

struct Region {
  unsigned long long start = 0;  // NOLINT(google-runtime-int): sscanf's %llx
  unsigned long long end = 0;    // NOLINT(google-runtime-int)
};

// The readable mappings of `pid` that hold any page (/proc/PID/smaps "Rss" above 0): a
// mapping never touched is all zeros and can hold nothing.
std::vector<Region> ResidentRegions(const std::string& dir) {
  std::vector<Region> regions;
  std::ifstream smaps(dir + "/smaps");
  Region current;
  bool readable = false;
  for (std::string line; std::getline(smaps, line);) {
    Region header;
    char perms[8] = {};
    if (std::sscanf(line.c_str(), "%llx-%llx %7s", &header.start, &header.end, perms) == 3) {
      current = header;
      readable = perms[0] == 'r' && line.find("[vvar") == std::string::npos;
      continue;
    }
    unsigned long long rss = 0;  // NOLINT(google-runtime-int)
    if (readable && std::sscanf(line.c_str(), "Rss: %llu kB", &rss) == 1 && rss > 0) {
      regions.push_back(current);
    }
  }
  return regions;
}

// Reads every resident readable mapping of each process through /proc/PID/mem and looks
// for `needle`.
MemoryScan ScanMemory(const std::vector<int>& pids, const std::string& needle) {
  MemoryScan scan;
  constexpr size_t kChunk = size_t{4} << 20;
  std::vector<char> buffer(needle.size() + kChunk);
  for (int pid : pids) {
    const std::string dir = "/proc/" + std::to_string(pid);
    int mem = ::open((dir + "/mem").c_str(), O_RDONLY | O_CLOEXEC);
    if (mem < 0) {
      scan.unreadable += " " + std::to_string(pid);
      continue;
    }
    ++scan.processes;
    bool holds = false;
    for (const Region& region : ResidentRegions(dir)) {
      size_t kept = 0;  // the last bytes of the previous chunk, for a needle across chunks
      for (auto at = region.start; !holds && at < region.end;) {
        const size_t want = static_cast<size_t>(std::min<unsigned long long>(  // NOLINT
            region.end - at, kChunk));
        ssize_t n = ::pread(mem, buffer.data() + kept, want, static_cast<off_t>(at));
        if (n <= 0) break;
        const size_t have = kept + static_cast<size_t>(n);
        holds = ::memmem(buffer.data(), have, needle.data(), needle.size()) != nullptr;
        kept = std::min(have, needle.size() - 1);
        std::memmove(buffer.data(), buffer.data() + have - kept, kept);
        at += static_cast<unsigned long long>(n);  // NOLINT(google-runtime-int)
      }
      if (holds) break;
    }
    ::close(mem);
    if (holds) {
      std::string comm = ReadFile(dir + "/comm").value_or("?\n");
      scan.holders.push_back(std::to_string(pid) + " (" + comm.substr(0, comm.size() - 1) + ")");
    }
  }
  return scan;
}

// Every file below `dir` whose content holds `needle`.
std::vector<std::string> FilesHolding(const std::string& dir, const std::string& needle) {
  std::vector<std::string> found;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    if (!it->is_regular_file(ec)) continue;
    if (ReadFile(it->path().string()).value_or("").find(needle) != std::string::npos) {
      found.push_back(it->path().string());
    }
  }
  return found;
}

class RunBrokerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string missing = MissingPrerequisite({"sh", "python3"});
    if (!missing.empty()) GTEST_SKIP() << missing;
    key_ = MakeKey();
    key_file_ = secrets_.Sub("api-key");
    WriteFile(key_file_, key_ + "\n");
    ::chmod(key_file_.c_str(), 0600);
    ledger_ = state_.Sub("ledger.jsonl");
    HandToSandboxUser(work_.path());
    HandToSandboxUser(out_.path());
  }
  Args BrokerOptions(const FakeAnthropic& api, const std::string& header = "x-api-key") {
    return {"--workspace",
            work_.path(),
            "--out",
            out_.path(),
            "--ledger",
            ledger_,
            "--allow",
            std::string(kApiHost) + "=127.0.0.1:" + std::to_string(api.port()) + ",broker",
            "--broker-secret",
            std::string(kApiHost) + ":" + header + "=@" + key_file_,
            "--broker-ca",
            api.ca_path()};
  }
  std::string Ledger() { return ReadFile(ledger_).value_or(""); }

  TempDir work_, out_, state_, secrets_;
  std::string key_, key_file_, ledger_;
};

// The request shapes the relay must refuse, sent raw from inside by python3, one connection
// each, then one good request: only that one may reach the stand-in.
constexpr char kHostileClient[] = R"PY(
import socket, sys
def send(data):
    s = socket.create_connection(("api.anthropic.com", 80))
    s.sendall(data)
    s.shutdown(socket.SHUT_WR)
    answer = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        answer += b
    s.close()
    print("answer:", answer.split(b"\r\n", 1)[0].decode(errors="replace"))
H = b"Host: api.anthropic.com\r\n"
send(b"GET /wrong HTTP/1.1\r\nHost: evil.example\r\n\r\n")
send(b"GET /twohosts HTTP/1.1\r\n" + H + H + b"\r\n")
send(b"POST /clte HTTP/1.1\r\n" + H + b"Content-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\n" + H + b"\r\n")
send(b"GET /fold HTTP/1.1\r\n" + H + b"X-A: 1\r\n Transfer-Encoding: chunked\r\n\r\n")
send(b"GET /barelf HTTP/1.1\n" + H.replace(b"\r\n", b"\n") + b"\n")
send(b"GET /spacecolon HTTP/1.1\r\n" + H + b"Transfer-Encoding : chunked\r\n\r\n")
send(b"GET /big HTTP/1.1\r\n" + H + b"X-Big: " + b"a" * 20000 + b"\r\n\r\n")
send(b"GET /ok HTTP/1.1\r\n" + H + b"x-api-key: placeholder\r\n\r\nGET /pipelined-evil HTTP/1.1\r\nHost: evil.example\r\n\r\n")
)PY";

TEST_F(RunBrokerTest, OtherHostsAndSmugglingShapesNeverReachTheUpstream) {
  FakeAnthropic api;
  ASSERT_TRUE(api.ok()) << api.failure();
  RunResult res = RunAteam(BrokerOptions(api), {"python3", "-c", kHostileClient},
                           WithTimeout(std::chrono::seconds(60)));
  ASSERT_EQ(res.exit_code, 0) << Describe(res);
  const std::string log = api.Log();
  // Exactly one request got through: the good one, with the real key.
  EXPECT_EQ(Count(log, "request "), 1U) << log;
  EXPECT_NE(log.find("method=GET path=/ok bytes=0 host=api.anthropic.com key=" + key_),
            std::string::npos)
      << log;
  EXPECT_EQ(Count(res.out, "answer: HTTP/1.1 421"), 2U) << res.out;
  EXPECT_EQ(Count(res.out, "answer: HTTP/1.1 400"), 4U) << res.out;
  EXPECT_EQ(Count(res.out, "answer: HTTP/1.1 431"), 1U) << res.out;
  const std::string ledger = Ledger();
  for (const char* path :
       {"/wrong", "/twohosts", "/clte", "/spacecolon", "/big", "/pipelined-evil"}) {
    EXPECT_NE(ledger.find(std::string("\"path\":\"") + path + "\""), std::string::npos)
        << path << "\n"
        << ledger;
  }
  EXPECT_EQ(Count(ledger, "\"end\":\"request-refused\""), 8U) << ledger;
  EXPECT_EQ(Count(ledger, "\"end\":\"answered\""), 1U) << ledger;
  EXPECT_EQ(ledger.find(key_), std::string::npos) << ledger;
  EXPECT_EQ(ledger.find("placeholder"), std::string::npos) << ledger;
}

TEST_F(RunBrokerTest, TheSecretIsInNoDryRunStatusOrMessage) {
  FakeAnthropic api;
  ASSERT_TRUE(api.ok()) << api.failure();
  Args dry = BrokerOptions(api);
  dry.push_back("--dry-run");
  RunResult plan = RunAteam(dry, {"true"});
  ASSERT_EQ(plan.exit_code, 0) << Describe(plan);
  EXPECT_NE(plan.out.find("route: api.anthropic.com:443 broker at 127.77.0.2"), std::string::npos)
      << plan.out;
  EXPECT_EQ((plan.out + plan.err).find(key_), std::string::npos) << Describe(plan);
  Args run = BrokerOptions(api);
  const std::string status = state_.Sub("status.json");
  run.insert(run.end(), {"--status-json", status});
  RunResult res = RunAteam(run, {"sh", "-c", "exit 3"});
  EXPECT_EQ(res.exit_code, 3) << Describe(res);
  EXPECT_NE(ReadFile(status).value_or("").find(R"("kind": "broker")"), std::string::npos);
  EXPECT_EQ(ReadFile(status).value_or("").find(key_), std::string::npos);
  EXPECT_EQ((res.out + res.err).find(key_), std::string::npos) << Describe(res);
  // A secret for a host that is no broker route is refused, without the secret in the words.
  Args wrong = BrokerOptions(api);
  wrong.insert(wrong.end(), {"--broker-secret", "other.example:x-api-key=@" + key_file_});
  RunResult refused = RunAteam(wrong, {"true"});
  EXPECT_EQ(refused.exit_code, 125) << Describe(refused);
  EXPECT_EQ((refused.out + refused.err).find(key_), std::string::npos) << Describe(refused);
}

TEST_F(RunBrokerTest, AnUpstreamWithoutTheTrustedCaIsNeverSentTheRequest) {
  FakeAnthropic api;
  ASSERT_TRUE(api.ok()) << api.failure();
  FakeAnthropic other;  // its own CA: not the one given as --broker-ca
  ASSERT_TRUE(other.ok()) << other.failure();
  Args options = BrokerOptions(api);
  options[7] = std::string(kApiHost) + "=127.0.0.1:" + std::to_string(other.port()) + ",broker";
  constexpr char kGet[] =
      "import urllib.request, urllib.error\n"
      "try:\n"
      "    print('status=%d' % "
      "urllib.request.urlopen('http://api.anthropic.com/v1/models').status)\n"
      "except urllib.error.HTTPError as e:\n"
      "    print('status=%d' % e.code)\n";
  RunResult res = RunAteam(options, {"python3", "-c", kGet}, WithTimeout(std::chrono::seconds(60)));
  EXPECT_EQ(res.exit_code, 0) << Describe(res);
  EXPECT_NE(res.out.find("status=502"), std::string::npos) << Describe(res);
  EXPECT_EQ(Count(other.Log(), "request "), 0U) << other.Log();
  EXPECT_NE(Ledger().find("\"end\":\"upstream-tls\""), std::string::npos) << Ledger();
}

// The done-when test: the real claude binary, no key inside, the real key at the stand-in.
TEST_F(RunBrokerTest, ClaudePromptThroughABrokerRouteHoldsNoKeyInside) {
  const std::string unavailable = AgentsUnavailableReason();
  if (!unavailable.empty()) {
    GTEST_SKIP() << "\n*** AGENT TEST NOT RUN: " << unavailable << " ***\n";
  }
  FakeAnthropic api(/*hold=*/true);
  ASSERT_TRUE(api.ok()) << api.failure();
  Args options = BrokerOptions(api);
  options.insert(options.end(), {"--agent", "claude", "--timeout", "150"});
  // The preset's sign-in host, unused with a key: pointed at a closed local port.
  ClosedPort closed;
  options.insert(options.end(),
                 {"--allow", "platform.claude.com=127.0.0.1:" + std::to_string(closed.port())});
  for (const char* setting : kClaudeQuiet) options.insert(options.end(), {"--setenv", setting});
  // After claude: what the agent could have kept, copied where the host can read it.
  const std::string wrapper =
      "claude -p hello > \"$ATEAM_OUT/claude.out\" 2>&1; echo \"claude_rc: $?\";"
      " cat /proc/[0-9]*/environ > \"$ATEAM_OUT/environ.copy\" 2>/dev/null;"
      " cp -r \"$HOME\" \"$ATEAM_OUT/home.copy\" 2>/dev/null;"
      " env | grep -E '^(ANTHROPIC|CLAUDE_CODE_OAUTH)' | sed 's/^/env: /'; exit 0";
  const char* path = std::getenv("PATH");
  RunOptions host;
  host.extra_env = {"PATH=" + AgentsBinDir() + ":" + (path != nullptr ? path : "/usr/bin")};
  Process run = Process::Start(RunArgv(options, {"sh", "-c", wrapper}), host);
  // The request has reached the stand-in and its answer is held: claude is waiting, with
  // everything it sent still in its memory. Look at every sandbox process now.
  const bool requested = api.WaitForLog("method=POST path=/v1/messages", std::chrono::seconds(120));
  MemoryScan scan;
  MemoryScan control;  // the stand-in, which received the key: the scan must find it there
  if (requested) {
    scan = ScanMemory(Descendants(run.pid()), key_);
    control = ScanMemory({api.pid()}, key_);
  }
  api.Release();
  RunResult res = run.Wait(std::chrono::seconds(150));
  const std::string log = api.Log();
  ASSERT_TRUE(requested) << "claude's request never reached the stand-in\n"
                         << Describe(res) << "\nlog:\n"
                         << log;
  EXPECT_EQ(res.exit_code, 0) << Describe(res);
  EXPECT_NE(res.out.find("claude_rc: 0"), std::string::npos) << Describe(res);
  EXPECT_NE(ReadFile(out_.Sub("claude.out")).value_or("").find(kFakeReply), std::string::npos)
      << ReadFile(out_.Sub("claude.out")).value_or("") << "\n"
      << log;
  // The stand-in saw the real key, on every request, over TLS with the route's name.
  EXPECT_NE(log.find("request sni=api.anthropic.com method=POST path=/v1/messages"),
            std::string::npos)
      << log;
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);) {
    EXPECT_NE(line.find(" key=" + key_ + " "), std::string::npos) << line;
  }
  // Inside, the agent had only the placeholder and the route.
  EXPECT_NE(res.out.find("env: ANTHROPIC_BASE_URL=http://api.anthropic.com"), std::string::npos)
      << res.out;
  EXPECT_NE(res.out.find("env: ANTHROPIC_API_KEY=ateam-brokered-no-real-key"), std::string::npos)
      << res.out;
  // Processes: at least the supervisor, the wrapper and claude; none holds the key.
  EXPECT_GE(scan.processes, 3) << "unreadable:" << scan.unreadable;
  EXPECT_TRUE(scan.holders.empty()) << "the key is in the memory of: " << scan.holders.front();
  EXPECT_EQ(control.holders.size(), 1U) << "the scan missed the key where it is";
  // Files: the workspace, the out dir (with the environment of every process and the home).
  EXPECT_NE(ReadFile(out_.Sub("environ.copy")).value_or("").find("ateam-brokered-no-real-key"),
            std::string::npos);
  EXPECT_EQ(FilesHolding(out_.path(), key_), std::vector<std::string>{});
  EXPECT_EQ(FilesHolding(work_.path(), key_), std::vector<std::string>{});
  EXPECT_EQ(Ledger().find(key_), std::string::npos);
  EXPECT_NE(Ledger().find("\"method\":\"POST\",\"path\":\"/v1/messages\",\"status\":200"),
            std::string::npos)
      << Ledger();
}

}  // namespace
}  // namespace sbx::integration::run
