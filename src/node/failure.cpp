#include "node/failure.h"

#include "fairlock/errors.h"
#include "net/socket.h"
#include "node/script_runner.h"

namespace fairlock::detail {

namespace {

// A TlsError that retrying cannot cure (a certificate that does not verify,
// a refused handshake), unlike those that may be a server going away or
// paused (a reset on a TLS-only port, no handshake reply): waits retry
// those as they retry an unreachable server. Neither sent a command.
bool wrong_tls_setup(const TlsError& e) {
  return e.reason() != TlsError::Reason::tls_required && e.reason() != TlsError::Reason::no_handshake;
}

}  // namespace

CallFailure failure_of(const std::exception& e) {
  if (const auto* tls = dynamic_cast<const TlsError*>(&e)) {
    return wrong_tls_setup(*tls) ? CallFailure::wrong_setup : CallFailure::unsent;
  }
  if (dynamic_cast<const ServerError*>(&e) != nullptr) return CallFailure::refused;
  if (dynamic_cast<const ScriptsFlushed*>(&e) != nullptr) return CallFailure::not_run;
  if (dynamic_cast<const NotConnected*>(&e) != nullptr) return CallFailure::unsent;
  return CallFailure::in_doubt;
}

std::exception_ptr public_error(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const NotConnected& x) {
    return std::make_exception_ptr(ConnectionError(x.what()));
  } catch (const ScriptsFlushed& x) {
    return std::make_exception_ptr(ConnectionError(x.what()));
  } catch (...) {
    return e;
  }
}

void rethrow_public(const std::exception_ptr& e) { std::rethrow_exception(public_error(e)); }

}  // namespace fairlock::detail

namespace fairlock {

bool is_setup_error(const std::exception& e) noexcept {
  return detail::failure_of(e) == detail::CallFailure::wrong_setup ||
         dynamic_cast<const EvictionPolicyError*>(&e) != nullptr || dynamic_cast<const AccessDenied*>(&e) != nullptr ||
         dynamic_cast<const UnknownMasterError*>(&e) != nullptr;
}

}  // namespace fairlock
