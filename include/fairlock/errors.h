#pragma once
#include <stdexcept>
#include <string>
#include <utility>

namespace fairlock {

// Base of every error the library reports about Redis or a grant.
// Bad arguments are reported with BadOption (a std::invalid_argument).
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A bad argument: option() names it as the caller wrote it ("Options::url",
// "LockOptions::lease", "permits", "name", "token", ...), problem() says
// what is wrong with it; what() is option() + ": " + problem().
class BadOption : public std::invalid_argument {
 public:
  BadOption(std::string option, std::string problem)
      : std::invalid_argument(option + ": " + problem), option_(std::move(option)), problem_(std::move(problem)) {}
  const std::string& option() const noexcept { return option_; }
  const std::string& problem() const noexcept { return problem_; }

 private:
  std::string option_;
  std::string problem_;
};

// The server could not be reached, or the connection broke mid-command.
class ConnectionError : public Error {
 public:
  using Error::Error;
};

// A TLS connection could not be set up, or a plain one reached a TLS port.
// reason() says which; what() says it in words, with the server and names.
class TlsError : public ConnectionError {
 public:
  enum class Reason {
    bad_config,         // a file of Options::tls cannot be read or used
    unknown_ca,         // the server's certificate chain ends in no trusted CA
    name_mismatch,      // the certificate is not for the name connected to
    expired,            // the certificate (or one in its chain) has expired
    not_yet_valid,      // ... is not valid yet
    untrusted,          // verification failed otherwise (what() says why)
    handshake_refused,  // the server refused: client certificate, version, ciphers
    not_tls,            // rediss:// to a port that does not speak TLS
    tls_required,       // redis:// to a port that closes plain connections
    no_handshake,       // no TLS reply within connect_timeout (a paused server,
                        // or a plain port that waits for a line)
  };
  TlsError(Reason reason, const std::string& what) : ConnectionError(what), reason_(reason) {}
  Reason reason() const noexcept { return reason_; }

 private:
  Reason reason_;
};

// A command, or a wait with a deadline, ran out of time.
class TimeoutError : public Error {
 public:
  using Error::Error;
};

// The server answered with an error (wrong type, permission denied, a
// script's documented error such as a malformed argument).
class ServerError : public Error {
 public:
  using Error::Error;
};

// The server refused this client's credentials or rights: a wrong user or
// password (WRONGPASS), no password given to a server that needs one
// (NOAUTH), or an ACL user without a command, key or channel fairlock needs
// (NOPERM). Thrown by Client's constructor and by any call; a setup error.
class AccessDenied : public ServerError {
 public:
  using ServerError::ServerError;
};

// Clients disagree on the number of permits of one name.
class PermitsMismatch : public ServerError {
 public:
  using ServerError::ServerError;
};

// The name is kept by another version of the fairlock protocol (a newer
// client's layout): this client changes nothing there. See docs/PROTOCOL.md,
// "Versions".
class ProtocolMismatch : public ServerError {
 public:
  using ServerError::ServerError;
};

// The server's maxmemory-policy may evict the lock's keys: an evicted grant
// is granted again to the next caller, so two hold it. Checked whenever the
// client opens a connection to a server (Client's constructor, and each
// reconnect, e.g. after a restart or failover); what() names the policy
// and the fix. Options::allow_evicting_server turns it into a log line.
class EvictionPolicyError : public ServerError {
 public:
  using ServerError::ServerError;
};

// Options::url is a Sentinel URL whose master name no sentinel that
// answered knows (SENTINEL get-master-addr-by-name said nil). A setup error.
class UnknownMasterError : public ServerError {
 public:
  using ServerError::ServerError;
};

// A blocked lock() was cancelled (FairLock::cancel, Client::shutdown).
class Cancelled : public Error {
 public:
  using Error::Error;
};

// A wait ended because an operator evicted the waiter (Client::evict,
// `fairlock evict`): lock() and try_lock_for() throw it, and an asynchronous
// wait's callback gets it. The waiter is in no queue: it is not queued again
// by itself (a new wait queues anew, at the tail). A holder that is evicted
// is told as for any lost grant: on_lost, and release() says Released::lost.
class EvictedError : public Error {
 public:
  using Error::Error;
};

// With Options::sync_replicas: a grant was not acknowledged by that many
// replicas before the call's deadline. It was released (or lapses with its
// lease): the caller holds nothing.
class NotReplicatedError : public Error {
 public:
  using Error::Error;
};

// True when asking again cannot cure `e` because the setup is wrong: a TLS
// certificate or key that does not verify or load, a handshake the server
// refuses (TlsError), credentials or rights the server refuses
// (AccessDenied), a server that may evict the lock's keys
// (EvictionPolicyError), a Sentinel master name no sentinel knows
// (UnknownMasterError). False for a server that is down, slow, paused or
// resets plain clients on a TLS port: those may come right by themselves.
bool is_setup_error(const std::exception& e) noexcept;

}  // namespace fairlock
