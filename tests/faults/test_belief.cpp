// The history checker's rules over the user's view (history.h, belief.cpp):
// each must catch its violation in a hand-made history, and pass the
// correct history next to it.
#include <gtest/gtest.h>

#include <algorithm>

#include "history.h"

namespace fairlock::faults {
namespace {

// A lock grant believed on CLOCK_MONOTONIC over [m_start, m_end], released
// with `unlock`; its recorder times are far apart (1000 s later) so that only
// the belief can make it overlap.
GrantRec belief(const std::string& gid, std::uint64_t fence, Micros m_start, Micros m_end,
                const std::string& unlock = "ok") {
  GrantRec g;
  g.gid = gid;
  g.wid = "w" + gid;
  g.name = "n";
  g.fence = fence;
  g.t_call = 1000000000 * static_cast<Micros>(fence);
  g.start = g.t_call + 10;
  g.end = g.start + 10;
  g.owned_start = g.owned_end = true;
  g.m_start = m_start;
  g.m_end = m_end;
  g.m_owned = true;
  g.unlock_result = unlock;
  g.op = "lock";
  return g;
}

CheckResult run(History h, CheckConfig cfg = CheckConfig()) {
  cfg.allowed_unlock = {"ok", "lost", "conn"};
  return check(h, cfg);
}

History of(std::vector<GrantRec> gs) {
  History h;
  h.grants = std::move(gs);
  return h;
}

bool mentions(const CheckResult& r, const std::string& what) {
  return std::any_of(r.violations.begin(), r.violations.end(),
                     [&](const std::string& v) { return v.find(what) != std::string::npos; });
}

TEST(Belief, OverlapOnTheMonotonicClockIsFlagged) {
  auto clean = run(of({belief("1", 1, 100, 200), belief("2", 2, 200, 300)}));
  EXPECT_TRUE(clean.violations.empty()) << clean.violations.front();
  EXPECT_EQ(clean.overlaps, 0u);
  auto r = run(of({belief("1", 1, 100, 201), belief("2", 2, 200, 300)}));
  EXPECT_TRUE(mentions(r, "2 holders believed valid at once for 1 permit(s)")) << r.violations.size();
  EXPECT_EQ(r.overlaps, 1u);
}

// Released after its lease: the belief ends at the last sample that
// confirmed it, not at the release.
TEST(Belief, ABeliefEndsAtItsLastConfirmedSample) {
  GrantRec a = belief("1", 1, 100, 500, "lost");
  a.owned_end = false;
  a.m_last = 180;
  a.lost_cb = a.start;
  EXPECT_TRUE(run(of({a, belief("2", 2, 181, 300)})).violations.empty());
  EXPECT_TRUE(mentions(run(of({a, belief("2", 2, 179, 300)})), "holders believed valid at once"));
}

// An async grant whose callback found owns_lock() already false was never
// believed: it overlaps nothing.
TEST(Belief, AGrantNeverConfirmedIsNoBelief) {
  GrantRec late = belief("2", 2, 150, 150, "lost");
  late.m_owned = false;
  late.op = "async";
  EXPECT_TRUE(run(of({belief("1", 1, 100, 200), late})).violations.empty());
}

// Only a pause of the earlier holder, inside its belief and before the later
// belief began, explains an overlap (counted apart).
TEST(Belief, OnlyAPauseOfTheEarlierHolderBeforeTheLaterBeliefExplainsAnOverlap) {
  History h = of({belief("1", 1, 100, 400), belief("2", 2, 300, 500)});
  h.pauses.push_back({"w1", 150, 280});
  auto explained = run(h);
  EXPECT_TRUE(explained.violations.empty()) << explained.violations.front();
  EXPECT_EQ(explained.paused_overlaps, 1u);
  EXPECT_EQ(explained.overlaps, 0u);
  h.pauses = {{"w1", 310, 350}};  // after the later belief began
  EXPECT_TRUE(mentions(run(h), "holders believed valid at once"));
  h.pauses = {{"w2", 150, 280}};  // the later holder's
  EXPECT_TRUE(mentions(run(h), "holders believed valid at once"));
  h.pauses = {{"w1", 50, 280}};  // began before the belief
  EXPECT_TRUE(mentions(run(h), "holders believed valid at once"));
}

TEST(Belief, FencesRiseInTheOrderBeliefsBegin) {
  EXPECT_TRUE(mentions(run(of({belief("1", 5, 100, 200), belief("2", 4, 300, 400)})), "began after fence 5"));
  EXPECT_TRUE(mentions(run(of({belief("1", 5, 100, 200), belief("2", 5, 300, 400)})), "granted twice"));
}

// A lock grant taken over (another grant of a higher fence returned before
// its holder began to release) must be reported lost.
TEST(Belief, ATakeoverMustBeReportedLost) {
  auto pair = [](const std::string& unlock) {
    GrantRec a = belief("1", 1, 100, 200, unlock);
    a.start = 1000;
    a.end = 5000;  // its release began then (recorder TIME)
    GrantRec b = belief("2", 2, 300, 400);
    b.start = 3000;  // returned before a's release began
    return of({a, b});
  };
  auto r = run(pair("ok"));
  EXPECT_TRUE(mentions(r, "grant 1 of n fence 1 was taken over (fence 2")) << r.violations.size();
  auto lost = run(pair("lost"));
  EXPECT_TRUE(lost.violations.empty()) << lost.violations.front();
  EXPECT_EQ(lost.taken_over, 1u);
  EXPECT_EQ(lost.taken_over_reported, 1u);
  History cb = pair("ok");
  cb.grants[0].lost_cb = 4000;
  EXPECT_TRUE(run(cb).violations.empty());
  auto transit = run(pair("conn"));
  EXPECT_TRUE(transit.violations.empty()) << transit.violations.front();
  EXPECT_EQ(transit.outcomes["loss-unknowable"], 1u);
  History after = pair("ok");
  after.grants[1].start = 5000;  // granted once a's release began: a handoff
  auto handoff = run(after);
  EXPECT_TRUE(handoff.violations.empty()) << handoff.violations.front();
  EXPECT_EQ(handoff.taken_over, 0u);
}

// A wait that reported no grant while owns_lock() said held: flagged, and
// its belief overlaps the next holder's.
TEST(Belief, APhantomGrantIsFlaggedAndTakesPartInMutualExclusion) {
  GrantRec phantom = belief("1", 1, 100, 300);
  phantom.op = "phantom:for";
  auto r = run(of({phantom, belief("2", 2, 200, 400)}));
  EXPECT_TRUE(mentions(r, "grant 1 of n fence 1: for reported no grant, yet owns_lock() said held after it"));
  EXPECT_TRUE(mentions(r, "2 holders believed valid at once"));
}

WaitRec wait(const std::string& id, long timeout_ms, std::vector<std::pair<std::string, Micros>> calls) {
  WaitRec w;
  w.id = id;
  w.wid = "w";
  w.name = "n";
  w.op = timeout_ms < 0 ? "async" : "asyncfor";
  w.m_call = 1000;
  w.timeout_ms = timeout_ms;
  w.calls = std::move(calls);
  return w;
}

TEST(Belief, EveryAcceptedWaitIsCalledBackExactlyOnceByItsDeadline) {
  History h;
  h.waits["w.a0.1"] = wait("w.a0.1", -1, {{"granted", 5000}});
  h.waits["w.a0.2"] = wait("w.a0.2", 100, {{"timeouterr", 101000}});
  auto clean = run(h);
  EXPECT_TRUE(clean.violations.empty()) << clean.violations.front();
  EXPECT_EQ(clean.waits, 2u);
  EXPECT_EQ(clean.callbacks, 2u);
  History twice;
  twice.waits["w.a0.1"] = wait("w.a0.1", -1, {{"granted", 5000}, {"cancelled", 6000}});
  EXPECT_TRUE(mentions(run(twice), "was called back 2 times: granted cancelled"));
  History never;
  never.waits["w.a0.1"] = wait("w.a0.1", -1, {});
  EXPECT_TRUE(mentions(run(never), "was never called back"));
  CheckConfig killed;
  killed.killed = {"w"};
  EXPECT_TRUE(run(never, killed).violations.empty());
  History refused;
  refused.waits["w.a0.1"] = wait("w.a0.1", -1, {{"cancelled", 5000}});
  refused.waits["w.a0.1"].m_call = -1;  // lock_async threw: no A record
  EXPECT_TRUE(mentions(run(refused), "a callback ran for a wait that was never accepted"));
  History late;
  late.waits["w.a0.1"] = wait("w.a0.1", 100, {{"timeouterr", 1000 + 100000 + 8000001}});
  EXPECT_TRUE(mentions(run(late), "was called back after 8100 ms"));
}

}  // namespace
}  // namespace fairlock::faults
