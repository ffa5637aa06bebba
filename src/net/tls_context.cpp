#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/stat.h>

#include "fairlock/options.h"
#include "net/tls.h"
#include "net/tls_failure.h"

namespace fairlock::detail {

namespace {

[[noreturn]] void bad_config(const std::string& what) {
  throw TlsError(TlsError::Reason::bad_config, "tls: " + what + openssl_reason());
}

bool is_directory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

void load_trusted_cas(ssl_ctx_st* ctx, const TlsOptions& o) {
  if (o.ca_file.empty() && o.ca_dir.empty()) {
    if (SSL_CTX_set_default_verify_paths(ctx) != 1) bad_config("cannot load the system's CA store");
    return;
  }
  if (!o.ca_dir.empty() && !is_directory(o.ca_dir)) bad_config("ca_dir " + o.ca_dir + " is not a directory");
  const char* file = o.ca_file.empty() ? nullptr : o.ca_file.c_str();
  const char* dir = o.ca_dir.empty() ? nullptr : o.ca_dir.c_str();
  if (SSL_CTX_load_verify_locations(ctx, file, dir) != 1) bad_config("cannot load CA file " + o.ca_file);
}

void load_client_certificate(ssl_ctx_st* ctx, const TlsOptions& o) {
  if (o.cert_file.empty()) return;
  if (SSL_CTX_use_certificate_chain_file(ctx, o.cert_file.c_str()) != 1) {
    bad_config("cannot load certificate " + o.cert_file);
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, o.key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    bad_config("cannot load private key " + o.key_file);
  }
  if (SSL_CTX_check_private_key(ctx) != 1) bad_config("key " + o.key_file + " does not match " + o.cert_file);
}

ssl_ctx_st* new_context() {
  ERR_clear_error();
  ssl_ctx_st* ctx = SSL_CTX_new(TLS_client_method());
  if (ctx == nullptr) bad_config("cannot create a TLS context");
  return ctx;
}

}  // namespace

TlsContext::TlsContext(const TlsOptions& o)
    : ctx_(new_context()), server_name_(o.server_name), verify_(!o.insecure_skip_verify_testing_only) {
  try {
    SSL_CTX_set_min_proto_version(ctx_, o.min_version == TlsVersion::v1_3 ? TLS1_3_VERSION : TLS1_2_VERSION);
#ifdef SSL_OP_IGNORE_UNEXPECTED_EOF                           // OpenSSL 3: a server that closes without close_notify
    SSL_CTX_set_options(ctx_, SSL_OP_IGNORE_UNEXPECTED_EOF);  // just closed the connection
#endif
    SSL_CTX_set_mode(ctx_, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    if (verify_) load_trusted_cas(ctx_, o);
    load_client_certificate(ctx_, o);
    SSL_CTX_set_verify(ctx_, verify_ ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, nullptr);
  } catch (...) {
    SSL_CTX_free(ctx_);
    throw;
  }
}

TlsContext::~TlsContext() { SSL_CTX_free(ctx_); }

}  // namespace fairlock::detail
