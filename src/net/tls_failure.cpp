#include "net/tls_failure.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "net/socket.h"
#include "net/tls.h"

namespace fairlock::detail {

using Reason = TlsError::Reason;

namespace {

Reason verify_reason(long result) {
  switch (result) {
    case X509_V_ERR_HOSTNAME_MISMATCH:
    case X509_V_ERR_IP_ADDRESS_MISMATCH: return Reason::name_mismatch;
    case X509_V_ERR_CERT_HAS_EXPIRED: return Reason::expired;
    case X509_V_ERR_CERT_NOT_YET_VALID: return Reason::not_yet_valid;
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
    case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
    case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN: return Reason::unknown_ca;
    default: return Reason::untrusted;
  }
}

const char* verify_hint(Reason r) {
  switch (r) {
    case Reason::name_mismatch: return " (set Options::tls.server_name to a name in its certificate)";
    case Reason::unknown_ca: return " (give the CA that signed it in Options::tls.ca_file)";
    default: return "";
  }
}

[[noreturn]] void throw_verify_failure(long result, const TlsPeer& peer) {
  const Reason r = verify_reason(result);
  throw TlsError(r, "tls: the certificate of " + peer.where + " does not verify for '" + peer.name +
                        "': " + X509_verify_cert_error_string(result) + verify_hint(r));
}

bool is_alert(int reason) { return reason >= SSL_AD_REASON_OFFSET; }

bool is_not_tls(int reason) {
  return reason == SSL_R_WRONG_VERSION_NUMBER || reason == SSL_R_PACKET_LENGTH_TOO_LONG ||
         reason == SSL_R_RECORD_LENGTH_MISMATCH || reason == SSL_R_HTTP_REQUEST;
}

const char* alert_hint(int reason) {
  switch (reason) {
    case SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED:
      return " (the server requires a client certificate: Options::tls.cert_file and key_file, --cert and --key)";
    case SSL_R_TLSV1_ALERT_UNKNOWN_CA:
    case SSL_R_SSLV3_ALERT_BAD_CERTIFICATE: return " (the server does not trust this client's certificate)";
    case SSL_R_TLSV1_ALERT_PROTOCOL_VERSION: return " (no TLS version both sides accept)";
    default: return "";
  }
}

[[noreturn]] void throw_dropped(int sys_errno, const TlsPeer& peer, const char* during) {
  std::string why = sys_errno != 0 ? std::strerror(sys_errno) : "connection closed";
  throw ConnectionError("redis: " + peer.where + " dropped the connection " + during + ": " + why);
}

// An SSL_ERROR_SSL from the error queue: an alert, plain text, or other.
[[noreturn]] void throw_ssl_failure(const TlsPeer& peer, const char* during) {
  const unsigned long err = ERR_peek_error();
  const int reason = ERR_GET_REASON(err);
  const std::string text = openssl_reason();
#ifdef SSL_R_UNEXPECTED_EOF_WHILE_READING
  if (reason == SSL_R_UNEXPECTED_EOF_WHILE_READING) throw_dropped(0, peer, during);
#endif
  if (is_not_tls(reason)) throw_not_tls(peer);
  if (is_alert(reason)) {
    throw TlsError(Reason::handshake_refused,
                   "tls: " + peer.where + " refused this client " + during + text + alert_hint(reason));
  }
  throw TlsError(Reason::handshake_refused, std::string("tls: ") + during + " with " + peer.where + " failed" + text);
}

}  // namespace

std::string openssl_reason() {
  const unsigned long err = ERR_get_error();
  ERR_clear_error();
  if (err == 0) return "";
  char buf[256];
  ERR_error_string_n(err, buf, sizeof buf);
  return std::string(": ") + buf;
}

void throw_handshake_failure(ssl_st* ssl, int ssl_error, int sys_errno, const TlsPeer& peer) {
  // (Without verification, OpenSSL still records why the chain would not
  // verify: that says nothing about this failure.)
  const long verified = SSL_get_verify_result(ssl);
  if (!peer.name.empty() && ssl_error == SSL_ERROR_SSL && verified != X509_V_OK) {
    ERR_clear_error();
    throw_verify_failure(verified, peer);
  }
  if (ssl_error == SSL_ERROR_WANT_READ || ssl_error == SSL_ERROR_WANT_WRITE) {
    ERR_clear_error();
    throw TlsError(Reason::no_handshake, "tls: the server at " + peer.where +
                                             " did not answer the TLS handshake within Options::connect_timeout "
                                             "(is it paused?)");
  }
  if (ssl_error == SSL_ERROR_SSL) throw_ssl_failure(peer, "during the TLS handshake");
  ERR_clear_error();
  throw_dropped(sys_errno, peer, "during the TLS handshake");
}

void throw_not_tls(const TlsPeer& peer) {
  ERR_clear_error();
  throw TlsError(Reason::not_tls,
                 "tls: the server at " + peer.where + " does not speak TLS: use redis:// in Options::url");
}

bool plain_redis_answers(const Endpoint& ep, std::chrono::milliseconds budget) {
  const auto end = std::chrono::steady_clock::now() + budget;
  try {
    Endpoint plain = ep;
    plain.tls = false;
    Socket s = dial(plain, budget);
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
    set_io_timeout(s.fd(), std::max(left, std::chrono::milliseconds(1)));
    static constexpr char kPing[] = "PING\r\n";
    if (::send(s.fd(), kPing, sizeof kPing - 1, MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof kPing - 1)) return false;
    char first = 0;
    return ::recv(s.fd(), &first, 1, 0) == 1 && (first == '+' || first == '-');
  } catch (const Error&) {
    return false;
  }
}

void throw_io_failure(int ssl_error, int sys_errno, const TlsPeer& peer) {
  if (ssl_error == SSL_ERROR_SSL) throw_ssl_failure(peer, "after the TLS handshake");
  ERR_clear_error();
  throw_dropped(sys_errno, peer, "mid-command");
}

}  // namespace fairlock::detail
