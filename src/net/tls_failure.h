#pragma once
// What a failed TLS step means, as a TlsError (or ConnectionError) that
// names the server, the name checked and the setting to look at.
#include <chrono>
#include <string>

#include "net/url.h"

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
// rediss:// to a plain port: Redis reads the ClientHello as an inline
// command and, unless it happens to hold a newline, waits for the rest of
// the line, so the handshake gets no reply. Asked after a moment of that
// silence: does a plain PING on a connection of its own get a RESP answer
// within `budget`? (A TLS port drops it; a paused server says nothing.)
bool plain_redis_answers(const Endpoint& ep, std::chrono::milliseconds budget);

[[noreturn]] void throw_not_tls(const TlsPeer& peer);

// After SSL_read/SSL_write failed with SSL_ERROR_SSL or SSL_ERROR_SYSCALL.
[[noreturn]] void throw_io_failure(int ssl_error, int sys_errno, const TlsPeer& peer);

}  // namespace fairlock::detail
