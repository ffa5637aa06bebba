// The checkers must be able to fail: crafted histories and crafted MONITOR
// streams with known violations are flagged, clean ones are not.
#include <fairlock/fairlock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

#include "fairlock_lua.h"
#include "scenario.h"

namespace fairlock::faults {
namespace {

GrantRec grant(const std::string& gid, std::uint64_t fence, Micros start, Micros end, std::uint32_t permits = 1) {
  GrantRec g;
  g.gid = gid;
  g.wid = "w" + gid;
  g.name = "n";
  g.permits = permits;
  g.fence = fence;
  g.t_call = start - 10;
  g.start = start;
  g.end = end;
  g.owned_start = g.owned_end = true;
  g.unlock_result = "ok";
  g.op = "lock";
  return g;
}

CheckResult run(std::vector<GrantRec> gs, const CheckConfig& cfg = CheckConfig()) {
  History h;
  h.grants = std::move(gs);
  return check(h, cfg);
}

bool any(const std::vector<std::string>& vs, const std::string& what) {
  return std::any_of(vs.begin(), vs.end(), [&](const std::string& v) { return v.find(what) != std::string::npos; });
}

bool mentions(const CheckResult& r, const std::string& what) { return any(r.violations, what); }

TEST(Checker, CleanHistoryPasses) {
  auto r = run({grant("1", 1, 100, 200), grant("2", 2, 200, 300), grant("3", 5, 350, 400)});
  EXPECT_TRUE(r.violations.empty()) << r.violations.front();
  EXPECT_EQ(r.valid, 3u);
  EXPECT_EQ(r.max_concurrent, 1u);
}

TEST(Checker, FlagsTwoHoldersOfALock) {
  auto r = run({grant("1", 1, 100, 200), grant("2", 2, 199, 300)});
  EXPECT_TRUE(mentions(r, "2 holders believed valid at once")) << r.violations.size();
}

TEST(Checker, SemaphoreAllowsPermitsHoldersButNotMore) {
  EXPECT_TRUE(run({grant("1", 1, 100, 300, 2), grant("2", 2, 150, 300, 2)}).violations.empty());
  auto r = run({grant("1", 1, 100, 300, 2), grant("2", 2, 150, 300, 2), grant("3", 3, 200, 250, 2)});
  EXPECT_TRUE(mentions(r, "3 holders believed valid at once for 2 permit(s)"));
}

// A holder killed right after its grant was believed valid at one instant:
// that point overlaps what contains it, and nothing after it.
TEST(Checker, PointIntervalsOverlapOnlyWhatContainsThem) {
  GrantRec point = grant("1", 1, 100, -1);
  point.end = -1;
  point.unlock_result.clear();
  point.last_valid = 100;
  CheckConfig cfg;
  cfg.killed = {point.wid};
  EXPECT_TRUE(run({point, grant("2", 2, 150, 300), grant("3", 3, 300, 400)}, cfg).violations.empty());
  EXPECT_TRUE(mentions(run({grant("0", 1, 50, 200),
                            [&] {
                              GrantRec p = point;
                              p.fence = 2;
                              return p;
                            }()},
                           cfg),
                       "2 holders believed valid at once"));
}

TEST(Checker, FlagsDuplicateAndDecreasingFences) {
  EXPECT_TRUE(mentions(run({grant("1", 7, 100, 200), grant("2", 7, 300, 400)}), "granted twice"));
  EXPECT_TRUE(mentions(run({grant("1", 9, 100, 200), grant("2", 8, 300, 400)}), "began after fence 9"));
  EXPECT_TRUE(mentions(run({grant("1", 0, 100, 200)}), "garbage fence"));
}

TEST(Checker, KilledOrLostHolderCountsUntilItsLastValidSample) {
  GrantRec dead = grant("1", 1, 100, -1);
  dead.end = -1;
  dead.unlock_result.clear();
  dead.last_valid = 250;
  CheckConfig cfg;
  cfg.killed = {dead.wid};
  EXPECT_TRUE(run({dead, grant("2", 2, 251, 300)}, cfg).violations.empty());
  EXPECT_TRUE(mentions(run({dead, grant("2", 2, 240, 300)}, cfg), "holders believed valid at once"));
  // Not killed: a grant must be unlocked.
  EXPECT_TRUE(mentions(run({dead}), "never unlocked"));
  // Lost at the end: valid only until the last sample.
  GrantRec lost = grant("3", 3, 100, 400);
  lost.owned_end = false;
  lost.last_valid = 150;
  lost.unlock_result = "lost";
  cfg = CheckConfig();
  cfg.allowed_unlock.insert("lost");
  EXPECT_TRUE(run({lost, grant("4", 4, 151, 300)}, cfg).violations.empty());
}

TEST(Checker, FlagsLateTimedCallsAndUnexpectedOutcomes) {
  History h;
  ReturnRec r;
  r.wid = "w";
  r.op = "for";
  r.name = "n";
  r.t_call = 0;
  r.t_ret = 9000000;
  r.timeout_ms = 100;
  r.outcome = "timeout";
  h.returns.push_back(r);
  r.t_ret = 200000;
  r.outcome = "conn";
  h.returns.push_back(r);
  CheckConfig cfg;
  cfg.deadline_slack_us = 1000000;
  auto res = check(h, cfg);
  EXPECT_TRUE(mentions(res, "returned after 9000 ms"));
  EXPECT_TRUE(mentions(res, "ended with 'conn'"));
}

// ------------------------------------------------------------ ServerLog replay

std::string key(const std::string& suffix) { return "fairlock:{n}:" + suffix; }

struct Feed {
  ServerLog log{0};
  std::int64_t t = 1700000000000000;
  void line(bool lua, const std::vector<std::string>& argv, std::int64_t at = -1) {
    if (at >= 0) t = at;
    t += 10;
    std::string s = std::to_string(t / 1000000) + "." + std::to_string(t % 1000000 + 1000000).substr(1) +
                    (lua ? " [0 lua]" : " [0 127.0.0.1:5000]");
    for (auto& a : argv) {
      s += " \"";
      for (char c : a) {
        if (c == '"' || c == '\\') s += '\\';
        s += c;
      }
      s += "\"";
    }
    log.feed(s);
  }
  void script(std::string_view sha, std::vector<std::string> args) {
    std::vector<std::string> v = {"evalsha", std::string(sha), "6",        key("q"), key("w"),
                                  key("h"),  key("g"),         key("seq"), key("o")};
    v.insert(v.end(), args.begin(), args.end());
    line(false, v);
  }
  std::int64_t ms() const { return t / 1000; }
  const std::vector<std::string>& done() {
    log.flush();
    return log.violations();
  }
};

using namespace fairlock::detail::lua;

// pa:1 holds (fence 1), as acquire writes it.
void hold(Feed& f) {
  f.script(acquire_sha, {"pa:1", "1", "1000", "1000", "q"});
  f.line(true, {"HSET", key("seq"), "p", "1"});
  f.line(true, {"ZADD", key("h"), std::to_string(f.ms() + 1000), "pa:1"});
  f.line(true, {"HSET", key("g"), "pa:1", "1"});
}

// `member` queues with `ticket`; its liveness goes into w under `w_entry`:
// its process ("pb:2" -> "pb") unless given (version 3 kept it per member).
void queue(Feed& f, const std::string& member, const std::string& ticket, std::string w_entry = "") {
  if (w_entry.empty()) w_entry = member.substr(0, member.find(':'));
  f.script(acquire_sha, {member, "1", "1000", "1000", "q"});
  f.line(true, {"ZADD", key("q"), ticket, member});
  f.line(true, {"ZADD", key("w"), std::to_string(f.ms() + 1000), w_entry});
}

// Two waiters queued behind a holder, written as the scripts would.
void setup(Feed& f) {
  hold(f);
  queue(f, "pb:2", "2");
  queue(f, "pc:3", "3");
}

TEST(ServerLogReplay, ParsesEscapedMonitorLines) {
  std::int64_t ts = 0;
  bool lua = false;
  std::vector<std::string> argv;
  ASSERT_TRUE(parse_monitor_line(R"(1700000000.000123 [0 lua] "ZADD" "fl:{a b\"c}:q" "5" "m\x01\\e")", ts, lua, argv));
  EXPECT_EQ(ts, 1700000000000123);
  EXPECT_TRUE(lua);
  ASSERT_EQ(argv.size(), 4u);
  EXPECT_EQ(argv[1], "fl:{a b\"c}:q");
  EXPECT_EQ(argv[3], std::string("m\x01\\e"));
}

TEST(ServerLogReplay, InOrderHandoffPasses) {
  Feed f;
  setup(f);
  f.script(release_sha, {"pa:1", "1"});
  f.line(true, {"ZREM", key("h"), "pa:1"});
  f.line(true, {"HDEL", key("g"), "pa:1"});
  f.line(true, {"ZREM", key("q"), "pb:2"});
  f.line(true, {"ZADD", key("h"), std::to_string(f.ms() + 500), "pb:2"});
  f.line(true, {"HSET", key("g"), "pb:2", "2:" + std::to_string(f.ms())});
  EXPECT_TRUE(f.done().empty()) << f.done().front();
  EXPECT_EQ(f.log.grants().size(), 2u);
}

// Version 6's members name their lease ("<m><cid>:<token>:<lease>"): a
// handoff to one is a grant like any other (its g field is a member's, not
// bookkeeping), and one out of ticket order is still flagged.
TEST(ServerLogReplay, AHandoffToAMemberNamingItsLeaseIsAGrant) {
  for (const bool in_order : {true, false}) {
    Feed f;
    hold(f);
    queue(f, "pb:2:500", "2");
    queue(f, "pc:3:500", "3");
    const std::string grantee = in_order ? "pb:2:500" : "pc:3:500";
    f.script(release_sha, {"pa:1", "1"});
    f.line(true, {"ZREM", key("h"), "pa:1"});
    f.line(true, {"HDEL", key("g"), "pa:1"});
    f.line(true, {"ZREM", key("q"), grantee});
    f.line(true, {"ZADD", key("h"), std::to_string(f.ms() + 500), grantee});
    f.line(true, {"HSET", key("g"), grantee, (in_order ? "2:" : "3:") + std::to_string(f.ms())});
    EXPECT_EQ(f.done().empty(), in_order) << (f.done().empty() ? "" : f.done().front());
    ASSERT_EQ(f.log.grants().size(), 2u);
    EXPECT_EQ(f.log.grants()[1].member, grantee);
  }
}

// As release writes it now: the head is popped and granted before the
// releaser leaves h, so h briefly has two entries within the script.
TEST(ServerLogReplay, AHandoffByZpopminBeforeTheHolderLeavesPasses) {
  Feed f;
  setup(f);
  f.script(release_sha, {"pa:1", "1"});
  f.line(true, {"ZPOPMIN", key("q")});
  f.line(true, {"ZSCORE", key("w"), "pb"});
  f.line(true, {"ZADD", key("h"), std::to_string(f.ms() + 500), "pb:2"});
  f.line(true, {"HSET", key("g"), "pb:2", "2:" + std::to_string(f.ms())});
  f.line(true, {"ZREM", key("h"), "pa:1"});
  f.line(true, {"HDEL", key("g"), "pa:1"});
  EXPECT_TRUE(f.done().empty()) << f.done().front();
  EXPECT_EQ(f.log.grants().size(), 2u);
}

TEST(ServerLogReplay, FlagsAPoppedHeadThatIsNotGrantedAndAHolderThatStays) {
  Feed f;
  setup(f);
  f.script(release_sha, {"pa:1", "1"});
  f.line(true, {"ZPOPMIN", key("q")});  // pops pb:2 (ticket 2), its process live
  f.line(true, {"ZSCORE", key("w"), "pb"});
  f.line(true, {"ZADD", key("h"), std::to_string(f.ms() + 500), "pc:3"});
  f.line(true, {"HSET", key("g"), "pc:3", "3:" + std::to_string(f.ms())});
  auto v = f.done();  // and pa:1 never left h
  EXPECT_TRUE(any(v, "live waiter pb:2 (ticket 2"));
  EXPECT_TRUE(any(v, "2 holders for 1 permit(s) after ZADD h pc:3"));
}

// release's fast path, DEL h g w, when the releaser was the only holder and
// nobody waits; the same DEL from a call that does not own the holder, with
// waiters queued, is flagged.
TEST(ServerLogReplay, ADelOfHIsJudgedByTheHoldersItRemoves) {
  Feed ok;
  ok.script(acquire_sha, {"pa:1", "1", "1000", "1000", "q"});
  ok.line(true, {"HSET", key("seq"), "p", "1"});
  ok.line(true, {"ZADD", key("h"), std::to_string(ok.ms() + 1000), "pa:1"});
  ok.line(true, {"HSET", key("g"), "pa:1", "1"});
  ok.script(release_sha, {"pa:1", "1"});
  ok.line(true, {"DEL", key("h"), key("g"), key("w")});
  EXPECT_TRUE(ok.done().empty()) << ok.done().front();
  Feed bad;
  setup(bad);
  bad.script(release_sha, {"pz:9", "1"});
  bad.line(true, {"DEL", key("h"), key("g"), key("w")});
  auto v = bad.done();
  EXPECT_TRUE(any(v, "live holder pa:1"));
  EXPECT_TRUE(any(v, "(DEL g) while q has 2"));
}

TEST(ServerLogReplay, FlagsAGrantThatSkipsALiveWaiter) {
  Feed f;
  setup(f);
  f.script(release_sha, {"pa:1", "1"});
  f.line(true, {"ZREM", key("h"), "pa:1"});
  f.line(true, {"HDEL", key("g"), "pa:1"});
  f.line(true, {"ZREM", key("q"), "pc:3"});
  f.line(true, {"ZADD", key("h"), std::to_string(f.ms() + 500), "pc:3"});
  f.line(true, {"HSET", key("g"), "pc:3", "3"});
  EXPECT_TRUE(any(f.done(), "while pb:2 with the smaller ticket 2 still waits"));
}

TEST(ServerLogReplay, FlagsARemovedLiveWaiterAndAnEarlyEvictedHolder) {
  Feed f;
  setup(f);
  f.script(heartbeat_sha, {"1", "1000", "pc:3", "1000"});
  f.line(true, {"ZREM", key("w"), "pb"});    // process pb's deadline is still ahead
  f.line(true, {"ZREM", key("q"), "pb:2"});  // judged by it, though pb left w first
  f.line(true, {"ZREM", key("h"), "pa:1"});  // so is pa:1's
  auto v = f.done();
  EXPECT_TRUE(any(v, "live waiter pb:2"));
  EXPECT_TRUE(any(v, "live holder pa:1"));
}

// A live process never leaves w: its waiters would lose their places in
// whichever later script removes them from q, which then finds no entry in w.
TEST(ServerLogReplay, FlagsALiveProcessTakenOutOfW) {
  Feed f;
  setup(f);
  f.script(heartbeat_sha, {"1", "1000", "pc:3", "1000"});
  f.line(true, {"ZREM", key("w"), "pb"});  // process pb's deadline is still ahead
  f.script(heartbeat_sha, {"1", "1000", "pc:3", "1000"});
  f.line(true, {"ZREM", key("q"), "pb:2"});  // a later script: pb has no w entry now
  auto v = f.done();
  ASSERT_EQ(v.size(), 1u) << testing::PrintToString(v);
  EXPECT_TRUE(any(v, "live process pb (live until"));
}

// A waiter lives as long as its process's w entry: pb's heartbeat keeps
// both its waiters live after pc's entry ran out. Taking a process out of w
// is no waiter's removal.
TEST(ServerLogReplay, FlagsAWaiterRemovedWhileItsProcessLivesButNotOnceItIsDead) {
  Feed f;
  hold(f);
  queue(f, "pb:2", "2");
  queue(f, "pc:3", "3");
  queue(f, "pb:4", "4");
  f.line(false, {"ping"}, f.t + 800000);
  f.script(heartbeat_sha, {"1", "1000", "pb:2", "1000", "pb:4", "1000"});
  f.line(true, {"ZADD", key("w"), std::to_string(f.ms() + 1000), "pb"});
  f.line(false, {"ping"}, f.t + 500000);  // pc's deadline has passed, pb's has not
  f.script(heartbeat_sha, {"1", "1000", "pz:9", "1000"});
  f.line(true, {"ZREM", key("w"), "pc"});    // prune
  f.line(true, {"ZREM", key("q"), "pc:3"});  // fine: its process is dead
  f.line(true, {"ZREM", key("q"), "pb:4"});  // not fine: pb still beats
  auto v = f.done();
  ASSERT_EQ(v.size(), 1u) << testing::PrintToString(v);
  EXPECT_TRUE(any(v, "live waiter pb:4 (ticket 4, process pb live until"));
}

// A heartbeat with a floor removes its own process's queued members at or
// below the floor that the call does not send (docs/PROTOCOL.md: ones the
// process no longer has); not one above it, nor another process's.
TEST(ServerLogReplay, AHeartbeatsFloorRemovesOnlyItsProcessesUnsentMembersAtOrBelowIt) {
  Feed f;
  hold(f);
  queue(f, "pb:2", "2");
  queue(f, "pc:3", "3");
  queue(f, "pb:4", "4");
  queue(f, "pb:5", "5");
  queue(f, "pb:6", "6");
  f.script(heartbeat_sha, {"1", "1000", "4", "pb:5", "1000"});
  f.line(true, {"ZREM", key("q"), "pb:2"});  // fine: below the floor, not sent
  f.line(true, {"ZREM", key("q"), "pb:4"});  // fine: at the floor
  EXPECT_TRUE(f.done().empty()) << f.done().front();
  f.script(heartbeat_sha, {"1", "1000", "4", "pb:5", "1000"});
  f.line(true, {"ZREM", key("q"), "pb:6"});  // not fine: above the floor
  f.line(true, {"ZREM", key("q"), "pc:3"});  // not fine: another process's
  auto v = f.done();
  ASSERT_EQ(v.size(), 2u) << testing::PrintToString(v);
  EXPECT_TRUE(any(v, "live waiter pb:6"));
  EXPECT_TRUE(any(v, "live waiter pc:3"));
}

// The first version 4 call on a version 3 name moves w from members to
// processes: neither step removes a waiter, and the waiters stay live.
TEST(ServerLogReplay, TheMoveOfWToProcessesKeepsTheWaitersLive) {
  Feed f;
  hold(f);
  queue(f, "pb:2", "2", "pb:2");  // as version 3 kept w
  queue(f, "pc:3", "3", "pc:3");
  const std::string deadline = std::to_string(f.ms() + 900);
  f.script(heartbeat_sha, {"1", "1000", "pb:2", "1000"});
  f.line(true, {"ZRANGE", key("w"), "0", "-1", "WITHSCORES"});
  f.line(true, {"ZADD", key("w"), deadline, "pb"});
  f.line(true, {"ZADD", key("w"), deadline, "pc"});
  f.line(true, {"ZREM", key("w"), "pb:2", "pc:3"});
  f.line(true, {"HSET", key("seq"), "v", "4"});
  EXPECT_TRUE(f.done().empty()) << f.done().front();
  f.script(cancel_sha, {"pz:9", "1"});
  f.line(true, {"ZREM", key("q"), "pc:3"});  // pc's moved entry is still live
  auto v = f.done();
  ASSERT_EQ(v.size(), 1u) << testing::PrintToString(v);
  EXPECT_TRUE(any(v, "live waiter pc:3"));
}

TEST(ServerLogReplay, ExpiredEntriesMayBeRemovedAndOwnersMayLeave) {
  Feed f;
  setup(f);
  f.script(cancel_sha, {"pb:2", "1"});  // the owner cancels: fine (w is its process's)
  f.line(true, {"ZREM", key("q"), "pb:2"});
  f.line(false, {"ping"}, f.t + 5000000);  // 5 s later everything has expired
  f.script(heartbeat_sha, {"1", "1000", "pz:9", "1000"});
  f.line(true, {"ZREM", key("h"), "pa:1"});
  f.line(true, {"HDEL", key("g"), "pa:1"});
  f.line(true, {"ZREM", key("w"), "pb", "pc"});  // prune: the dead processes
  f.line(true, {"ZPOPMIN", key("q")});           // fill skips pc:3, whose process is dead
  f.line(true, {"ZSCORE", key("w"), "pc"});
  f.line(true, {"DEL", key("h"), key("g"), key("w")});
  EXPECT_TRUE(f.done().empty()) << f.done().front();
}

TEST(ServerLogReplay, FlagsFencesThatDoNotIncreaseAndOvergrants) {
  Feed f;
  setup(f);
  f.script(release_sha, {"pa:1", "1"});
  f.line(true, {"ZREM", key("h"), "pa:1"});
  f.line(true, {"ZREM", key("q"), "pb:2"});
  f.line(true, {"ZADD", key("h"), std::to_string(f.ms() + 500), "pb:2"});
  f.line(true, {"HSET", key("g"), "pb:2", "1"});  // not above the last fence (1)
  f.line(true, {"ZREM", key("q"), "pc:3"});
  f.line(true, {"ZADD", key("h"), std::to_string(f.ms() + 500), "pc:3"});  // a second holder of a lock
  f.line(true, {"HSET", key("g"), "pc:3", "-4"});
  auto v = f.done();
  EXPECT_TRUE(any(v, "fence 1 granted after fence 1"));
  EXPECT_TRUE(any(v, "2 holders for 1 permit(s)"));
  EXPECT_TRUE(any(v, "garbage fence '-4'"));
}

TEST(ServerLogReplay, FlushallStartsANewEpoch) {
  Feed f;
  setup(f);
  f.line(false, {"flushall"});
  f.script(acquire_sha, {"pd:4", "1", "1000", "1000", "q"});
  f.line(true, {"HSET", key("seq"), "p", "1"});
  f.line(true, {"ZADD", key("h"), std::to_string(f.ms() + 1000), "pd:4"});
  f.line(true, {"HSET", key("g"), "pd:4", "1"});  // fences restart: not a violation
  EXPECT_TRUE(f.done().empty()) << f.done().front();
  ASSERT_EQ(f.log.losses().size(), 1u);
  EXPECT_EQ(f.log.grants().back().epoch, 1);
}

// An uncontended grant kept inline in o, as acquire writes it: the new
// ticket into the record, then o with the grant deadline as its expiry.
void inline_grant(Feed& f, const std::string& member, const std::string& fence, const std::string& lease = "1000") {
  f.script(acquire_sha, {member, "1", lease, "1000", "q"});
  f.line(true, {"TIME"});
  f.line(true, {"HMGET", key("seq"), "v", "s", "p", "x"});
  f.line(true, {"EXISTS", key("q"), key("h"), key("g")});
  f.line(true, {"GET", key("o")});
  f.line(true, {"HSET", key("seq"), "v", "5", "s", fence});
  f.line(true, {"SET", key("o"), member + " " + fence + " 1 " + std::to_string(f.ms()), "PX", lease});
}

// release's fast path: the inline holder deletes o.
void inline_release(Feed& f, const std::string& member) {
  f.script(release_sha, {member, "1"});
  f.line(true, {"GET", key("o")});
  f.line(true, {"DEL", key("o")});
}

// A waiter granted out of q keeps its ticket as its fence; one whose
// process's liveness had run out queues again with a new ticket (acquire)
// and may then be granted at once.
TEST(ServerLogReplay, AGrantWithAnotherTicketIsFlaggedUnlessTheWaiterQueuedAgainAfterItsLiveness) {
  Feed live;
  hold(live);
  queue(live, "pb:2", "2");
  live.script(acquire_sha, {"pb:2", "1", "1000", "1000", "q"});
  live.line(true, {"ZREM", key("h"), "pa:1"});  // (pa:1 is live: flagged too)
  live.line(true, {"ZREM", key("q"), "pb:2"});
  live.line(true, {"ZADD", key("h"), std::to_string(live.ms() + 1000), "pb:2"});
  live.line(true, {"HSET", key("g"), "pb:2", "7:" + std::to_string(live.ms())});
  EXPECT_TRUE(any(live.done(), "pb:2 granted fence 7 but its ticket was 2"));
  Feed dead;
  hold(dead);
  queue(dead, "pb:2", "2");
  dead.line(false, {"ping"}, dead.t + 2000000);  // pb's liveness and pa:1's lease ran out
  dead.script(acquire_sha, {"pb:2", "1", "1000", "1000", "q"});
  dead.line(true, {"ZREM", key("h"), "pa:1"});
  dead.line(true, {"HDEL", key("g"), "pa:1"});
  dead.line(true, {"ZREM", key("q"), "pb:2"});
  dead.line(true, {"ZADD", key("h"), std::to_string(dead.ms() + 1000), "pb:2"});
  dead.line(true, {"HSET", key("g"), "pb:2", "7:" + std::to_string(dead.ms())});
  EXPECT_TRUE(dead.done().empty()) << dead.done().front();
}

// The server's own grant of a higher fence before a holder began to
// release is a takeover too (test_belief.cpp has the clients' evidence):
// the holder must report the loss.
TEST(ServerLogReplay, ATakeoverSeenOnlyByTheServerMustBeReportedLost) {
  Feed f;
  inline_grant(f, "pb:2", "6");
  f.log.flush();
  GrantRec a = grant("1", 5, f.t - 100000, f.t + 5000);  // its release began 5 ms after the server granted 6
  CheckConfig cfg;
  cfg.log = &f.log;
  EXPECT_TRUE(mentions(run({a}, cfg), "grant 1 of n fence 5 was taken over (fence 6"));
  a.end = f.t;  // its release began first: a handoff, not a takeover
  EXPECT_TRUE(run({a}, cfg).violations.empty());
  a.end = f.t + 5000;
  a.unlock_result = "lost";
  cfg.allowed_unlock.insert("lost");
  EXPECT_EQ(run({a}, cfg).taken_over_reported, 1u);
}

// heartbeat's fast path renews the inline holder (never shortening it).
// As renew_inline (lua/lib.lua): PTTL, then PEXPIREAT now + lease only when
// that lengthens the grant (the script saw a shorter PTTL).
void inline_renew(Feed& f, const std::string& member, const std::string& lease = "1000", bool lengthens = true) {
  f.script(heartbeat_sha, {"1", "1000", member, lease});
  f.line(true, {"TIME"});
  f.line(true, {"HMGET", key("seq"), "v", "s", "p", "x"});
  f.line(true, {"EXISTS", key("q"), key("h"), key("g")});
  f.line(true, {"GET", key("o")});
  f.line(true, {"PTTL", key("o")});
  if (lengthens) f.line(true, {"PEXPIREAT", key("o"), std::to_string(f.ms() + std::stoll(lease))});
}

// `member` queues behind the inline holder `owner` (fence `fence`): acquire
// moves the holder into h and g (inflate) with a deadline of now + PTTL,
// `deadline`, then queues with `ticket`.
void inflate(Feed& f, const std::string& owner, const std::string& fence, std::int64_t deadline,
             const std::string& member, const std::string& ticket) {
  const std::string since = std::to_string(f.ms());
  f.script(acquire_sha, {member, "1", "1000", "1000", "q"});
  f.line(true, {"TIME"});
  f.line(true, {"HMGET", key("seq"), "v", "s", "p", "x"});
  f.line(true, {"EXISTS", key("q"), key("h"), key("g")});
  f.line(true, {"GET", key("o")});
  f.line(true, {"PTTL", key("o")});
  f.line(true, {"DEL", key("o")});
  f.line(true, {"ZADD", key("h"), std::to_string(deadline), owner});
  f.line(true, {"HSET", key("g"), owner, fence + ":" + since});
  f.line(true, {"HSET", key("seq"), "p", "1"});
  f.line(true, {"HSET", key("seq"), "v", "5", "s", ticket});
  f.line(true, {"ZADD", key("q"), ticket, member});
  f.line(true, {"ZADD", key("w"), std::to_string(f.ms() + 1000), member.substr(0, member.find(':'))});
  f.line(true, {"PEXPIREAT", key("h"), std::to_string(f.ms() + 7000)});
}

TEST(ServerLogReplay, InlineGrantRenewedAndReleasedByItsOwnerPasses) {
  Feed f;
  inline_grant(f, "pa:1", "5");
  inline_renew(f, "pa:1");
  inline_release(f, "pa:1");
  inline_grant(f, "pb:2", "6");
  EXPECT_TRUE(f.done().empty()) << f.done().front();
  ASSERT_EQ(f.log.grants().size(), 2u);
  EXPECT_EQ(f.log.grants()[0].member, "pa:1");
  EXPECT_EQ(f.log.grants()[0].fence, 5u);
  EXPECT_EQ(f.log.grants()[1].fence, 6u);
}

// Contention moves the inline holder into h and g with its fence: not a new
// grant, not a removal; the queue then hands off in order. The deadline in
// h is now + PTTL, a ms off the replay's own: the move is recognised by
// member and fence.
TEST(ServerLogReplay, InflateMovesTheInlineHolderWithoutANewGrant) {
  Feed f;
  inline_grant(f, "pa:1", "5");
  inflate(f, "pa:1", "5", f.ms() + 1001, "pb:2", "6");
  EXPECT_TRUE(f.done().empty()) << f.done().front();
  EXPECT_EQ(f.log.grants().size(), 1u);
  f.script(release_sha, {"pa:1", "1"});
  f.line(true, {"GET", key("o")});
  f.line(true, {"TIME"});
  f.line(true, {"HMGET", key("seq"), "v", "s", "p", "x"});
  f.line(true, {"ZRANGE", key("h"), "0", "1", "WITHSCORES"});
  f.line(true, {"ZPOPMIN", key("q")});
  f.line(true, {"ZSCORE", key("w"), "pb"});
  f.line(true, {"ZADD", key("h"), std::to_string(f.ms() + 500), "pb:2"});
  f.line(true, {"HSET", key("g"), "pb:2", "6:" + std::to_string(f.ms())});
  f.line(true, {"ZREM", key("h"), "pa:1"});
  f.line(true, {"HDEL", key("g"), "pa:1"});
  EXPECT_TRUE(f.done().empty()) << f.done().front();
  ASSERT_EQ(f.log.grants().size(), 2u);
  EXPECT_EQ(f.log.grants()[1].fence, 6u);
}

// The move keeps the grant's deadline (within the script's run time and a
// little slack): one cut short in the move, or by a renewal, is flagged.
TEST(ServerLogReplay, FlagsAnInlineGrantCutShortByTheMoveOrARenewal) {
  Feed move;
  inline_grant(move, "pa:1", "5");  // PX 1000
  inflate(move, "pa:1", "5", move.ms() + 1, "pb:2", "6");
  EXPECT_TRUE(any(move.done(), "moved into h with its deadline cut"));
  Feed renewal;
  inline_grant(renewal, "pa:1", "5");
  renewal.script(heartbeat_sha, {"1", "1000", "pa:1", "1000"});
  renewal.line(true, {"PTTL", key("o")});
  renewal.line(true, {"PEXPIREAT", key("o"), std::to_string(renewal.ms() + 10)});
  EXPECT_TRUE(any(renewal.done(), "deadline cut from"));
}

// An upgrade's move is recognised only out of an older record: o deleted
// and written again with the same member and fence in one script is a
// second grant of that fence, not a move.
TEST(ServerLogReplay, ASecondGrantOfTheSameFenceIsNotAMove) {
  Feed f;
  inline_grant(f, "pa:1", "5");
  f.script(acquire_sha, {"pa:1", "1", "1000", "1000", "q"});
  f.line(true, {"DEL", key("o")});
  f.line(true, {"SET", key("o"), "pa:1 5 1 " + std::to_string(f.ms()), "PX", "1000"});
  EXPECT_TRUE(any(f.done(), "fence 5 granted after fence 5"));
}

// Only the holder o held moves: another fence, or another member, put into
// h in its place is a grant (here of no new fence), and the holder is gone.
TEST(ServerLogReplay, FlagsAMoveIntoHThatChangesTheFenceOrTheMember) {
  Feed fence;
  inline_grant(fence, "pa:1", "5");
  inflate(fence, "pa:1", "4", fence.ms() + 1000, "pb:2", "6");
  EXPECT_TRUE(any(fence.done(), "fence 4 granted after fence 5"));
  Feed member;
  inline_grant(member, "pa:1", "5");
  inflate(member, "pf:9", "5", member.ms() + 1000, "pb:2", "6");
  auto v = member.done();
  EXPECT_TRUE(any(v, "fence 5 granted after fence 5"));
  EXPECT_TRUE(any(v, "live holder pa:1 (deadline"));
}

TEST(ServerLogReplay, FlagsAnInlineGrantWhoseFenceIsNotAboveTheLast) {
  Feed f;
  inline_grant(f, "pa:1", "5");
  inline_release(f, "pa:1");
  inline_grant(f, "pb:2", "5");
  EXPECT_TRUE(any(f.done(), "fence 5 granted after fence 5"));
}

TEST(ServerLogReplay, FlagsAnInlineGrantThatSkipsAWaiter) {
  Feed f;
  setup(f);  // pa:1 holds (in h), pb:2 and pc:3 wait
  inline_grant(f, "pd:4", "4");
  auto v = f.done();
  EXPECT_TRUE(any(v, "fence 4 granted to pd:4 while pb:2 with the smaller ticket 2 still waits"));
  EXPECT_TRUE(any(v, "2 holders for 1 permit(s) after an inline grant to pd:4"));
}

// A SET o over a live inline holder takes its grant away.
TEST(ServerLogReplay, FlagsAnInlineGrantOverALiveInlineHolder) {
  Feed f;
  inline_grant(f, "pa:1", "5");
  inline_grant(f, "pb:2", "6");
  auto v = f.done();
  ASSERT_EQ(v.size(), 1u) << testing::PrintToString(v);
  EXPECT_TRUE(any(v, "live holder pa:1 (deadline"));
  EXPECT_TRUE(any(v, "removed from o by acquire"));
}

// Redis deletes o when its PX runs out: the name is free again, without a
// command in the log. Deleting o is judged like a removal from h.
TEST(ServerLogReplay, FlagsALiveInlineHolderDeletedByAnotherScriptButNotAnExpiredOne) {
  Feed f;
  inline_grant(f, "pa:1", "5");
  f.line(false, {"ping"}, f.t + 2000000);  // pa:1's o has expired
  f.script(release_sha, {"pz:9", "1"});    // another's release, as drop_queue deletes
  f.line(true, {"DEL", key("h"), key("g"), key("w"), key("o")});
  inline_grant(f, "pb:2", "6");  // the name is free
  EXPECT_TRUE(f.done().empty()) << f.done().front();
  f.script(release_sha, {"pz:9", "1"});
  f.line(true, {"DEL", key("h"), key("g"), key("w"), key("o")});
  auto v = f.done();
  ASSERT_EQ(v.size(), 1u) << testing::PrintToString(v);
  EXPECT_TRUE(any(v, "live holder pb:2"));
  EXPECT_TRUE(any(v, "removed from o by release"));
}

// The operator's evict may delete the live inline holder it names; one
// that names another member may not.
TEST(ServerLogReplay, EvictMayDeleteALiveInlineHolder) {
  Feed f;
  inline_grant(f, "pa:1", "5");
  f.script(evict_sha, {"pa:1", "1"});
  f.line(true, {"TIME"});
  f.line(true, {"HMGET", key("seq"), "v", "s", "p", "x"});
  f.line(true, {"GET", key("o")});
  f.line(true, {"DEL", key("o")});
  EXPECT_TRUE(f.done().empty()) << f.done().front();
  inline_grant(f, "pb:2", "6");
  f.script(evict_sha, {"pc:3", "1"});  // evict names another member
  f.line(true, {"DEL", key("o")});
  EXPECT_TRUE(any(f.done(), "live holder pb:2"));
}

// A renewal (PTTL, then PEXPIREAT when it lengthens the grant) moves o's
// deadline later: a renewed holder is live past its first deadline.
TEST(ServerLogReplay, ARenewalByPexpireatKeepsTheInlineHolderLive) {
  Feed f;
  inline_grant(f, "pa:1", "5");
  f.line(false, {"ping"}, f.t + 800000);
  inline_renew(f, "pa:1");                // now until 1.8 s after the grant
  inline_renew(f, "pa:1", "10", false);   // no shorter: the script sends no PEXPIREAT
  f.line(false, {"ping"}, f.t + 700000);  // 1.5 s after the grant
  f.script(heartbeat_sha, {"1", "1000", "pz:9", "1000"});
  f.line(true, {"DEL", key("o")});
  auto v = f.done();
  ASSERT_EQ(v.size(), 1u) << testing::PrintToString(v);
  EXPECT_TRUE(any(v, "live holder pa:1"));
  // Without the renewal, o is gone 1.5 s after the grant.
  Feed g;
  inline_grant(g, "pa:1", "5");
  g.line(false, {"ping"}, g.t + 1500000);
  g.script(heartbeat_sha, {"1", "1000", "pz:9", "1000"});
  g.line(true, {"DEL", key("o")});
  EXPECT_TRUE(g.done().empty()) << g.done().front();
}

// The permit count counts the inline holder beside h's (one there is
// forged: o never stands beside the queue structure), until its PX runs out.
TEST(ServerLogReplay, AnInlineHolderCountsAsAHolderUntilItsPxRunsOut) {
  auto grant_in_h = [](Feed& f) {
    f.script(acquire_sha, {"pb:2", "1", "1000", "1000", "q"});
    f.line(true, {"HSET", key("seq"), "v", "5", "s", "6", "p", "1"});
    f.line(true, {"ZADD", key("h"), std::to_string(f.ms() + 1000), "pb:2"});
    f.line(true, {"HSET", key("g"), "pb:2", "6:" + std::to_string(f.ms())});
  };
  Feed live;
  inline_grant(live, "pa:1", "5");
  grant_in_h(live);
  EXPECT_TRUE(any(live.done(), "2 holders for 1 permit(s) after ZADD h pb:2"));
  Feed expired;
  inline_grant(expired, "pa:1", "5");
  expired.line(false, {"ping"}, expired.t + 2000000);
  grant_in_h(expired);
  EXPECT_TRUE(expired.done().empty()) << expired.done().front();
}

// The replay's deadline for o lies up to a ms or two before Redis's own
// (o_deadline): a script may still find o just after it. Its renewal brings
// it back, and its move into h is still a move, not a second grant of its
// fence.
TEST(ServerLogReplay, AnInlineHolderFoundJustAfterItsDeadlineHereMayStillBeRenewedOrMoved) {
  Feed moved;
  inline_grant(moved, "pa:1", "5");
  const std::int64_t granted = moved.t;
  moved.line(false, {"ping"}, granted + 1000000);  // the grant's ms + 1000: past the replay's deadline
  inflate(moved, "pa:1", "5", moved.ms() + 1, "pb:2", "6");
  EXPECT_TRUE(moved.done().empty()) << moved.done().front();
  EXPECT_EQ(moved.log.grants().size(), 1u);
  Feed renewed;
  inline_grant(renewed, "pa:1", "5");
  renewed.line(false, {"ping"}, renewed.t + 1000000);
  inline_renew(renewed, "pa:1");
  renewed.line(false, {"ping"}, renewed.t + 500000);
  renewed.script(heartbeat_sha, {"1", "1000", "pz:9", "1000"});
  renewed.line(true, {"DEL", key("o")});
  EXPECT_TRUE(any(renewed.done(), "live holder pa:1"));
}

// Redis reads its clock for PX while it runs the SET; MONITOR stamps the
// line after. A stamp late by ms (the server descheduled in between) must
// not stretch the deadline: a later grant that found o expired is no
// removal of a live holder.
TEST(ServerLogReplay, ALateMonitorStampDoesNotStretchTheInlineDeadline) {
  Feed f;
  f.script(acquire_sha, {"pa:1", "1", "1000", "1000", "q"});
  const std::int64_t start = f.t;
  f.line(true, {"HSET", key("seq"), "v", "5", "s", "5"});
  f.line(true, {"SET", key("o"), "pa:1 5 1 " + std::to_string(start / 1000), "PX", "1000"}, start + 5000);
  f.line(false, {"ping"}, start + 1002000);  // 1 s after the script's start, not yet after the SET's stamp
  inline_grant(f, "pb:2", "6");
  EXPECT_TRUE(f.done().empty()) << f.done().front();
  EXPECT_EQ(f.log.grants().size(), 2u);
}

// An older version (2 to 4) kept its inline holder in the record (o, d, t;
// its fence s). The first version 5 call moves it into o: the same grant,
// renewed as any other, and live (another script's DEL o is flagged).
TEST(ServerLogReplay, TheUpgradeMovesARecordsInlineHolderIntoO) {
  Feed f;
  const std::string d = std::to_string(f.ms() + 5000), t = std::to_string(f.ms());
  // The record version 4 left (a script's line, so the replay takes it as is).
  f.script(acquire_sha, {"pa:1", "1", "1000", "1000", "q"});
  f.line(true, {"HSET", key("seq"), "v", "4", "s", "5", "o", "pa:1", "d", d, "t", t, "p", "1"});
  f.script(acquire_sha, {"pa:1", "1", "1000", "1000", "q"});
  f.line(true, {"TIME"});
  f.line(true, {"HMGET", key("seq"), "v", "s", "p", "x"});
  f.line(true, {"HMGET", key("seq"), "o", "d", "t"});
  f.line(true, {"EXISTS", key("q"), key("h"), key("g")});
  f.line(true, {"HDEL", key("seq"), "o", "d", "t", "p"});
  f.line(true, {"SET", key("o"), "pa:1 5 1 " + t, "PX", "4990"});
  f.line(true, {"HSET", key("seq"), "v", "5"});
  f.line(true, {"PTTL", key("o")});  // the retry's renewal: 4990 ms left, not lengthened
  EXPECT_TRUE(f.done().empty()) << f.done().front();
  EXPECT_TRUE(f.log.grants().empty());
  f.script(heartbeat_sha, {"1", "1000", "pz:9", "1000"});
  f.line(true, {"DEL", key("o")});  // the moved holder is live
  EXPECT_TRUE(any(f.done(), "live holder pa:1"));
}

// The upgrade may only move the holder it took out: another member or
// fence in o is a grant, and the record's holder is gone.
TEST(ServerLogReplay, FlagsAnUpgradeThatReplacesTheRecordsInlineHolder) {
  Feed f;
  const std::string d = std::to_string(f.ms() + 5000), t = std::to_string(f.ms());
  f.script(acquire_sha, {"pa:1", "1", "1000", "1000", "q"});
  f.line(true, {"HSET", key("seq"), "v", "4", "s", "5", "o", "pa:1", "d", d, "t", t, "p", "1"});
  f.script(acquire_sha, {"pb:2", "1", "1000", "1000", "q"});
  f.line(true, {"HDEL", key("seq"), "o", "d", "t", "p"});
  f.line(true, {"SET", key("o"), "pb:2 5 1 " + t, "PX", "4990"});
  auto v = f.done();
  EXPECT_TRUE(any(v, "live holder pa:1 (deadline " + d + ") removed from the record by acquire"));
  ASSERT_EQ(f.log.grants().size(), 1u);
  EXPECT_EQ(f.log.grants()[0].member, "pb:2");
}

// A version 1 counter (a STRING) rewritten as a record keeps the last fence.
TEST(ServerLogReplay, VersionOneMigrationKeepsTheLastFence) {
  Feed f;
  inline_grant(f, "pa:1", "7");
  inline_release(f, "pa:1");
  f.script(acquire_sha, {"pb:2", "1", "1000", "1000", "q"});
  f.line(true, {"TYPE", key("seq")});
  f.line(true, {"DEL", key("seq")});
  f.line(true, {"HSET", key("seq"), "v", "5", "s", "7"});
  EXPECT_TRUE(f.done().empty()) << f.done().front();
  inline_grant(f, "pb:2", "7");
  EXPECT_TRUE(any(f.done(), "fence 7 granted after fence 7"));
}

}  // namespace
}  // namespace fairlock::faults
