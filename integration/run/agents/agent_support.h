// Support for run_test's agent tests (agents_test.cc): where scripts/install-agents.sh put
// the real agents, and a fake api.anthropic.com for them to talk to. Test code: setup
// failures abort.
//
// $SBX_AGENTS_DIR: the npm prefix the agents were installed into; the binaries are
// $SBX_AGENTS_DIR/node_modules/.bin/{claude,opencode}.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "integration/harness.h"

namespace sbx::integration::run {

// agents/fake_anthropic.py, compiled in (generated from agents/fake_anthropic_script.cc.in).
extern const char kFakeAnthropicScript[];
// The text every /v1/messages answer of the fake carries (REPLY_TEXT in the script).
inline constexpr char kFakeReply[] = "sbx-fake-reply: hello from the fake api.anthropic.com";

// $SBX_AGENTS_DIR/node_modules/.bin ("" when the variable is unset).
std::string AgentsBinDir();

// Why the agent tests cannot run for this caller, or "" when they can. Worded to be seen in
// a skip message: it names the variable or the install step that is missing.
std::string AgentsUnavailableReason();

// A test CA (ca.pem) and a certificate for `hosts` signed by it (srv.pem, srv.key) in `dir`,
// made with the openssl CLI and readable by everyone (the sandbox may run as another uid).
bool MakeTestCertificates(const TempDir& dir, const std::vector<std::string>& hosts);

// The hosts the fake answers for: Claude Code's API and its sign-in host.
inline constexpr const char* kFakeAnthropicHosts[] = {"api.anthropic.com", "platform.claude.com"};

// HTTPS on 127.0.0.1 (python3 running kFakeAnthropicScript) with a certificate for
// kFakeAnthropicHosts from its own test CA. Every request and failed handshake is one line of
// Log(): "request sni=SNI method=METHOD path=PATH bytes=N". The destructor stops it.
class FakeAnthropic {
 public:
  // `hold`: each POST /v1/messages is answered only after Release().
  explicit FakeAnthropic(bool hold = false);
  FakeAnthropic(const FakeAnthropic&) = delete;
  FakeAnthropic& operator=(const FakeAnthropic&) = delete;

  // Whether the server is listening; when not, why (for an assertion message).
  [[nodiscard]] bool ok() const { return port_ > 0; }
  [[nodiscard]] const std::string& failure() const { return failure_; }
  [[nodiscard]] int port() const { return port_; }
  [[nodiscard]] pid_t pid() const { return server_ ? server_->pid() : -1; }
  // The CA certificate file to trust (NODE_EXTRA_CA_CERTS), world-readable.
  [[nodiscard]] std::string ca_path() const { return dir_.Sub("ca.pem"); }
  [[nodiscard]] std::string Log() const;
  // Lets held answers go (and every later one at once).
  void Release() const;
  // Waits up to `timeout` for Log() to contain `needle`.
  [[nodiscard]] bool WaitForLog(const std::string& needle, std::chrono::milliseconds timeout) const;

 private:
  TempDir dir_;
  std::optional<Process> server_;
  int port_ = 0;
  std::string failure_;
};

}  // namespace sbx::integration::run
