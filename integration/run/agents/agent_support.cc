#include "integration/run/agents/agent_support.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iterator>
#include <thread>

namespace sbx::integration::run {
namespace {

// Debian's interpreter, not whatever `python3` a developer's PATH finds first: the
// unprivileged tier of the matrix runs with another user's PATH.
constexpr char kPython[] = "/usr/bin/python3";

}  // namespace

std::string AgentsBinDir() {
  const char* dir = std::getenv("SBX_AGENTS_DIR");
  if (dir == nullptr || *dir == '\0') return "";
  return std::string(dir) + "/node_modules/.bin";
}

std::string AgentsUnavailableReason() {
  std::string bin = AgentsBinDir();
  if (bin.empty()) {
    return "SBX_AGENTS_DIR is not set: install the real agents with "
           "scripts/install-agents.sh DIR and run with SBX_AGENTS_DIR=DIR";
  }
  for (const char* agent : {"claude", "opencode"}) {
    std::string path = bin + "/" + agent;
    if (access(path.c_str(), X_OK) != 0) {
      return path +
             " is missing or not executable by this user: scripts/install-agents.sh "
             "did not install the agents (npm registry unreachable? see its SKIP line)";
    }
  }
  if (access(kPython, X_OK) != 0) {
    return std::string(kPython) + " is missing (scripts/install-deps.sh installs python3)";
  }
  if (RunCommand({"sh", "-c", "command -v openssl"}).exit_code != 0) {
    return "openssl is not installed (scripts/install-deps.sh)";
  }
  return "";
}

bool MakeTestCertificates(const TempDir& dir, const std::vector<std::string>& hosts) {
  const std::string& host = hosts.front();
  std::string names;
  for (const std::string& name : hosts) names += (names.empty() ? "DNS:" : ",DNS:") + name;
  std::string script =
      "set -e; cd " + dir.path() +
      "\nopenssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 "
      "-subj /CN=sbx-agent-test-ca 2>/dev/null"
      "\nopenssl req -newkey rsa:2048 -nodes -keyout srv.key -out srv.csr -subj /CN=" +
      host +
      " 2>/dev/null"
      "\nprintf 'subjectAltName=" +
      names +
      "\\n' > ext"
      "\nopenssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out srv.pem "
      "-days 2 -extfile ext 2>/dev/null\nchmod a+r *\n";
  return RunCommand({"sh", "-c", script}).exit_code == 0;
}

FakeAnthropic::FakeAnthropic(bool hold) {
  if (!MakeTestCertificates(dir_, std::vector<std::string>(std::begin(kFakeAnthropicHosts),
                                                           std::end(kFakeAnthropicHosts)))) {
    failure_ = "could not make the test certificates with openssl";
    return;
  }
  WriteFile(dir_.Sub("fake_anthropic.py"), kFakeAnthropicScript);
  WriteFile(dir_.Sub("requests.log"), "");
  Args argv = {kPython, dir_.Sub("fake_anthropic.py"), dir_.Sub("srv.pem"), dir_.Sub("srv.key"),
               dir_.Sub("requests.log")};
  if (hold) argv.push_back(dir_.Sub("release"));
  server_.emplace(Process::Start(argv));
  // The script prints exactly one line, "LISTENING <port>", once it accepts connections.
  if (!server_->WaitForOutput("\n", std::chrono::seconds(20))) {
    failure_ = "the fake server did not start; it printed: " + server_->out();
    return;
  }
  const std::string& out = server_->out();
  if (out.rfind("LISTENING ", 0) != 0) {
    failure_ = "unexpected output from the fake server: " + out;
    return;
  }
  port_ = std::atoi(out.c_str() + 10);
}

void FakeAnthropic::Release() const { WriteFile(dir_.Sub("release"), ""); }

bool FakeAnthropic::WaitForLog(const std::string& needle, std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (Log().find(needle) == std::string::npos) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return true;
}

std::string FakeAnthropic::Log() const { return ReadFile(dir_.Sub("requests.log")).value_or(""); }

}  // namespace sbx::integration::run
