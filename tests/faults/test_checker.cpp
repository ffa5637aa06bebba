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
    std::vector<std::string> v = {"evalsha", std::string(sha), "5", key("q"), key("w"), key("h"), key("g"), key("seq")};
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

// An uncontended grant kept inline in the record (seq), as acquire writes it.
void inline_grant(Feed& f, const std::string& member, const std::string& fence) {
  f.script(acquire_sha, {member, "1", "1000", "1000", "q"});
  f.line(true, {"HMGET", key("seq"), "v", "s", "o", "d", "t", "p", "x"});
  f.line(true, {"EXISTS", key("q"), key("h"), key("g")});
  f.line(true, {"HSET", key("seq"), "v", "4", "s", fence, "o", member, "d", std::to_string(f.ms() + 1000), "t",
                std::to_string(f.ms()), "p", "1"});
}

TEST(ServerLogReplay, InlineGrantReleasedByItsOwnerPasses) {
  Feed f;
  inline_grant(f, "pa:1", "5");
  f.script(heartbeat_sha, {"1", "1000", "pa:1", "1000"});  // the fast path renews it
  f.line(true, {"HSET", key("seq"), "d", std::to_string(f.ms() + 1000)});
  f.script(release_sha, {"pa:1", "1"});
  f.line(true, {"HDEL", key("seq"), "o", "d", "t", "p"});
  inline_grant(f, "pb:2", "6");
  EXPECT_TRUE(f.done().empty()) << f.done().front();
  ASSERT_EQ(f.log.grants().size(), 2u);
  EXPECT_EQ(f.log.grants()[0].member, "pa:1");
  EXPECT_EQ(f.log.grants()[0].fence, 5u);
}

// Contention moves the inline holder into h and g with its fence: not a new
// grant, not a removal; the queue then hands off in order.
TEST(ServerLogReplay, InflateMovesTheInlineHolderWithoutANewGrant) {
  Feed f;
  inline_grant(f, "pa:1", "5");
  std::string deadline = std::to_string(f.ms() + 1000), since = std::to_string(f.ms());
  f.script(acquire_sha, {"pb:2", "1", "1000", "1000", "q"});
  f.line(true, {"HMGET", key("seq"), "v", "s", "o", "d", "t", "p", "x"});
  f.line(true, {"HDEL", key("seq"), "o", "d", "t"});
  f.line(true, {"ZADD", key("h"), deadline, "pa:1"});
  f.line(true, {"HSET", key("g"), "pa:1", "5:" + since});
  f.line(true, {"HSET", key("seq"), "v", "4", "s", "6"});
  f.line(true, {"ZADD", key("q"), "6", "pb:2"});
  f.line(true, {"ZADD", key("w"), std::to_string(f.ms() + 1000), "pb"});
  f.line(true, {"PEXPIREAT", key("h"), std::to_string(f.ms() + 7000)});
  EXPECT_TRUE(f.done().empty()) << f.done().front();
  EXPECT_EQ(f.log.grants().size(), 1u);
  f.script(release_sha, {"pa:1", "1"});
  f.line(true, {"HMGET", key("seq"), "v", "s", "o", "d", "t", "p", "x"});
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

TEST(ServerLogReplay, FlagsAnInlineGrantWhoseFenceIsNotAboveTheLast) {
  Feed f;
  inline_grant(f, "pa:1", "5");
  f.script(release_sha, {"pa:1", "1"});
  f.line(true, {"HDEL", key("seq"), "o", "d", "t", "p"});
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

TEST(ServerLogReplay, FlagsALiveInlineHolderDroppedByAnotherScript) {
  Feed f;
  inline_grant(f, "pa:1", "5");
  f.line(false, {"ping"}, f.t + 2000000);  // pa:1's deadline has passed: another may take the name
  inline_grant(f, "pb:2", "6");
  EXPECT_TRUE(f.done().empty()) << f.done().front();
  f.script(heartbeat_sha, {"1", "1000", "pc:3", "1000"});
  f.line(true, {"HDEL", key("seq"), "o", "d", "t"});  // pb:2's deadline is still ahead, and no move
  EXPECT_TRUE(any(f.done(), "live holder pb:2"));
}

// A version 1 counter (a STRING) rewritten as a record keeps the last fence.
TEST(ServerLogReplay, VersionOneMigrationKeepsTheLastFence) {
  Feed f;
  inline_grant(f, "pa:1", "7");
  f.script(release_sha, {"pa:1", "1"});
  f.line(true, {"HDEL", key("seq"), "o", "d", "t", "p"});
  f.script(acquire_sha, {"pb:2", "1", "1000", "1000", "q"});
  f.line(true, {"TYPE", key("seq")});
  f.line(true, {"DEL", key("seq")});
  f.line(true, {"HSET", key("seq"), "v", "4", "s", "7"});
  EXPECT_TRUE(f.done().empty()) << f.done().front();
  inline_grant(f, "pb:2", "7");
  EXPECT_TRUE(any(f.done(), "fence 7 granted after fence 7"));
}

// The live log against a real server and the real library: no violations,
// and every grant the clients saw is one the server made.
TEST(ServerLogReplay, FollowsALiveServer) {
  ServerLog log(test::server().port());
  Options o;
  o.url = test::server().url();
  o.liveness_ttl = 900ms;
  Client client(o);
  std::string name = "replay-live:" + std::to_string(::getpid());
  std::vector<std::uint64_t> fences;
  std::mutex mu;
  std::vector<std::thread> ts;
  for (int i = 0; i < 4; ++i) {
    ts.emplace_back([&] {
      FairLock lock(client, name);
      for (int j = 0; j < 10; ++j) {
        lock.lock();
        {
          std::lock_guard<std::mutex> lk(mu);
          fences.push_back(lock.fence());
        }
        lock.unlock();
      }
    });
  }
  for (auto& t : ts) t.join();
  ASSERT_TRUE(log.stop());
  for (const auto& v : log.violations()) ADD_FAILURE() << v;
  std::set<std::uint64_t> server_fences;
  for (const auto& g : log.grants()) {
    if (g.name == name) server_fences.insert(g.fence);
  }
  EXPECT_EQ(server_fences.size(), 40u);
  for (auto f : fences) EXPECT_TRUE(server_fences.count(f)) << f;
}

}  // namespace
}  // namespace fairlock::faults
