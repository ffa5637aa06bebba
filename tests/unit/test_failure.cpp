// The one failure taxonomy (node/failure.h) and the public is_setup_error:
// each kind of error the layers below throw, told apart without a server.
#include <gtest/gtest.h>

#include <stdexcept>

#include "fairlock/errors.h"
#include "net/socket.h"
#include "node/failure.h"
#include "node/script_runner.h"

namespace fairlock::detail {
namespace {

using Reason = TlsError::Reason;

TEST(Failure, EachErrorHasItsKind) {
  EXPECT_EQ(failure_of(NotConnected("refused")), CallFailure::unsent);
  EXPECT_EQ(failure_of(ScriptsFlushed("flushed")), CallFailure::not_run);
  EXPECT_EQ(failure_of(TimeoutError("slow")), CallFailure::in_doubt);
  EXPECT_EQ(failure_of(ConnectionError("reset")), CallFailure::in_doubt);
  EXPECT_EQ(failure_of(Cancelled("cut")), CallFailure::in_doubt);
  EXPECT_EQ(failure_of(ServerError("ERR")), CallFailure::refused);
  EXPECT_EQ(failure_of(EvictionPolicyError("allkeys-lru")), CallFailure::refused);
  EXPECT_EQ(failure_of(TlsError(Reason::unknown_ca, "verify")), CallFailure::wrong_setup);
  // Neither reached a server that read a command: a reset before the first
  // reply means our bytes were unread (a server that read them and died
  // closes with FIN: in doubt); no handshake, nothing sent. Retried later in
  // a wait as a server that is down, reported at once by a first call.
  EXPECT_EQ(failure_of(TlsError(Reason::tls_required, "reset")), CallFailure::unsent);
  EXPECT_EQ(failure_of(TlsError(Reason::no_handshake, "paused")), CallFailure::unsent);
  EXPECT_EQ(failure_of(AccessDenied("WRONGPASS")), CallFailure::refused);
  EXPECT_EQ(failure_of(std::runtime_error("other")), CallFailure::in_doubt);
}

TEST(Failure, OnlyRefusalsAndWrongSetupsAreFinalOnlyRefusalsAnswered) {
  EXPECT_TRUE(is_final(CallFailure::refused));
  EXPECT_TRUE(is_final(CallFailure::wrong_setup));
  EXPECT_FALSE(is_final(CallFailure::in_doubt));
  EXPECT_FALSE(is_final(CallFailure::unsent));
  EXPECT_FALSE(is_final(CallFailure::not_run));
  EXPECT_TRUE(server_answered(CallFailure::refused));
  EXPECT_FALSE(server_answered(CallFailure::not_run));  // the next call would lose its script too
  EXPECT_FALSE(server_answered(CallFailure::in_doubt));
}

TEST(Failure, SetupErrorsAreThoseNoRetryCures) {
  EXPECT_TRUE(is_setup_error(TlsError(Reason::unknown_ca, "verify")));
  EXPECT_TRUE(is_setup_error(EvictionPolicyError("allkeys-lru")));
  EXPECT_TRUE(is_setup_error(AccessDenied("WRONGPASS")));
  EXPECT_FALSE(is_setup_error(TlsError(Reason::no_handshake, "paused")));
  EXPECT_FALSE(is_setup_error(ConnectionError("down")));
  EXPECT_FALSE(is_setup_error(ServerError("WRONGTYPE")));
}

}  // namespace
}  // namespace fairlock::detail
