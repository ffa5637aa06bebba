// When the heartbeat's next round starts, from the last round's start and
// end: a pure function of the times passed in, so nothing here can fail by
// timing.
#include <gtest/gtest.h>

#include <chrono>

#include "core/session.h"

namespace fairlock::test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// The next round starts a period after this one's start, but a quarter
// period after its end: a long round is not followed at once by the next
// (that would heartbeat a slow server without a break); unless that is more
// than two periods after its start (the pause must not eat the margin of a
// liveness of three periods).
TEST(AsyncHeartbeat, ALongRoundIsFollowedByAPauseNotAtOnceByTheNext) {
  const Clock::time_point t0{};
  const std::chrono::milliseconds period(300);
  EXPECT_EQ(detail::next_heartbeat_round(t0, t0 + 40ms, period), t0 + 300ms);
  EXPECT_EQ(detail::next_heartbeat_round(t0, t0 + 290ms, period), t0 + 365ms);
  EXPECT_EQ(detail::next_heartbeat_round(t0, t0 + 500ms, period), t0 + 575ms);
  EXPECT_EQ(detail::next_heartbeat_round(t0, t0 + 580ms, period), t0 + 600ms);
  EXPECT_EQ(detail::next_heartbeat_round(t0, t0 + 1000ms, period), t0 + 600ms);  // in the past: at once
}

}  // namespace
}  // namespace fairlock::test
