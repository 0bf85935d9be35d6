// BrokerTls: the TLS client side of a broker route (OpenSSL). The relay, not the agent,
// checks the upstream: the certificate must chain to the host's CA store (OpenSSL's default
// paths), or only to the certificates of --broker-ca when one is given, and name the
// route's host; SNI is the route's host; TLS 1.2 or later.
// Caller: the loop thread.
#pragma once

#include <openssl/ssl.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/error.h"

namespace sbx::relay {

struct SslCtxFree {
  void operator()(SSL_CTX* ctx) const { SSL_CTX_free(ctx); }
};
struct SslFree {
  void operator()(SSL* ssl) const { SSL_free(ssl); }
};
using SslCtxPtr = std::unique_ptr<SSL_CTX, SslCtxFree>;
using SslPtr = std::unique_ptr<SSL, SslFree>;

// `ca_pem`: the PEM text of the CA certificates to trust instead of the host's store (read
// by the caller from --broker-ca); nullopt: the host's store.
base::Result<SslCtxPtr> MakeBrokerTlsContext(const std::optional<std::string>& ca_pem);

// A client SSL on the connected socket `fd`, with SNI and the name check set to `host`.
base::Result<SslPtr> MakeBrokerTls(SSL_CTX* ctx, int fd, const std::string& host);

// The last OpenSSL error of this thread, or the verify result of `ssl`, as one line.
std::string BrokerTlsError(SSL* ssl);

}  // namespace sbx::relay
