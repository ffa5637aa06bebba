// The claim state machine with Options::sync_replicas: a grant is the
// caller's only once enough replicas acknowledged it, and a holder believes
// only acknowledged renewals. No Redis, no clock: every time is passed in.
#include <gtest/gtest.h>

#include "claim_replies.h"
#include "core/claim.h"

namespace fairlock::test {
namespace {

BeatResult holding(std::uint64_t fence, long long ms, int acks) {
  return beat_result(BeatResult::Status::holding, static_cast<long long>(fence), ms, acks);
}

struct ClaimSyncTest : ::testing::Test {
  detail::Counters counters;
  Claim claim{detail::ClaimConfig{1, 10000ms, 3000ms, true, detail::SyncWait{2, 1000ms, "p:wake:sync"}}, counters};
};

TEST_F(ClaimSyncTest, TheFirstAskWaitsAndAnAcknowledgedGrantIsHeld) {
  claim.begin("pm:1", true, t0 + 5000ms, "n");
  const Step ask = claim.next(t0, kSignals);
  ASSERT_EQ(ask.kind, Step::Kind::ask);
  EXPECT_EQ(ask.sync, 1000ms);
  claim.on_acquired(granted(7, 10000ms), t0, 2);
  EXPECT_EQ(claim.next(t0 + 1ms, kSignals).kind, Step::Kind::granted);
  EXPECT_TRUE(claim.owns(t0 + 1ms));
}

TEST_F(ClaimSyncTest, AnUnacknowledgedGrantIsConfirmedUntilTheDeadlineThenNotReplicated) {
  claim.begin("pm:1", true, t0 + 1500ms, "n");
  ASSERT_EQ(claim.next(t0, kSignals).kind, Step::Kind::ask);
  claim.on_acquired(granted(7, 10000ms), t0, 1);
  EXPECT_FALSE(claim.owns(t0 + 1ms));
  EXPECT_TRUE(claim.waiting());
  const Step confirm = claim.next(t0 + 1000ms, kSignals);
  ASSERT_EQ(confirm.kind, Step::Kind::confirm);
  EXPECT_EQ(confirm.sync, 400ms);  // answered by the deadline: the server's tick comes after it
  claim.on_confirmed(holding(7, 10000, 1), 1, t0 + 1000ms);
  EXPECT_EQ(claim.next(t0 + 1500ms, kSignals).kind, Step::Kind::not_replicated);
  claim.finish_not_replicated();
  EXPECT_FALSE(claim.waiting());
  EXPECT_EQ(claim.begin_release().kind, detail::ReleasePlan::Kind::not_held);  // the driver leaves instead
}

TEST_F(ClaimSyncTest, AHandoffIsConfirmedByTheWaitersOwnCall) {
  claim.begin("pm:1", true, std::nullopt, "n");
  ASSERT_EQ(claim.next(t0, kSignals).kind, Step::Kind::ask);
  Acquired q;
  q.status = Acquired::Status::queued;
  q.ticket = 7;
  q.position = 0;
  claim.on_acquired(q, t0, 2);  // a WAIT after a queue entry grants nothing
  ASSERT_TRUE(claim.on_signal("pm:1", 7));
  const Step confirm = claim.next(t0 + 1ms, kSignals);
  ASSERT_EQ(confirm.kind, Step::Kind::confirm);
  EXPECT_EQ(confirm.sync, 1000ms);
  claim.on_confirmed(holding(7, 10000, 2), 2, t0 + 2ms);
  EXPECT_EQ(claim.next(t0 + 3ms, kSignals).kind, Step::Kind::granted);
}

TEST_F(ClaimSyncTest, AGrantAtTheDeadlineGetsOneShortWait) {
  claim.begin("pm:1", true, t0 + 100ms, "n");
  ASSERT_EQ(claim.next(t0, kSignals).kind, Step::Kind::ask);
  claim.on_acquired(granted(7, 10000ms), t0, -1);  // e.g. a retried ask: no WAIT
  const Step confirm = claim.next(t0 + 200ms, kSignals);
  ASSERT_EQ(confirm.kind, Step::Kind::confirm);
  EXPECT_EQ(confirm.sync, detail::retry::kMinSyncWait);
}

// A timed wait ends by its deadline and kGiveUpGrace whatever the server
// does: its calls that WAIT are timed to be answered by the deadline and cut
// there, or soon after it for the WAIT a grant gets at the deadline, so
// that the leave that follows still has time before the grace runs out.
TEST_F(ClaimSyncTest, CallsThatWaitEndByTheDeadlineAndItsGrace) {
  using detail::retry::kGiveUpGrace;
  using detail::retry::kSyncPastDeadline;
  const SteadyTime deadline = t0 + 500ms;
  claim.begin("pm:1", true, deadline, "n");
  const Step ask = claim.next(t0, kSignals);
  ASSERT_EQ(ask.kind, Step::Kind::ask);
  EXPECT_EQ(ask.sync, 400ms);  // its answer comes by the deadline, after the server's tick
  EXPECT_EQ(claim.call_by(ask, t0), deadline);
  // A grant found at the deadline (by the cancel of the give-up) gets one
  // short WAIT, cut soon after the deadline; the leave gets the rest.
  claim.on_ask_failed(t0, deadline, Claim::Failure::in_doubt);
  ASSERT_EQ(claim.next(deadline, kSignals).kind, Step::Kind::give_up);
  EXPECT_EQ(claim.leave_by(deadline + 5ms), deadline + kGiveUpGrace);
  claim.on_gave_up(handed_off(7), deadline + 5ms);
  const Step confirm = claim.next(deadline + 6ms, kSignals);
  ASSERT_EQ(confirm.kind, Step::Kind::confirm);
  EXPECT_EQ(confirm.sync, detail::retry::kMinSyncWait);
  EXPECT_EQ(claim.call_by(confirm, deadline + 6ms), deadline + kSyncPastDeadline);
  claim.on_confirm_failed(deadline + kSyncPastDeadline);  // cut there: nothing acknowledged
  ASSERT_EQ(claim.next(deadline + kSyncPastDeadline, kSignals).kind, Step::Kind::not_replicated);
  EXPECT_EQ(claim.leave_by(deadline + kSyncPastDeadline), deadline + kGiveUpGrace);
}

// A wait that had its WAIT sends no other that the deadline would cut.
TEST_F(ClaimSyncTest, NoSecondWaitThatCannotBeAnsweredByTheDeadline) {
  claim.begin("pm:1", true, t0 + 1000ms, "n");
  ASSERT_EQ(claim.next(t0, kSignals).kind, Step::Kind::ask);
  claim.on_acquired(granted(7, 10000ms), t0, 1);
  EXPECT_EQ(claim.next(t0 + 895ms, kSignals).kind, Step::Kind::not_replicated);
}

TEST_F(ClaimSyncTest, OnlyAnAcknowledgedRenewalExtendsWhatTheHolderBelieves) {
  claim.begin("pm:1", true, std::nullopt, "n");
  ASSERT_EQ(claim.next(t0, kSignals).kind, Step::Kind::ask);
  claim.on_acquired(granted(7, 10000ms), t0, 2);
  ASSERT_EQ(claim.next(t0, kSignals).kind, Step::Kind::granted);
  Effects fx;
  auto beat = claim.beat_item(t0 + 3000ms, fx);
  ASSERT_TRUE(beat);
  EXPECT_EQ(beat->sync.replicas, 2);  // the round ends with WAIT 2
  claim.on_beat("pm:1", true, 10000ms, holding(7, 10000, 1), t0 + 3000ms);
  EXPECT_FALSE(claim.owns(t0 + 10000ms));  // still the first grant's deadline
  claim.on_beat("pm:1", true, 10000ms, holding(7, 10000, 2), t0 + 6000ms);
  EXPECT_TRUE(claim.owns(t0 + 15000ms));
}

TEST_F(ClaimSyncTest, ATryWaitsOnce) {
  claim.begin("pm:1", false, std::nullopt, "n");
  const Step ask = claim.next(t0, kSignals);
  ASSERT_EQ(ask.kind, Step::Kind::ask);
  EXPECT_EQ(ask.sync, 1000ms);
  claim.on_acquired(granted(7, 10000ms), t0, 1);
  EXPECT_EQ(claim.next(t0 + 1001ms, kSignals).kind, Step::Kind::not_replicated);
}

TEST_F(ClaimSyncTest, AGrantLostBeforeItWasAcknowledgedQueuesAgain) {
  claim.begin("pm:1", true, std::nullopt, "n");
  ASSERT_EQ(claim.next(t0, kSignals).kind, Step::Kind::ask);
  claim.on_acquired(granted(7, 10000ms), t0, 0);
  ASSERT_EQ(claim.next(t0 + 1ms, kSignals).kind, Step::Kind::confirm);
  BeatResult gone;
  claim.on_confirmed(gone, 2, t0 + 2ms);
  const Step again = claim.next(t0 + 3ms, kSignals);
  EXPECT_EQ(again.kind, Step::Kind::ask);
  EXPECT_TRUE(again.queue);
}

}  // namespace
}  // namespace fairlock::test
