#pragma once
// What a failed call to a server means for its caller: the one place that
// tells the kinds of failure apart, for both wait drivers (api/participant*),
// the wake subscriber (node/wake) and, through fairlock::is_setup_error, the
// fairlock command. What each caller then does (retry, leave, report) is
// its own; the constants it waits by are in base/retry_policy.h.
#include <exception>

namespace fairlock::detail {

enum class CallFailure {
  unsent,       // no connection could be opened: nothing was sent
  not_run,      // the server lost fairlock's scripts for a whole budget: nothing ran
  in_doubt,     // sent, unanswered (timeout, connection lost, cut short): it may have run
  refused,      // the server answered with an error: asking again cannot help
  wrong_setup,  // the TLS setup cannot work (a certificate that does not verify): nor can it
};

CallFailure failure_of(const std::exception& e);

// Asking again cannot cure it.
inline bool is_final(CallFailure f) { return f == CallFailure::refused || f == CallFailure::wrong_setup; }

// The server answered the call with an error reply: another call to it is
// quick. Otherwise it may be unreachable, stalled, or losing the scripts
// another call would run too.
inline bool server_answered(CallFailure f) { return f == CallFailure::refused; }

// The error as a caller may see it: an internal type (NotConnected,
// ScriptsFlushed) becomes the ConnectionError it derives from, same what().
std::exception_ptr public_error(const std::exception_ptr& e);
[[noreturn]] void rethrow_public(const std::exception_ptr& e);

// f(), with what it throws as public_error: for the library's entry points.
template <class F>
auto publicly(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (...) {
    rethrow_public(std::current_exception());
  }
}

}  // namespace fairlock::detail
