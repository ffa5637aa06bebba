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
  EXPECT_EQ(confirm.sync, 500ms);  // no WAIT past the deadline
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
