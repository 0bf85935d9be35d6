// HostRelay: the host side of one dispatch's network tunnel. One Relay per route, all on the
// caller's single EventLoop:
//   <state dir>/route-N.sock  (Unix, accepted)  ->  the route's pinned upstream (TCP)
//
// The socket files are mode 0600 and owned by the caller, or by `socket_owner` when set (a
// root caller whose sandbox runs under another uid). That is enough: the sandbox reaches a
// socket through a bind mount of the file itself, so only the file's own mode is checked, not
// the 0700 state directory above it, and in the unprivileged case the sandbox's uid maps to
// the caller's. Nobody else on the host can reach them through the private directory.
//
// Upstreams are resolved once, in Create(), before any socket exists (see upstream.h); a
// route that fails to resolve or resolves to a refused address fails the whole Create().
// A route's kind says when its connections dial (DialPolicyFor): a tls route after a
// ClientHello whose SNI is the route's host, a tcp route as soon as the agent connects.
// Each connection that dialled an upstream is appended to the ledger file; refused, shed
// and ClientHello-refused ones are too, up to a burst per second and route, the rest summed
// up (ledger_throttle.h); a connect-and-close on a tls route is neither dialled nor
// recorded, on a tcp route it is both.
//
// Typical use by the dispatch process, single-threaded (the sandbox is cloned from it):
//   auto dir = StateDir::Create({getenv("XDG_RUNTIME_DIR") ?: "", "/tmp", geteuid()});
//   auto loop = EventLoop::Create();
//   auto tunnel = HostRelay::Create(loop->get(), {dir->path(), routes, limits, ledger_path});
//   ... clone the sandbox with the sockets bind-mounted, get its pidfd ...
//   (*loop)->WatchCallback(pidfd, EPOLLIN, [&](uint32_t) { (*loop)->Stop(); });
//   (*loop)->Run();
//   tunnel->reset();  // open connections recorded as "shutdown", sockets unlinked
// Contract: the loop outlives the HostRelay, which is destroyed outside the loop's callbacks.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "relay/broker_connection.h"
#include "relay/broker_memory.h"
#include "relay/broker_tls.h"
#include "relay/event_loop.h"
#include "relay/ledger.h"
#include "relay/ledger_throttle.h"
#include "relay/limits.h"
#include "relay/relay.h"
#include "relay/upstream.h"

namespace sbx::relay {

// A broker route's secret: which header of the requests to `host` it goes into.
struct BrokerCredential {
  std::string host;  // a broker route's host, as in Route::host
  std::string header;
  BrokerSecret secret;
};

struct HostRelayOptions {
  std::string state_dir;  // an existing private directory: StateDir::path()
  std::vector<Route> routes;
  Limits limits;                           // per route
  std::string ledger_path;                 // empty: no ledger
  std::optional<uid_t> socket_owner;       // chown the sockets to this uid
  const PeerGate* channel_gate = nullptr;  // who may hand over a route's listener
  // Broker routes: at most one secret per route, and the CA certificates (PEM text) to
  // trust instead of the host's store.
  std::vector<BrokerCredential> broker_secrets;
  std::optional<std::string> broker_ca_pem;
};

// "route-N.sock": the socket of route N, on both sides of the tunnel.
std::string RouteSocketName(int index);

// When a route's connections dial: tls routes after a ClientHello naming the route's host,
// tcp routes at once (RouteKind). Broker routes make BrokerConnections instead.
DialPolicy DialPolicyFor(RouteKind kind);

class HostRelay {
 public:
  struct RouteRelay {
    Route route;
    std::string socket_path;
    SocketAddress upstream;  // pinned
    std::unique_ptr<Relay> relay;
    std::unique_ptr<BrokerRoute> broker;  // broker routes only
  };

  static base::Result<std::unique_ptr<HostRelay>> Create(EventLoop* loop, HostRelayOptions options);
  // Closes every relay (open connections recorded as "shutdown") and unlinks the sockets.
  ~HostRelay();
  HostRelay(const HostRelay&) = delete;
  HostRelay& operator=(const HostRelay&) = delete;

  [[nodiscard]] const std::vector<RouteRelay>& routes() const { return routes_; }
  // The first failed ledger write, if any (the relays keep running without it).
  [[nodiscard]] const base::Status& ledger_status() const { return ledger_status_; }

 private:
  explicit HostRelay(EventLoop* loop) : loop_(loop) {}
  base::Status AddRoute(const HostRelayOptions& options, const Route& route,
                        const SocketAddress& upstream);
  void Record(size_t route_slot, const ConnectionRecord& record);
  void Write(const LedgerEntry& line);

  EventLoop* loop_;
  std::optional<Ledger> ledger_;
  LedgerThrottle throttle_;
  base::Status ledger_status_;
  SslCtxPtr broker_tls_;
  std::vector<BrokerCredential> broker_secrets_;
  std::vector<RouteRelay> routes_;  // last: its relays go before what they point at
};

}  // namespace sbx::relay
