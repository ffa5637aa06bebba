// The claim state machine and the session's registry on their own: no Redis,
// no threads, no clock (every time is passed in), so nothing here can fail
// by timing.
#include <gtest/gtest.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include "claim_replies.h"
#include "core/claim.h"
#include "core/session.h"

namespace fairlock::test {
namespace {

struct ClaimTest : ::testing::Test {
  detail::Counters counters;
  Claim claim{detail::ClaimConfig{1, 10000ms, 3000ms, true}, counters};
  // Starts a queued wait that has its first reply (ticket 7, place 2).
  void queue(std::optional<SteadyTime> deadline = std::nullopt) {
    claim.begin("pm:1", true, deadline, "n");
    ASSERT_EQ(claim.next(t0, kSignals).kind, Step::Kind::ask);
    claim.on_acquired(queued(7, 2), t0);
  }
};

TEST_F(ClaimTest, FirstStepAsksThenWaitsWhenQueued) {
  queue();
  Step s = claim.next(t0, kSignals);
  EXPECT_EQ(s.kind, Step::Kind::wait);
  EXPECT_EQ(s.until, t0 + 3000ms);  // signals on: a bounded timer of one liveness
  EXPECT_EQ(counters.snapshot().waits, 1u);
}

TEST_F(ClaimTest, ASignalForItsTicketGrantsWithoutARoundTrip) {
  queue();
  EXPECT_FALSE(claim.on_signal("pm:other", 7));  // not ours
  EXPECT_TRUE(claim.on_signal("pm:1", 7));
  EXPECT_EQ(claim.next(t0 + 1ms, kSignals).kind, Step::Kind::granted);
  EXPECT_EQ(claim.fence(), 7u);
  EXPECT_TRUE(claim.owns(t0 + 1ms));
  EXPECT_EQ(counters.snapshot().grants, 1u);
}

TEST_F(ClaimTest, ASignalForAnotherPlaceIsIgnored) {
  queue();
  EXPECT_TRUE(claim.on_signal("pm:1", 5));  // an earlier ticket of this member
  EXPECT_EQ(claim.next(t0 + 1ms, kSignals).kind, Step::Kind::wait);
}

TEST_F(ClaimTest, AStaleSignalIsCheckedWithRedis) {
  queue();
  EXPECT_TRUE(claim.on_signal("pm:1", 7));
  EXPECT_EQ(claim.next(t0 + 4000ms, kSignals).kind, Step::Kind::ask);  // past liveness: ask
}

TEST_F(ClaimTest, DeadlineGivesUpAndAHandoffMeanwhileIsKept) {
  queue(t0 + 100ms);
  EXPECT_EQ(claim.next(t0 + 100ms, kSignals).kind, Step::Kind::give_up);
  claim.on_gave_up(handed_off(7), t0 + 100ms);
  EXPECT_EQ(claim.next(t0 + 101ms, kSignals).kind, Step::Kind::granted);
}

TEST_F(ClaimTest, DeadlineWithoutHandoffTimesOut) {
  queue(t0 + 100ms);
  EXPECT_EQ(claim.next(t0 + 150ms, kSignals).kind, Step::Kind::give_up);
  claim.on_gave_up(CancelResult{}, t0 + 150ms);
  EXPECT_EQ(claim.next(t0 + 151ms, kSignals).kind, Step::Kind::timed_out);
  EXPECT_EQ(counters.snapshot().timeouts, 1u);
  EXPECT_FALSE(claim.waiting());
}

TEST_F(ClaimTest, CancelAndShutdownEndTheWait) {
  queue();
  EXPECT_TRUE(claim.cancel());
  EXPECT_EQ(claim.next(t0, kSignals).kind, Step::Kind::cancelled);
  claim.finish_cancelled();
  EXPECT_FALSE(claim.cancel());  // nothing waits any more
  queue();
  EXPECT_EQ(claim.next(t0, detail::WaitContext{true, true, 1000ms}).kind, Step::Kind::cancelled);
}

TEST_F(ClaimTest, ConnectionTroubleRetriesWithBackoffUntilTheEntryWouldExpire) {
  queue();
  EXPECT_TRUE(claim.kick());
  EXPECT_EQ(claim.next(t0 + 10ms, kSignals).kind, Step::Kind::ask);
  EXPECT_TRUE(claim.on_ask_failed(t0 + 20ms, t0 + 20ms, Claim::Failure::in_doubt));
  Step s = claim.next(t0 + 20ms, kSignals);
  EXPECT_EQ(s.kind, Step::Kind::wait);
  EXPECT_EQ(s.until, t0 + 40ms);  // 20 ms backoff
  EXPECT_EQ(claim.next(t0 + 40ms, kSignals).kind, Step::Kind::ask);
  EXPECT_TRUE(
      claim.on_ask_failed(t0 + 2500ms, t0 + 2500ms, Claim::Failure::unsent));  // the server is down: still queued
  EXPECT_FALSE(
      claim.on_ask_failed(t0 + 3001ms, t0 + 3001ms, Claim::Failure::in_doubt));         // its entry has expired by now
  EXPECT_FALSE(claim.on_ask_failed(t0 + 50ms, t0 + 50ms, Claim::Failure::refused));     // an error reply is not retried
  EXPECT_TRUE(claim.on_ask_failed(t0 + 3001ms, t0 + 3001ms, Claim::Failure::not_run));  // nothing ran: safe
  EXPECT_FALSE(claim.on_ask_failed(t0 + 6100ms, t0 + 6100ms, Claim::Failure::not_run));  // but not for ever
}

TEST_F(ClaimTest, AFirstAskThatReachedNoServerIsNotRetried) {
  claim.begin("pm:1", true, std::nullopt, "n");
  ASSERT_EQ(claim.next(t0, kSignals).kind, Step::Kind::ask);
  EXPECT_FALSE(claim.on_ask_failed(t0, t0, Claim::Failure::unsent));  // the server is down: said at once
  EXPECT_TRUE(claim.on_ask_failed(t0, t0, Claim::Failure::not_run));  // it did not run: retried
  EXPECT_EQ(claim.next(t0 + 5ms, kSignals).kind, Step::Kind::wait);   // after a backoff
  EXPECT_EQ(claim.next(t0 + 20ms, kSignals).kind, Step::Kind::ask);
}

// A server this client reached before is down now (a restart): a wait's
// first ask rides it out (a timed one until its deadline, an untimed one for
// a liveness); a try ends at once.
TEST_F(ClaimTest, AFirstAskToAServerThatWentAwayIsRetried) {
  claim.begin("pm:1", true, std::nullopt, "n");
  ASSERT_EQ(claim.next(t0, kSignals).kind, Step::Kind::ask);
  EXPECT_TRUE(claim.on_ask_failed(t0, t0, Claim::Failure::down));
  EXPECT_TRUE(claim.on_ask_failed(t0 + 2900ms, t0 + 2900ms, Claim::Failure::down));
  EXPECT_FALSE(claim.on_ask_failed(t0 + 3100ms, t0 + 3100ms, Claim::Failure::down));  // a liveness (3 s) later
  claim.abort();
  claim.begin("pm:2", true, t0 + 10s, "n");
  ASSERT_EQ(claim.next(t0, kSignals).kind, Step::Kind::ask);
  EXPECT_TRUE(claim.on_ask_failed(t0 + 5s, t0 + 5s, Claim::Failure::down));  // timed: until its deadline
  claim.abort();
  claim.begin("pm:3", false, std::nullopt, "n");
  ASSERT_EQ(claim.next(t0, kSignals).kind, Step::Kind::ask);
  EXPECT_FALSE(claim.on_ask_failed(t0, t0, Claim::Failure::down));  // a try does not wait
}

// The server restarted (or the connection was killed) with the first call
// in flight: it may have queued us, so the wait goes on as a queued one,
// through the server being down, until that entry would have expired.
TEST_F(ClaimTest, AFirstAskInDoubtRetriesAsAQueuedWaiter) {
  claim.begin("pm:1", true, std::nullopt, "n");
  const Step first = claim.next(t0, kSignals);
  ASSERT_EQ(first.kind, Step::Kind::ask);
  EXPECT_TRUE(first.first);  // a fresh member: nothing of it to look up (mode "f")
  EXPECT_TRUE(claim.on_ask_failed(t0 + 1ms, t0 + 1ms, Claim::Failure::in_doubt));
  Step s = claim.next(t0 + 1ms, kSignals);
  ASSERT_EQ(s.kind, Step::Kind::wait);
  const Step retry = claim.next(s.until, kSignals);
  ASSERT_EQ(retry.kind, Step::Kind::ask);
  EXPECT_TRUE(retry.queue);
  EXPECT_FALSE(retry.first);  // the first call may have run: "q" finds its entry
  EXPECT_TRUE(claim.on_ask_failed(t0 + 30ms, t0 + 30ms, Claim::Failure::unsent));       // the server is still down
  EXPECT_FALSE(claim.on_ask_failed(t0 + 3002ms, t0 + 3002ms, Claim::Failure::unsent));  // that entry has expired by now
}

// The deadline comes while a first call in doubt is being retried, and the
// cancel finds that the lost call had queued us and we were handed the
// grant: it is kept, valid for what the server says is left of it, counted
// from when the cancel was sent.
TEST_F(ClaimTest, AGrantFoundByTheCancelOfAFirstAskInDoubtIsValid) {
  claim.begin("pm:1", true, t0 + 100ms, "n");
  ASSERT_EQ(claim.next(t0, kSignals).kind, Step::Kind::ask);
  ASSERT_TRUE(claim.on_ask_failed(t0, t0 + 50ms, Claim::Failure::in_doubt));
  ASSERT_EQ(claim.next(t0 + 100ms, kSignals).kind, Step::Kind::give_up);
  claim.on_gave_up(handed_off(42, 2900ms), t0 + 100ms);
  EXPECT_EQ(claim.next(t0 + 101ms, kSignals).kind, Step::Kind::granted);
  EXPECT_EQ(claim.fence(), 42u);
  EXPECT_TRUE(claim.owns(t0 + 101ms));
  EXPECT_TRUE(claim.owns(t0 + 2998ms));  // the cancel's send + 2.9 s, less the server's clock step
  EXPECT_FALSE(claim.owns(t0 + 2999ms));
}

TEST_F(ClaimTest, ATryInDoubtIsNotRetried) {
  claim.begin("pm:1", false, std::nullopt, "n");
  ASSERT_EQ(claim.next(t0, kSignals).kind, Step::Kind::ask);
  EXPECT_FALSE(claim.on_ask_failed(t0, t0, Claim::Failure::in_doubt));  // the driver leaves, releasing a grant it got
}

TEST_F(ClaimTest, ATryIsNotRetriedAfterItsCall) {
  claim.begin("pm:1", false, std::nullopt, "n");
  ASSERT_FALSE(claim.next(t0, kSignals).queue);
  EXPECT_FALSE(claim.on_ask_failed(t0, t0, Claim::Failure::not_run));  // try_lock never waits
}

TEST_F(ClaimTest, AKickDoesNotCutABackoffShort) {
  queue();
  claim.kick();
  ASSERT_EQ(claim.next(t0 + 1ms, kSignals).kind, Step::Kind::ask);
  ASSERT_TRUE(claim.on_ask_failed(t0 + 2ms, t0 + 2ms, Claim::Failure::in_doubt));
  claim.kick();
  EXPECT_EQ(claim.next(t0 + 3ms, kSignals).kind, Step::Kind::wait);
  EXPECT_EQ(claim.next(t0 + 22ms, kSignals).kind, Step::Kind::ask);
}

// At the deadline a failing wait times out as any other (it leaves the
// queue), whatever the failure: never an error, never a wait past it.
TEST_F(ClaimTest, FailuresAtTheDeadlineGiveUpAtOnce) {
  for (auto failure : {Claim::Failure::not_run, Claim::Failure::in_doubt}) {
    Claim c{detail::ClaimConfig{1, 10000ms, 3000ms, true}, counters};
    c.begin("pm:1", true, t0 + 50ms, "n");
    ASSERT_EQ(c.next(t0, kSignals).kind, Step::Kind::ask);
    EXPECT_TRUE(c.on_ask_failed(t0 + 10ms, t0 + 10ms, failure));
    EXPECT_TRUE(c.on_ask_failed(t0 + 50ms, t0 + 50ms, failure));
    EXPECT_EQ(c.next(t0 + 50ms, kSignals).kind, Step::Kind::give_up);
  }
}

// A refused call, or a server down from the start, is an error at once.
TEST_F(ClaimTest, RefusedOrNeverSentFailsEvenAtTheDeadline) {
  claim.begin("pm:1", true, t0 + 50ms, "n");
  ASSERT_EQ(claim.next(t0, kSignals).kind, Step::Kind::ask);
  EXPECT_FALSE(claim.on_ask_failed(t0 + 60ms, t0 + 60ms, Claim::Failure::unsent));
  EXPECT_FALSE(claim.on_ask_failed(t0 + 60ms, t0 + 60ms, Claim::Failure::refused));
}

// Issue 31, defect 1: a grant found by the give-up's cancel (a late acquire
// ran on an idle name) lasts what the server says, not a liveness.
TEST_F(ClaimTest, AGrantFoundAtTheDeadlineLastsWhatTheServerSays) {
  Claim c{detail::ClaimConfig{1, 1000ms, 5000ms, false}, counters};
  c.begin("pm:1", true, t0 + 100ms, "n");
  ASSERT_EQ(c.next(t0, kSignals).kind, Step::Kind::ask);
  ASSERT_TRUE(c.on_ask_failed(t0, t0 + 100ms, Claim::Failure::in_doubt));
  ASSERT_EQ(c.next(t0 + 100ms, kSignals).kind, Step::Kind::give_up);
  c.on_gave_up(handed_off(9, 400ms), t0 + 100ms);
  ASSERT_EQ(c.next(t0 + 101ms, kSignals).kind, Step::Kind::granted);
  EXPECT_TRUE(c.owns(t0 + 498ms));
  EXPECT_FALSE(c.owns(t0 + 499ms));
}

// The server counts the remaining time from its clock read in whole ms: the
// grant's deadline may fall up to 1 ms before send + remaining, so the claim
// believes 1 ms less (a renewal's and a handoff's likewise).
TEST_F(ClaimTest, AnAcquireGrantLastsItsRemainingTimeFromTheSend) {
  claim.begin("pm:1", true, std::nullopt, "n");
  ASSERT_EQ(claim.next(t0, kSignals).kind, Step::Kind::ask);
  claim.on_acquired(granted(5, 700ms), t0);
  ASSERT_EQ(claim.next(t0 + 1ms, kSignals).kind, Step::Kind::granted);
  EXPECT_TRUE(claim.owns(t0 + 698ms));
  EXPECT_FALSE(claim.owns(t0 + 699ms));
}

// A signalled handoff lasts min(lease, liveness) from the last call that saw
// the member waiting: the server's deadline is no earlier (defect 3).
TEST_F(ClaimTest, ASignalledGrantLastsTheShorterOfLeaseAndLiveness) {
  Claim c{detail::ClaimConfig{1, 1000ms, 3000ms, false}, counters};
  c.begin("pm:1", true, std::nullopt, "n");
  ASSERT_EQ(c.next(t0, kSignals).kind, Step::Kind::ask);
  c.on_acquired(queued(7, 0), t0);
  c.on_beat("pm:1", false, 1000ms, beat_result(BeatResult::Status::waiting, 0, 800), t0 + 200ms);
  ASSERT_TRUE(c.on_signal("pm:1", 7));
  ASSERT_EQ(c.next(t0 + 300ms, kSignals).kind, Step::Kind::granted);
  EXPECT_TRUE(c.owns(t0 + 1198ms));
  EXPECT_FALSE(c.owns(t0 + 1199ms));
}

// Defect 5: a holder that does not renew is still checked each round (lease
// 0: reported, not renewed), so an eviction is learned in one interval.
TEST_F(ClaimTest, ANonRenewingHolderIsCheckedNotRenewed) {
  Claim c{detail::ClaimConfig{1, 8000ms, 3000ms, false}, counters};
  c.begin("pm:1", true, std::nullopt, "n");
  ASSERT_EQ(c.next(t0, kSignals).kind, Step::Kind::ask);
  c.on_acquired(granted(5, 8000ms), t0);
  ASSERT_EQ(c.next(t0 + 1ms, kSignals).kind, Step::Kind::granted);
  Effects fx;
  auto item = c.beat_item(t0 + 1000ms, fx);
  ASSERT_TRUE(item);
  EXPECT_TRUE(item->holder);
  EXPECT_EQ(item->lease, 0ms);
  fx = c.on_beat("pm:1", true, 0ms, beat_result(BeatResult::Status::gone, 0), t0 + 1000ms);
  EXPECT_TRUE(fx.lost);
  EXPECT_FALSE(c.owns(t0 + 1001ms));
}

// Defect 8: a waiter within the permits learns the holder's deadline from
// its heartbeat too, and wakes then (a handoff to a dead waiter expires).
TEST_F(ClaimTest, AHeartbeatTellsTheHeadWhenTheHolderExpires) {
  queue();
  claim.on_beat("pm:1", false, 10000ms, beat_result(BeatResult::Status::waiting, 0, 500), t0 + 100ms);
  const Step s = claim.next(t0 + 101ms, kSignals);
  ASSERT_EQ(s.kind, Step::Kind::wait);
  EXPECT_LE(s.until, t0 + 100ms + 503ms);
  EXPECT_GE(s.until, t0 + 100ms + 500ms);
}

TEST_F(ClaimTest, WithoutSignalsTheHeadPollsAndTheTimerCounts) {
  queue();
  claim.on_acquired(queued(7, 0), t0);
  const detail::WaitContext polling{false, false, 1000ms};
  Step s = claim.next(t0, polling);
  EXPECT_EQ(s.until, t0 + 10ms);
  EXPECT_EQ(claim.next(t0 + 10ms, polling).kind, Step::Kind::ask);
  EXPECT_EQ(counters.snapshot().wakes_timer, 1u);
}

TEST_F(ClaimTest, HeldThenLostThenReleaseSaysSo) {
  queue();
  claim.on_signal("pm:1", 7);
  ASSERT_EQ(claim.next(t0 + 1ms, kSignals).kind, Step::Kind::granted);
  auto fx = claim.on_beat("pm:1", true, 10000ms, beat_result(BeatResult::Status::gone, 0), t0 + 2ms);
  ASSERT_TRUE(fx.lost);
  EXPECT_FALSE(claim.owns(t0 + 3ms));
  auto plan = claim.begin_release();
  EXPECT_EQ(plan.kind, detail::ReleasePlan::Kind::release);
  EXPECT_FALSE(plan.lost_reason.empty());
  EXPECT_EQ(claim.begin_release().kind, detail::ReleasePlan::Kind::not_held);
}

// An operator's eviction ends a wait, whether an acquire or a heartbeat
// tells it: the claim is idle, in no queue (nothing to leave), and a new
// wait may begin; a gone entry (expired) is asked about instead.
TEST_F(ClaimTest, AnEvictionEndsTheWait) {
  queue();
  Acquired evicted;
  evicted.status = Acquired::Status::evicted;
  claim.on_acquired(evicted, t0 + 1ms);
  EXPECT_EQ(claim.next(t0 + 2ms, kSignals).kind, Step::Kind::evicted);
  EXPECT_FALSE(claim.waiting());
  EXPECT_EQ(claim.begin_release().kind, detail::ReleasePlan::Kind::not_held);
  queue();
  auto fx = claim.on_beat("pm:1", false, 10000ms, beat_result(BeatResult::Status::gone, 0), t0 + 3ms);
  EXPECT_EQ(claim.next(t0 + 4ms, kSignals).kind, Step::Kind::ask);  // expired: asks, and queues anew
  claim.on_acquired(queued(9, 0), t0 + 4ms);
  fx = claim.on_beat("pm:1", false, 10000ms, beat_result(BeatResult::Status::evicted, 0), t0 + 5ms);
  EXPECT_TRUE(fx.wake);
  EXPECT_EQ(claim.next(t0 + 6ms, kSignals).kind, Step::Kind::evicted);
  EXPECT_FALSE(claim.waiting());
}

// An evicted holder's grant is lost, as any grant that is gone, and says why.
TEST_F(ClaimTest, AnEvictedHolderHasLostItsGrant) {
  queue();
  claim.on_signal("pm:1", 7);
  ASSERT_EQ(claim.next(t0 + 1ms, kSignals).kind, Step::Kind::granted);
  auto fx = claim.on_beat("pm:1", true, 10000ms, beat_result(BeatResult::Status::evicted, 0), t0 + 2ms);
  ASSERT_TRUE(fx.lost);
  EXPECT_NE(fx.lost->find("evicted"), std::string::npos) << *fx.lost;
  EXPECT_FALSE(claim.owns(t0 + 3ms));
  EXPECT_EQ(claim.begin_release().lost_reason, *fx.lost);
}

// The release of a grant that came after queueing says so (the script then
// skips the inline holder's key); one granted at once does not.
TEST_F(ClaimTest, AReleaseSaysWhetherTheMemberQueuedFirst) {
  queue();
  claim.on_signal("pm:1", 7);
  ASSERT_EQ(claim.next(t0 + 1ms, kSignals).kind, Step::Kind::granted);
  EXPECT_TRUE(claim.begin_release().queued_first);
  claim.begin("pm:2", true, std::nullopt, "n");
  ASSERT_EQ(claim.next(t0, kSignals).kind, Step::Kind::ask);
  Acquired at_once;
  at_once.status = Acquired::Status::granted;
  at_once.fence = 9;
  claim.on_acquired(at_once, t0);
  ASSERT_EQ(claim.next(t0 + 1ms, kSignals).kind, Step::Kind::granted);
  const auto plan = claim.begin_release();
  EXPECT_EQ(plan.kind, detail::ReleasePlan::Kind::release);
  EXPECT_FALSE(plan.queued_first);
}

// A grant found lost stays the claim's until release() takes it (and
// releases its member, which may linger in Redis): a new wait before that
// is refused, so the holder's release() never meets a later wait's grant.
TEST_F(ClaimTest, ANewWaitAfterALossIsRefusedUntilTheLostGrantIsReleased) {
  queue();
  claim.on_signal("pm:1", 7);
  ASSERT_EQ(claim.next(t0 + 1ms, kSignals).kind, Step::Kind::granted);
  EXPECT_THROW(claim.begin("pm:2", true, std::nullopt, "n"), std::logic_error);  // held
  Effects fx;
  EXPECT_FALSE(claim.beat_item(t0 + 20000ms, fx));  // the lease ran out locally
  ASSERT_TRUE(fx.lost);
  EXPECT_THROW(claim.begin("pm:2", true, std::nullopt, "n"), std::logic_error);  // lost, not yet released
  const auto plan = claim.begin_release();
  EXPECT_EQ(plan.kind, detail::ReleasePlan::Kind::release);
  EXPECT_EQ(plan.member, "pm:1");
  EXPECT_FALSE(plan.lost_reason.empty());
  EXPECT_NO_THROW(claim.begin("pm:2", true, std::nullopt, "n"));
}

TEST_F(ClaimTest, ShutdownIsItsOwnState) {
  queue();
  claim.on_signal("pm:1", 7);
  ASSERT_EQ(claim.next(t0 + 1ms, kSignals).kind, Step::Kind::granted);
  EXPECT_EQ(claim.on_shutdown(), std::optional<std::string>("pm:1"));
  EXPECT_EQ(claim.begin_release().kind, detail::ReleasePlan::Kind::released_at_shutdown);
}

// A registered claim, as the session sees it.
struct Member : detail::SessionMember {
  detail::Keys k{"p", "n"};
  const detail::Keys& keys() const noexcept override { return k; }
  const std::string& name() const noexcept override {
    static const std::string n = "n";
    return n;
  }
  std::uint32_t permits() const noexcept override { return 1; }
  std::optional<Beat> beat_item(SteadyTime) override { return std::nullopt; }
  void on_beat(const Beat&, BeatResult, SteadyTime) override {}
  void on_beat_error(const Beat&, const std::string&) override {}
  bool on_signal(const std::string&, std::uint64_t) override { return false; }
  bool kick() override { return false; }
  std::optional<std::uint64_t> waiting_ticket() const override { return std::nullopt; }
  std::optional<std::string> on_shutdown() override { return std::nullopt; }
};

TEST(Session, HeartbeatFollowsTheShortestLeaseInUseNow) {
  detail::Counters counters;
  spdlog::logger log("test", std::make_shared<spdlog::sinks::null_sink_mt>());
  detail::Session session(3000ms, counters, log);
  EXPECT_EQ(session.heartbeat_period(), 1000ms);  // a third of liveness
  auto long_lease = std::make_shared<Member>(), short_lease = std::make_shared<Member>();
  session.enlist("m-long", long_lease, 60000ms);
  EXPECT_EQ(session.heartbeat_period(), 1000ms);
  session.enlist("m-short", short_lease, 300ms);
  EXPECT_EQ(session.heartbeat_period(), 100ms);
  session.delist("m-short");
  EXPECT_EQ(session.heartbeat_period(), 1000ms);  // back up once the short lease is gone
  short_lease.reset();
  session.enlist("m-short2", std::make_shared<Member>(), 30ms);  // destroyed at once: swept later
  EXPECT_EQ(session.heartbeat_period(), 10ms);
}

}  // namespace
}  // namespace fairlock::test
