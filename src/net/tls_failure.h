#pragma once
// What a failed TLS step means, as a TlsError (or ConnectionError) that
// names the server, the name checked and the setting to look at.
#include <string>

struct ssl_st;

namespace fairlock::detail {

// ": <OpenSSL's first queued error>" ("" if none); empties the queue.
std::string openssl_reason();

struct TlsPeer {
  std::string where;  // host:port
  std::string name;   // the name verified ("" when verification is off)
};

// After SSL_connect failed with this SSL_get_error() code (sys_errno: the
// socket's errno for SSL_ERROR_SYSCALL).
[[noreturn]] void throw_handshake_failure(ssl_st* ssl, int ssl_error, int sys_errno, const TlsPeer& peer);
// After SSL_read/SSL_write failed with SSL_ERROR_SSL or SSL_ERROR_SYSCALL.
[[noreturn]] void throw_io_failure(int ssl_error, int sys_errno, const TlsPeer& peer);

}  // namespace fairlock::detail
