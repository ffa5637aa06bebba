#pragma once
// TLS with OpenSSL: one context per client (trusted CAs, client
// certificate, minimum version, verification) and a Stream per connection,
// set up over a connected socket. Nothing outside src/ sees an OpenSSL type.
#include <chrono>
#include <memory>
#include <string>

#include "fairlock/errors.h"
#include "net/stream.h"

struct ssl_ctx_st;

namespace fairlock {
struct TlsOptions;
}

namespace fairlock::detail {

class TlsContext {
 public:
  // Throws TlsError(bad_config) for a file that cannot be read or used.
  explicit TlsContext(const TlsOptions& o);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  // The TLS handshake over s, within `timeout`, verifying the certificate
  // for Options::tls.server_name or else host. Throws TlsError (or
  // ConnectionError if the connection drops meanwhile); not_tls for a port
  // where plain Redis answers (see plain_redis_answers).
  std::unique_ptr<Stream> handshake(Socket s, const Endpoint& ep, std::chrono::milliseconds timeout) const;
  bool verifies() const { return verify_; }

 private:
  ssl_ctx_st* ctx_ = nullptr;
  std::string server_name_;
  bool verify_;
};

}  // namespace fairlock::detail
