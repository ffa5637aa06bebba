// TLS over a connected socket. OpenSSL reads and writes through a BIO of
// our own that uses recv/send: MSG_NOSIGNAL (a server gone away is never a
// SIGPIPE) and MSG_DONTWAIT per call, on the same blocking socket.
#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>

#include "base/retry_policy.h"
#include "net/tls.h"
#include "net/tls_failure.h"

namespace fairlock::detail {

namespace {

struct BioState {
  int fd = -1;
  bool dont_wait = false;
  int last_errno = 0;
};

BioState& state_of(BIO* b) { return *static_cast<BioState*>(BIO_get_data(b)); }

// The result of a failed recv/send for OpenSSL: "retry" when it would block.
int bio_failed(BIO* b, bool reading) {
  BioState& st = state_of(b);
  st.last_errno = errno;
  if (errno == EAGAIN || errno == EWOULDBLOCK) {
    if (reading) {
      BIO_set_retry_read(b);
    } else {
      BIO_set_retry_write(b);
    }
  }
  return -1;
}

int bio_read(BIO* b, char* buf, int len) {
  BIO_clear_retry_flags(b);
  BioState& st = state_of(b);
  for (;;) {
    ssize_t n = ::recv(st.fd, buf, static_cast<std::size_t>(len), st.dont_wait ? MSG_DONTWAIT : 0);
    if (n >= 0) return static_cast<int>(n);
    if (errno != EINTR) return bio_failed(b, true);
  }
}

int bio_write(BIO* b, const char* buf, int len) {
  BIO_clear_retry_flags(b);
  BioState& st = state_of(b);
  for (;;) {
    ssize_t n = ::send(st.fd, buf, static_cast<std::size_t>(len), MSG_NOSIGNAL);
    if (n >= 0) return static_cast<int>(n);
    if (errno != EINTR) return bio_failed(b, false);
  }
}

long bio_ctrl(BIO*, int cmd, long, void*) { return cmd == BIO_CTRL_FLUSH ? 1 : 0; }

int bio_create(BIO* b) {
  BIO_set_init(b, 1);
  return 1;
}

const BIO_METHOD* socket_method() {
  static BIO_METHOD* method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "fairlock socket");
    BIO_meth_set_read(m, bio_read);
    BIO_meth_set_write(m, bio_write);
    BIO_meth_set_ctrl(m, bio_ctrl);
    BIO_meth_set_create(m, bio_create);
    return m;
  }();
  return method;
}

bool is_ip_address(const std::string& host) {
  unsigned char buf[sizeof(in6_addr)];
  return ::inet_pton(AF_INET, host.c_str(), buf) == 1 || ::inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

int clamp(std::size_t len) { return len > INT_MAX ? INT_MAX : static_cast<int>(len); }

class TlsStream final : public Stream {
 public:
  TlsStream(Socket s, TlsPeer peer) : socket_(std::move(s)), peer_(std::move(peer)) { state_.fd = socket_.fd(); }
  ~TlsStream() override {
    if (ssl_ != nullptr) SSL_free(ssl_);
  }
  TlsStream(const TlsStream&) = delete;
  TlsStream& operator=(const TlsStream&) = delete;

  void handshake(ssl_ctx_st* ctx, const std::string& name, bool verify);
  void connect(const Endpoint& ep, std::chrono::milliseconds timeout);

  IoResult read(char* buf, std::size_t len, bool dont_wait) override {
    state_.dont_wait = dont_wait;
    state_.last_errno = 0;
    ERR_clear_error();
    int n = SSL_read(ssl_, buf, clamp(len));
    if (n > 0) return {Io::done, static_cast<std::size_t>(n)};
    return failed(SSL_get_error(ssl_, n));
  }

  IoResult write(const char* buf, std::size_t len) override {
    state_.dont_wait = false;
    state_.last_errno = 0;
    ERR_clear_error();
    int n = SSL_write(ssl_, buf, clamp(len));
    if (n > 0) return {Io::done, static_cast<std::size_t>(n)};
    return failed(SSL_get_error(ssl_, n));
  }

  int fd() const override { return socket_.fd(); }
  bool is_tls() const override { return true; }
  bool buffered() const override { return SSL_has_pending(ssl_) == 1; }

 private:
  IoResult failed(int ssl_error) {
    switch (ssl_error) {
      case SSL_ERROR_WANT_READ:
      case SSL_ERROR_WANT_WRITE: return {Io::would_block, 0};
      case SSL_ERROR_ZERO_RETURN: return {Io::closed, 0};
      case SSL_ERROR_SYSCALL:
        if (state_.last_errno == 0) return {Io::closed, 0};
        if (state_.last_errno == ECONNRESET) return {Io::reset, 0};
        if (state_.last_errno == EPIPE) return {Io::closed, 0};
        [[fallthrough]];
      default: throw_io_failure(ssl_error, state_.last_errno, peer_);
    }
  }

  Socket socket_;
  TlsPeer peer_;
  BioState state_;
  ssl_st* ssl_ = nullptr;
};

void TlsStream::handshake(ssl_ctx_st* ctx, const std::string& name, bool verify) {
  ssl_ = SSL_new(ctx);
  BIO* bio = BIO_new(socket_method());
  if (ssl_ == nullptr || bio == nullptr) {
    BIO_free(bio);
    throw TlsError(TlsError::Reason::bad_config, "tls: cannot create a connection" + openssl_reason());
  }
  BIO_set_data(bio, &state_);
  SSL_set_bio(ssl_, bio, bio);
  if (!is_ip_address(name)) SSL_set_tlsext_host_name(ssl_, name.c_str());  // no SNI for an IP (RFC 6066)
  if (verify) {
    X509_VERIFY_PARAM* param = SSL_get0_param(ssl_);
    X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    int ok = is_ip_address(name) ? X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str())
                                 : X509_VERIFY_PARAM_set1_host(param, name.c_str(), name.size());
    if (ok != 1) throw TlsError(TlsError::Reason::bad_config, "tls: cannot verify against the name '" + name + "'");
  }
}

// SSL_connect within `timeout`. Silent for retry::kPlainProbeAfter, it asks
// whether plain Redis answers on that port (then: not_tls), and goes on.
void TlsStream::connect(const Endpoint& ep, std::chrono::milliseconds timeout) {
  using std::chrono::milliseconds;
  const auto end = std::chrono::steady_clock::now() + timeout;
  const auto left = [&end] {
    return std::max(milliseconds(1), std::chrono::ceil<milliseconds>(end - std::chrono::steady_clock::now()));
  };
  bool probed = timeout <= retry::kPlainProbeAfter;
  set_io_timeout(socket_.fd(), probed ? timeout : retry::kPlainProbeAfter);
  for (;;) {
    ERR_clear_error();
    state_.last_errno = 0;
    const int rc = SSL_connect(ssl_);
    if (rc == 1) return;
    const int error = SSL_get_error(ssl_, rc);
    if (probed || error != SSL_ERROR_WANT_READ) throw_handshake_failure(ssl_, error, state_.last_errno, peer_);
    probed = true;
    if (plain_redis_answers(ep, left())) throw_not_tls(peer_);
    set_io_timeout(socket_.fd(), left());
  }
}

}  // namespace

std::unique_ptr<Stream> TlsContext::handshake(Socket s, const Endpoint& ep, std::chrono::milliseconds timeout) const {
  const std::string& name = server_name_.empty() ? ep.host : server_name_;
  auto stream = std::make_unique<TlsStream>(std::move(s), TlsPeer{ep.where(), verify_ ? name : ""});
  stream->handshake(ctx_, name, verify_);
  stream->connect(ep, timeout);
  return stream;
}

}  // namespace fairlock::detail
