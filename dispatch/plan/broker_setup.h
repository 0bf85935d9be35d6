// The host side's part in broker routes (docs/tunnel.md): `--broker-secret` and
// `--broker-ca` parsed and loaded, and what an agent preset gets instead of its key.
//
//   --broker-secret HOST:HEADER=@FILE   the secret is FILE's content (one trailing newline
//                                       dropped), read as --credentials files are read
//   --broker-secret HOST:HEADER=$NAME   the secret is run's own environment variable NAME,
//                                       which then never reaches the sandbox
//   --broker-ca FILE                    PEM certificates the broker routes trust instead of
//                                       the host's CA store
// HOST must be a `--allow HOST,broker` route, named by at most one --broker-secret.
// The secret is copied straight into locked, non-dumpable memory (relay/broker_memory.h);
// nothing here prints it, and `run` makes itself non-dumpable while a broker route exists.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "dispatch/request/request.h"
#include "relay/host_relay.h"
#include "relay/upstream.h"

namespace sbx::dispatch {

struct BrokerSecretSpec {
  std::string host;    // lower case
  std::string header;  // an HTTP token
  bool from_file = false;
  std::string source;  // FILE (absolute after CheckRequestPaths) or NAME
};

// Parses one --broker-secret value; pure.
base::Result<BrokerSecretSpec> ParseBrokerSecret(std::string_view text);

// The value an agent preset's key variable gets on a brokered route: it opens nothing
// anywhere (the relay replaces the header that carries it).
inline constexpr char kBrokerPlaceholder[] = "ateam-brokered-no-real-key";

// Checks every --broker-secret against `routes` and loads the secrets (files as the caller
// reads them, with a root caller's stricter checks when `root_caller`; variables from
// `host_env`).
base::Result<std::vector<relay::BrokerCredential>> LoadBrokerSecrets(
    const DispatchRequest& request, const std::vector<relay::Route>& routes,
    const std::vector<std::string>& host_env, bool root_caller);

// The PEM text of --broker-ca, or nullopt without it.
base::Result<std::optional<std::string>> LoadBrokerCa(const DispatchRequest& request,
                                                      bool root_caller);

// Fills the broker part of `options` (LoadBrokerSecrets, LoadBrokerCa); with any broker
// route, first makes this process non-dumpable (PR_SET_DUMPABLE 0) for the rest of its
// life: no core dump, no ptrace and no /proc/PID/mem of it by the caller's other processes.
base::Status AddBrokerOptions(const DispatchRequest& request,
                              const std::vector<relay::Route>& routes,
                              const std::vector<std::string>& host_env, bool root_caller,
                              relay::HostRelayOptions& options);

// While it lives, a process made non-dumpable for a broker route is dumpable again, and
// back to non-dumpable after (a no-op for a dumpable process). For the native backend's
// clone: the child inherits the flag, the kernel gives a non-dumpable process's /proc
// files to root, and an unprivileged run must write the child's uid_map. The child never
// holds the secret (MADV_WIPEONFORK) and execs; the window is the clone alone.
class DumpableWhileCloning {
 public:
  DumpableWhileCloning();
  ~DumpableWhileCloning();
  DumpableWhileCloning(const DumpableWhileCloning&) = delete;
  DumpableWhileCloning& operator=(const DumpableWhileCloning&) = delete;

 private:
  bool restore_ = false;
};

// Whether any route is a broker route.
bool HasBrokerRoute(const std::vector<relay::Route>& routes);

// The preset's part: with a secret for the preset's endpoint, the agent is pointed at
// http://HOST and its key variable is a placeholder. `names` are the host variables to pass
// through (the preset's key variables, and every $NAME a secret comes from, are taken out);
// `env` gets the preset's settings. Fails when --env names a secret's variable.
base::Status ApplyBrokerEnvironment(const DispatchRequest& request, AgentPreset preset,
                                    std::vector<std::string>& names, std::vector<std::string>& env);

}  // namespace sbx::dispatch
