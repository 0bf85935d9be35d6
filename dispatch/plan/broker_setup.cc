#include "dispatch/plan/broker_setup.h"

#include <fmt/format.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "dispatch/request/credentials_file.h"
#include "netns/hosts.h"

namespace sbx::dispatch {

namespace {

bool IsTokenChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::strchr("!#$%&'*+-.^_`|~", c) != nullptr;
}

bool IsEnvName(std::string_view name) {
  if (name.empty() || (name.front() >= '0' && name.front() <= '9')) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

bool EqualsIgnoringCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// Copies `value` into a BrokerSecret and wipes `value`.
base::Result<relay::BrokerSecret> TakeSecret(std::string& value, const std::string& flag_value) {
  if (value.ends_with('\n')) value.pop_back();
  if (value.ends_with('\r')) value.pop_back();
  auto secret = relay::BrokerSecret::Make(value);
  ::explicit_bzero(value.data(), value.size());
  if (!secret) {
    return secret.error().WithContext("--broker-secret " + flag_value);
  }
  return secret;
}

}  // namespace

base::Result<BrokerSecretSpec> ParseBrokerSecret(std::string_view text) {
  auto refuse = [&](std::string_view why) {
    return base::Error::Message(
        fmt::format("--broker-secret {}: {} (HOST:HEADER=@FILE or HOST:HEADER=$NAME)", text, why));
  };
  const size_t colon = text.find(':');
  const size_t eq = text.find('=');
  if (colon == std::string_view::npos || eq == std::string_view::npos || eq < colon) {
    return refuse("no HOST:HEADER=");
  }
  BrokerSecretSpec spec;
  auto host = netns::NormalizeHostname(std::string(text.substr(0, colon)));
  if (!host) return refuse("not a host name");
  spec.host = std::move(*host);
  spec.header = std::string(text.substr(colon + 1, eq - colon - 1));
  if (spec.header.empty() || !std::all_of(spec.header.begin(), spec.header.end(), IsTokenChar)) {
    return refuse("HEADER is not a header name");
  }
  static constexpr std::string_view kFixed[] = {
      "host", "content-length", "transfer-encoding", "connection", "upgrade", "te", "trailer"};
  for (std::string_view fixed : kFixed) {
    if (EqualsIgnoringCase(spec.header, fixed)) return refuse("the relay writes that header");
  }
  std::string_view source = text.substr(eq + 1);
  if (source.starts_with('@') && source.size() > 1) {
    spec.from_file = true;
    spec.source = std::string(source.substr(1));
  } else if (source.starts_with('$') && IsEnvName(source.substr(1))) {
    spec.source = std::string(source.substr(1));
  } else {
    return refuse("the value must be @FILE or $NAME, never the secret itself");
  }
  return spec;
}

DumpableWhileCloning::DumpableWhileCloning() : restore_(::prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 0) {
  if (restore_) ::prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
}

DumpableWhileCloning::~DumpableWhileCloning() {
  if (restore_) ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

bool HasBrokerRoute(const std::vector<relay::Route>& routes) {
  return std::any_of(routes.begin(), routes.end(),
                     [](const relay::Route& r) { return r.kind == relay::RouteKind::kBroker; });
}

base::Result<std::vector<relay::BrokerCredential>> LoadBrokerSecrets(
    const DispatchRequest& request, const std::vector<relay::Route>& routes,
    const std::vector<std::string>& host_env, bool root_caller) {
  std::vector<relay::BrokerCredential> credentials;
  for (const std::string& text : request.broker_secrets) {
    auto spec = ParseBrokerSecret(text);
    if (!spec) return spec.error();
    const bool routed = std::any_of(routes.begin(), routes.end(), [&](const relay::Route& r) {
      return r.host == spec->host && r.kind == relay::RouteKind::kBroker;
    });
    if (!routed) {
      return base::Error::Message(
          fmt::format("--broker-secret {}: {} is not a broker route (--allow {},broker)", text,
                      spec->host, spec->host));
    }
    if (std::any_of(credentials.begin(), credentials.end(),
                    [&](const relay::BrokerCredential& c) { return c.host == spec->host; })) {
      return base::Error::Message(
          fmt::format("--broker-secret {}: {} has a secret already", text, spec->host));
    }
    std::string value;
    if (spec->from_file) {
      if (!spec->source.starts_with('/')) {
        return base::Error::Message(
            fmt::format("--broker-secret {}: give the file by an absolute path", text));
      }
      auto content = ReadCredentialsFile(spec->source, text, root_caller, "--broker-secret");
      if (!content) return content.error();
      value = std::move(*content);
    } else {
      const std::string prefix = spec->source + "=";
      auto entry = std::find_if(host_env.begin(), host_env.end(),
                                [&](const std::string& e) { return e.starts_with(prefix); });
      if (entry == host_env.end()) {
        return base::Error::Message(
            fmt::format("--broker-secret {}: ${} is not set", text, spec->source));
      }
      value = entry->substr(prefix.size());
    }
    auto secret = TakeSecret(value, text);
    if (!secret) return secret.error();
    credentials.push_back({spec->host, spec->header, std::move(*secret)});
  }
  return credentials;
}

base::Result<std::optional<std::string>> LoadBrokerCa(const DispatchRequest& request,
                                                      bool root_caller) {
  if (!request.broker_ca) return std::optional<std::string>();
  if (!request.broker_ca->starts_with('/')) {
    return base::Error::Message(
        fmt::format("--broker-ca {}: give the file by an absolute path", *request.broker_ca));
  }
  auto pem =
      ReadCredentialsFile(*request.broker_ca, *request.broker_ca, root_caller, "--broker-ca");
  if (!pem) return pem.error();
  return std::optional<std::string>(std::move(*pem));
}

base::Status AddBrokerOptions(const DispatchRequest& request,
                              const std::vector<relay::Route>& routes,
                              const std::vector<std::string>& host_env, bool root_caller,
                              relay::HostRelayOptions& options) {
  if (!HasBrokerRoute(routes)) {
    if (!request.broker_secrets.empty()) {
      return base::Error::Message(
          fmt::format("--broker-secret {}: there is no broker route (--allow HOST,broker)",
                      request.broker_secrets.front()));
    }
    return {};
  }
  // Before any secret is in memory.
  if (::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
    return base::ErrnoError("prctl(PR_SET_DUMPABLE, 0) with a broker route");
  }
  auto secrets = LoadBrokerSecrets(request, routes, host_env, root_caller);
  if (!secrets) return secrets.error();
  options.broker_secrets = std::move(*secrets);
  auto ca = LoadBrokerCa(request, root_caller);
  if (!ca) return ca.error();
  options.broker_ca_pem = std::move(*ca);
  return {};
}

base::Status ApplyBrokerEnvironment(const DispatchRequest& request, AgentPreset preset,
                                    std::vector<std::string>& names,
                                    std::vector<std::string>& env) {
  const AgentProfile profile = ProfileFor(preset);
  for (const std::string& text : request.broker_secrets) {
    auto spec = ParseBrokerSecret(text);
    if (!spec) return spec.error();
    if (!spec->from_file) {
      if (std::find(request.env_names.begin(), request.env_names.end(), spec->source) !=
          request.env_names.end()) {
        return base::Error::Message(fmt::format(
            "--env {}: that variable holds a brokered secret, which never enters the sandbox",
            spec->source));
      }
      std::erase(names, spec->source);
    }
    if (spec->host != profile.default_endpoint) continue;
    // The preset's endpoint is brokered: no key of the host's reaches the agent.
    std::vector<std::string> keys;
    std::vector<std::string> settings;
    if (preset == AgentPreset::kClaude) {
      keys = {"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"};
      settings.push_back("ANTHROPIC_BASE_URL=http://" + spec->host);
      // An OAuth token travels in Authorization; an API key in x-api-key.
      settings.push_back(fmt::format("{}={}",
                                     EqualsIgnoringCase(spec->header, "authorization")
                                         ? "CLAUDE_CODE_OAUTH_TOKEN"
                                         : "ANTHROPIC_API_KEY",
                                     kBrokerPlaceholder));
    } else if (preset == AgentPreset::kOpencode) {
      keys = {"OPENAI_API_KEY"};
      settings.push_back("OPENAI_BASE_URL=http://" + spec->host + "/v1");
      settings.push_back(fmt::format("OPENAI_API_KEY={}", kBrokerPlaceholder));
    }
    for (const std::string& key : keys) std::erase(names, key);
    env.insert(env.end(), settings.begin(), settings.end());
  }
  return {};
}

}  // namespace sbx::dispatch
