// How the script runner tells Redis's error texts apart (the runner itself,
// against servers, is in tests/test_scripts.cpp).
#include <gtest/gtest.h>

#include "net/reply.h"
#include "node/script_runner.h"

namespace fairlock::test {
namespace {

// The error texts that steer the runner, as Redis 7.0 (and 6.x, for an
// unknown command) writes them.
TEST(ScriptErrors, AreToldApartByRedisTexts) {
  using detail::CallError;
  using detail::classify_call_error;
  using detail::classify_load_error;
  using detail::LoadError;
  using detail::ScriptWay;
  const auto fcall = ScriptWay::functions, evalsha = ScriptWay::evalsha;
  EXPECT_EQ(classify_call_error("ERR Function not found", fcall), CallError::missing);
  EXPECT_EQ(classify_call_error("NOSCRIPT No matching script. Please use EVAL.", evalsha), CallError::missing);
  EXPECT_EQ(classify_call_error("NOPERM this user has no permissions to run the 'fcall' command", fcall),
            CallError::no_functions);
  EXPECT_EQ(classify_call_error("ERR unknown command 'FCALL', with args beginning with: 'x' ", fcall),
            CallError::no_functions);
  EXPECT_EQ(classify_call_error("ERR unknown command `FCALL`, with args beginning with: `x`, ", fcall),
            CallError::no_functions);
  // Sent by EVALSHA, an unknown or refused command is the call's own error.
  EXPECT_EQ(classify_call_error("ERR unknown command 'EVALSHA', with args beginning with: ", evalsha),
            CallError::other);
  EXPECT_EQ(classify_call_error("NOPERM this user has no permissions to run the 'evalsha' command", evalsha),
            CallError::other);
  EXPECT_EQ(
      classify_call_error("NOPERM this user has no permissions to access one of the keys used as arguments", fcall),
      CallError::other);
  EXPECT_EQ(classify_call_error("FLBADARG member must look like <p|k|n><hex>:<hex>", fcall), CallError::other);
  EXPECT_EQ(classify_load_error("ERR Library 'fairlock_0123456789abcdef' already exists"), LoadError::loaded_by_peer);
  EXPECT_EQ(classify_load_error("NOPERM this user has no permissions to run the 'function|load' command"),
            LoadError::no_functions);
  EXPECT_EQ(classify_load_error("ERR unknown command 'FUNCTION', with args beginning with: 'LOAD' "),
            LoadError::no_functions);
  EXPECT_EQ(classify_load_error("OOM command not allowed when used memory > 'maxmemory'."), LoadError::other);
  EXPECT_EQ(classify_load_error("READONLY You can't write against a read only replica."), LoadError::other);
}

// The conditions of the server itself, read by the error's first word in
// one place (net/reply.h) for the master check, the redirections and the
// errors thrown; a longer word that begins the same is another error.
TEST(ScriptErrors, ServerRefusalsAreReadByTheirCode) {
  using detail::server_refusal;
  using detail::ServerRefusal;
  EXPECT_EQ(server_refusal("READONLY You can't write against a read only replica."), ServerRefusal::readonly);
  EXPECT_EQ(server_refusal("MOVED 3999 127.0.0.1:6381"), ServerRefusal::moved);
  EXPECT_EQ(server_refusal("ASK 3999 127.0.0.1:6381"), ServerRefusal::ask);
  EXPECT_EQ(server_refusal("LOADING Redis is loading the dataset in memory"), ServerRefusal::busy);
  EXPECT_EQ(server_refusal("TRYAGAIN Multiple keys request during rehashing of slot"), ServerRefusal::busy);
  EXPECT_EQ(server_refusal("CLUSTERDOWN"), ServerRefusal::busy);
  EXPECT_EQ(server_refusal("BUSYKEY Target key name already exists."), ServerRefusal::none);
  EXPECT_EQ(server_refusal("READONLYX"), ServerRefusal::none);
  EXPECT_EQ(server_refusal("ERR READONLY"), ServerRefusal::none);
  EXPECT_EQ(server_refusal(""), ServerRefusal::none);
}

}  // namespace
}  // namespace fairlock::test
