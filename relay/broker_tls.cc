#include "relay/broker_tls.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cerrno>

namespace sbx::relay {

namespace {

std::string LastOpenSslError() {
  unsigned long code = ERR_get_error();  // NOLINT(google-runtime-int): OpenSSL's type
  ERR_clear_error();
  if (code == 0) return "unknown TLS error";
  char text[256];
  ERR_error_string_n(code, text, sizeof(text));
  return text;
}

}  // namespace

base::Result<SslCtxPtr> MakeBrokerTlsContext(const std::optional<std::string>& ca_pem) {
  SslCtxPtr ctx(SSL_CTX_new(TLS_client_method()));
  if (!ctx) return base::Error(ENOMEM, "Can't make a TLS context", LastOpenSslError());
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
  // Partial writes: SSL_write takes what fits, and a retried write may start elsewhere in
  // the queue (its bytes are the same).
  SSL_CTX_set_mode(ctx.get(), SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                                  SSL_MODE_RELEASE_BUFFERS);
  if (!ca_pem) {
    if (SSL_CTX_set_default_verify_paths(ctx.get()) != 1) {
      return base::Error(EINVAL, "Can't load the host's CA store", LastOpenSslError());
    }
    return ctx;
  }
  X509_STORE* store = SSL_CTX_get_cert_store(ctx.get());
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(
      BIO_new_mem_buf(ca_pem->data(), static_cast<int>(ca_pem->size())), &BIO_free);
  if (!bio) return base::Error(ENOMEM, "Can't read --broker-ca", LastOpenSslError());
  int added = 0;
  for (;;) {
    X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr);
    if (cert == nullptr) break;
    int ok = X509_STORE_add_cert(store, cert);
    X509_free(cert);
    if (ok != 1)
      return base::Error(EINVAL, "Can't use a --broker-ca certificate", LastOpenSslError());
    ++added;
  }
  ERR_clear_error();  // the end of the PEM text reads as an error
  if (added == 0) return base::Error(EINVAL, "--broker-ca holds no PEM certificate");
  return ctx;
}

base::Result<SslPtr> MakeBrokerTls(SSL_CTX* ctx, int fd, const std::string& host) {
  SslPtr ssl(SSL_new(ctx));
  if (!ssl) return base::Error(ENOMEM, "Can't start TLS", LastOpenSslError());
  if (SSL_set_fd(ssl.get(), fd) != 1 ||
      SSL_ctrl(ssl.get(), SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
               const_cast<char*>(host.c_str())) != 1 ||
      SSL_set1_host(ssl.get(), host.c_str()) != 1) {
    return base::Error(EINVAL, "Can't set up TLS for", host);
  }
  SSL_set_hostflags(ssl.get(), X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  SSL_set_connect_state(ssl.get());
  return ssl;
}

std::string BrokerTlsError(SSL* ssl) {
  if (ssl != nullptr) {
    long verify = SSL_get_verify_result(ssl);  // NOLINT(google-runtime-int): OpenSSL's type
    if (verify != X509_V_OK) {
      ERR_clear_error();
      return std::string("certificate: ") + X509_verify_cert_error_string(verify);
    }
  }
  return LastOpenSslError();
}

}  // namespace sbx::relay
