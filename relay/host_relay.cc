#include "relay/host_relay.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <set>

namespace sbx::relay {

std::string RouteSocketName(int index) { return "route-" + std::to_string(index) + ".sock"; }

DialPolicy DialPolicyFor(RouteKind kind) {
  switch (kind) {
    case RouteKind::kTls:
      return DialPolicy::kAfterClientHello;
    case RouteKind::kTcp:
      return DialPolicy::kAtAccept;
    case RouteKind::kBroker:
      return DialPolicy::kOnFirstByte;  // unused: BrokerConnection dials on a checked request
  }
  return DialPolicy::kAfterClientHello;
}

base::Result<std::unique_ptr<HostRelay>> HostRelay::Create(EventLoop* loop,
                                                           HostRelayOptions options) {
  // Resolve every route before creating anything, so a refused name leaves nothing behind.
  std::set<int> indexes;
  std::vector<SocketAddress> upstreams;
  for (const Route& route : options.routes) {
    if (route.index < 0 || !indexes.insert(route.index).second) {
      return base::Error(EINVAL, "Invalid or duplicate route index for", route.host);
    }
    auto upstream = ResolveUpstream(route);
    if (!upstream) return upstream.error();
    upstreams.push_back(*upstream);
  }
  const bool any_broker = std::any_of(options.routes.begin(), options.routes.end(),
                                      [](const Route& r) { return r.kind == RouteKind::kBroker; });
  for (const BrokerCredential& credential : options.broker_secrets) {
    auto route = std::find_if(options.routes.begin(), options.routes.end(), [&](const Route& r) {
      return r.host == credential.host && r.kind == RouteKind::kBroker;
    });
    if (route == options.routes.end()) {
      return base::Error(EINVAL, "A brokered secret names no broker route", credential.host);
    }
  }
  std::unique_ptr<HostRelay> host(new HostRelay(loop));
  if (any_broker) {
    auto ctx = MakeBrokerTlsContext(options.broker_ca_pem);
    if (!ctx) return ctx.error();
    host->broker_tls_ = std::move(*ctx);
    host->broker_secrets_ = std::move(options.broker_secrets);
  }
  if (!options.ledger_path.empty()) {
    auto ledger = Ledger::Open(options.ledger_path);
    if (!ledger) return ledger.error();
    host->ledger_.emplace(std::move(*ledger));
  }
  host->routes_.reserve(options.routes.size());  // Record() callbacks index into it
  for (size_t i = 0; i < options.routes.size(); ++i) {
    // On failure `host` is destroyed, which unlinks the sockets made so far.
    if (auto added = host->AddRoute(options, options.routes[i], upstreams[i]); !added) {
      return added.error();
    }
  }
  return host;
}

base::Status HostRelay::AddRoute(const HostRelayOptions& options, const Route& route,
                                 const SocketAddress& upstream) {
  auto endpoint = Endpoint::Unix(options.state_dir + "/" + RouteSocketName(route.index));
  if (!endpoint) return endpoint.error();
  ListenOptions listen;
  listen.unix_mode = 0600;
  listen.unix_owner = options.socket_owner;
  auto listener = endpoint->Listen(listen);
  if (!listener) {
    // A socket file bind created before chmod/chown/listen failed is still ours to remove.
    if (listener.error().err() != EADDRINUSE) ::unlink(endpoint->unix_path().c_str());
    return listener.error();
  }
  size_t slot = routes_.size();
  routes_.push_back(RouteRelay{route, endpoint->unix_path(), upstream, nullptr, nullptr});
  RelayOptions relay_options{Endpoint::Tcp(upstream),
                             options.limits,
                             [this, slot](const ConnectionRecord& record) { Record(slot, record); },
                             /*handoff=*/true,
                             DialPolicyFor(route.kind),
                             route.host,
                             options.channel_gate,
                             {}};
  if (route.kind == RouteKind::kBroker) {
    auto broker = std::make_unique<BrokerRoute>();
    broker->host = route.host;
    for (const BrokerCredential& credential : broker_secrets_) {
      if (credential.host != route.host) continue;
      broker->header = credential.header;
      broker->secret = &credential.secret;
    }
    broker->tls = broker_tls_.get();
    broker->target = Endpoint::Tcp(upstream);
    broker->limits = options.limits;
    broker->on_record = [this, slot](const ConnectionRecord& record) { Record(slot, record); };
    const BrokerRoute* shared = broker.get();
    EventLoop* loop = loop_;
    relay_options.make_connection = [loop, shared](base::UniqueFd fd, ConnectionOwner* owner) {
      return std::unique_ptr<RelayedConnection>(
          BrokerConnection::Make(loop, shared, std::move(fd), owner));
    };
    routes_.back().broker = std::move(broker);
  }
  auto relay = Relay::Create(loop_, std::move(*listener), std::move(relay_options));
  if (!relay) return relay.error();
  routes_.back().relay = std::move(*relay);
  return {};
}

void HostRelay::Record(size_t route_slot, const ConnectionRecord& record) {
  if (!ledger_) return;
  const RouteRelay& route = routes_[route_slot];
  LedgerEntry entry{route.route.index, route.route.host, route.upstream.ToString(), record};
  for (const LedgerEntry& line : throttle_.Admit(entry)) Write(line);
}

void HostRelay::Write(const LedgerEntry& line) {
  if (auto written = ledger_->Append(line); !written && ledger_status_) ledger_status_ = written;
}

HostRelay::~HostRelay() {
  // Relays first: closing their connections still writes "shutdown" lines to the ledger.
  for (RouteRelay& route : routes_) route.relay.reset();
  if (ledger_) {
    for (const LedgerEntry& line : throttle_.Flush()) Write(line);
  }
  for (const RouteRelay& route : routes_) ::unlink(route.socket_path.c_str());
}

}  // namespace sbx::relay
