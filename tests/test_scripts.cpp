// The Lua protocol, exercised directly against Redis (no C++ client logic).
#include <gtest/gtest.h>
#include <hiredis/hiredis.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>
#include <sys/time.h>

#include <chrono>
#include <functional>
#include <thread>

#include "fairlock_lua.h"
#include "net/connection.h"
#include "node/script_runner.h"
#include "node/server.h"
#include "node/server_calls.h"
#include "redis_server.h"
#include "test_util.h"

namespace fairlock::test {
namespace {

using detail::Connection;
using detail::Keys;
using detail::ReplyPtr;
using detail::Script;

// Member i of process `cid`; by default each member is of its own process
// (cid "aa" followed by i), so its liveness is its own.
std::string member(int i, char mode = 'n', const std::string& cid = "") {
  char own[17], tok[33];
  std::snprintf(own, sizeof own, "%016x", 0xaa0000 + i);
  std::snprintf(tok, sizeof tok, "%032x", i);
  return std::string(1, mode) + (cid.empty() ? own : cid) + ":" + tok;
}

// The process of a member, "<m><cid>": its key in w.
std::string proc(const std::string& member) { return member.substr(0, member.find(':')); }

std::vector<long long> ints(const redisReply& r) {
  if (r.type == REDIS_REPLY_INTEGER) return {r.integer};
  std::vector<long long> out;
  for (size_t i = 0; i < r.elements; ++i) out.push_back(r.element[i]->integer);
  return out;
}

// A heartbeat reply without its ms figures: the status and value of each
// member (the ms are checked where a test is about them).
std::vector<long long> without_ms(const std::vector<long long>& r) {
  std::vector<long long> out;
  for (std::size_t i = 0; i < r.size(); ++i) {
    if (i % 3 != 2) out.push_back(r[i]);
  }
  return out;
}

// A granted reply's status and fence, without its remaining ms.
std::vector<long long> grant_of(const std::vector<long long>& r) {
  return std::vector<long long>(r.begin(), r.begin() + static_cast<std::ptrdiff_t>(std::min<std::size_t>(2, r.size())));
}

// How this run calls the scripts: as functions, unless the environment
// says FAIRLOCK_TEST_SCRIPT_WAY=evalsha (ctest runs the suite both ways).
detail::ScriptWay script_way() {
  const char* way = std::getenv("FAIRLOCK_TEST_SCRIPT_WAY");
  return way && std::string(way) == "evalsha" ? detail::ScriptWay::evalsha : detail::ScriptWay::functions;
}

class Scripts : public ::testing::Test {
 protected:
  void SetUp() override { conn = connect(server()); }
  static std::unique_ptr<Connection> connect(const RedisServer& s) {
    return std::make_unique<Connection>(detail::Target{
        detail::parse_url(s.url()), nullptr, std::chrono::milliseconds(2000), std::chrono::milliseconds(5000)});
  }
  ReplyPtr call(Script s, std::vector<std::string> args) {
    std::vector<detail::ScriptCall> calls{{s, &keys, std::move(args)}};
    auto v = runner->run(*conn, calls, std::chrono::milliseconds(5000));
    return std::move(v[0]);
  }
  std::vector<long long> acquire(const std::string& m, int permits = 1, long lease = 10000, long live = 10000,
                                 const char* mode = "q") {
    auto r = call(Script::acquire, {m, std::to_string(permits), std::to_string(lease), std::to_string(live), mode});
    EXPECT_NE(r->type, REDIS_REPLY_ERROR) << std::string(r->str ? r->str : "");
    return ints(*r);
  }
  long long release(const std::string& m, int permits = 1) {
    return ints(*call(Script::release, {m, std::to_string(permits)}))[0];
  }
  std::vector<long long> cancel(const std::string& m) { return ints(*call(Script::cancel, {m, "1"})); }
  static std::string error_of(ReplyPtr r) {
    return r->type == REDIS_REPLY_ERROR ? std::string(r->str, r->len) : std::string("(no error)");
  }
  static std::string redis(const std::vector<std::string>& argv) { return server().cmd(argv); }
  // The member of the inline holder (o's first word), "(nil)" if none.
  std::string inline_holder() {
    const std::string o = redis({"GET", keys.o});
    return o.substr(0, o.find(' '));
  }
  // Moves deadlines in a deadline set (h: of these members; w: of their
  // processes) into the past: their leases ran out, or their processes died,
  // without a test that waits for a clock (and fails on a slow one).
  static void expire(const std::string& key, const std::vector<std::string>& entries) {
    const std::string past = std::to_string(std::stoll(redis({"TIME"}).substr(0, 10)) * 1000 - 1);
    for (const auto& e : entries) ASSERT_EQ(redis({"ZADD", key, "XX", "CH", past, e}), "1") << e;
  }
  void expire_holders(const std::vector<std::string>& members) { expire(keys.h, members); }
  void expire_waiters(const std::vector<std::string>& members) {
    std::vector<std::string> procs;
    for (const auto& m : members) procs.push_back(proc(m));
    expire(keys.w, procs);
  }
  // The server's clock in ms, as the scripts read it (TIME).
  static long long server_ms() {
    const std::string t = redis({"TIME"});  // seconds, a newline, microseconds
    const auto nl = t.find('\n');
    return std::stoll(t.substr(0, nl)) * 1000 + std::stoll(t.substr(nl + 1)) / 1000;
  }
  // Runs a script call between two readings of the server's clock: the
  // reply's ms figure at `at` must be the stored `deadline` (read after the
  // call) less the call's now, which lies between the readings (1 ms each
  // way for the rounding to ms). Returns the reply.
  static std::vector<long long> expect_left(const std::function<std::vector<long long>()>& call, std::size_t at,
                                            const std::function<std::string()>& deadline) {
    const long long t0 = server_ms();
    auto r = call();
    const long long t1 = server_ms();
    EXPECT_GT(r.size(), at);
    if (r.size() <= at) return r;
    const auto d = static_cast<long long>(std::stod(deadline()));
    EXPECT_GE(r[at], 1);
    EXPECT_GE(r[at], d - t1 - 1) << "deadline " << d;
    EXPECT_LE(r[at], d - t0 + 1) << "deadline " << d;
    return r;
  }
  std::vector<std::string> name_keys() {
    std::string all = redis({"KEYS", "fairlock:{" + name + "}:*"});
    std::vector<std::string> out;
    size_t pos = 0;
    while (!all.empty() && pos <= all.size()) {
      size_t nl = all.find('\n', pos);
      out.push_back(all.substr(pos, nl - pos));
      if (nl == std::string::npos) break;
      pos = nl + 1;
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  std::string name = unique_name("scripts");
  Keys keys{"fairlock", name};
  std::unique_ptr<Connection> conn;
  std::atomic<std::uint64_t> reloads{0};
  // Calls go through this; a test may replace it (use).
  std::unique_ptr<detail::ScriptRunner> runner = make_runner(script_way());
  std::unique_ptr<detail::ScriptRunner> make_runner(detail::ScriptWay way,
                                                    std::function<void(const std::string&)> on_fallback = nullptr) {
    return std::make_unique<detail::ScriptRunner>(
        way, [this] { ++reloads; }, std::move(on_fallback));
  }
};

TEST_F(Scripts, GrantsWhenFreeAndQueuesOtherwise) {
  auto a = acquire(member(1));
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(a[0], 1);
  EXPECT_EQ(a[2], 10000);  // the lease: granted now
  auto b = acquire(member(2));
  ASSERT_EQ(b.size(), 4u);
  EXPECT_EQ(b[0], 0);
  EXPECT_GT(b[1], a[1]);  // ticket after the first fence
  EXPECT_EQ(b[2], 0);     // first in line
  EXPECT_GT(b[3], 0);     // ms until the holder's deadline
  auto c = acquire(member(3));
  EXPECT_EQ(c[2], 1);
}

TEST_F(Scripts, RetriedAcquireReturnsSameGrant) {
  auto a = acquire(member(1));
  auto again = acquire(member(1));
  EXPECT_EQ(again, a);
  const std::string held = member(1) + " " + std::to_string(a[1]) + " 1 ";  // then the ms it was granted
  EXPECT_EQ(redis({"GET", keys.o}).substr(0, held.size()), held);
  EXPECT_EQ(redis({"EXISTS", keys.h}), "0");
  EXPECT_EQ(acquire(member(2))[0], 0);  // contention moves the holder into h
  EXPECT_EQ(acquire(member(1)), a);
  EXPECT_EQ(redis({"ZCARD", keys.h}), "1");
  EXPECT_EQ(redis({"EXISTS", keys.o}), "0");
}

// An o whose expiry is forged (none, or beyond any lease) never blocks the
// name: a contender drops it (no FLPERMITS from its value), and its owner's
// renewal gives it a real expiry again.
TEST_F(Scripts, AnInlineHolderWithAForgedExpiryNeverBlocksTheName) {
  redis({"SET", keys.o, member(9) + " 5 3 1"});  // no expiry, 3 permits
  EXPECT_EQ(acquire(member(1), 1)[0], 1);
  EXPECT_EQ(release(member(1)), 1);
  const auto held = acquire(member(2));
  ASSERT_EQ(held[0], 1);
  redis({"PEXPIRE", keys.o, "3000000000"});
  EXPECT_EQ(ints(*call(Script::heartbeat, {"1", "10000", member(2), "10000"})),
            (std::vector<long long>{2, held[1], 10000}));  // the forged expiry replaced by the lease
  EXPECT_LE(std::stoll(redis({"PTTL", keys.o})), 10000);
}

// A retry (or a heartbeat) renews an inline grant's lease, never shortens it:
// the holder may already count on the deadline it had.
TEST_F(Scripts, RenewingAnInlineGrantNeverShortensIt) {
  auto a = acquire(member(1), 1, 60000);
  const auto retried = acquire(member(1), 1, 1000);
  EXPECT_EQ(grant_of(retried), grant_of(a));
  EXPECT_GT(retried[2], 50000);  // what is left of the 60 s, not the 1 s asked for
  EXPECT_LE(retried[2], 60000);
  EXPECT_GT(std::stoll(redis({"PTTL", keys.o})), 50000);
  const auto beat = ints(*call(Script::heartbeat, {"1", "10000", member(1), "1000"}));
  EXPECT_EQ(without_ms(beat), (std::vector<long long>{2, a[1]}));
  EXPECT_GT(beat[2], 50000);
  EXPECT_LE(beat[2], 60000);
  EXPECT_GT(std::stoll(redis({"PTTL", keys.o})), 50000);
  EXPECT_EQ(acquire(member(1), 1, 120000), (std::vector<long long>{1, a[1], 120000}));
  EXPECT_GT(std::stoll(redis({"PTTL", keys.o})), 110000);
}

// Mode "f" (a fresh member's first call) queues as "q" does, without the
// two reads that look for the caller's own entries; "q" still finds them.
TEST_F(Scripts, AFirstCallQueuesWithoutLookingUpItsOwnEntries) {
  EXPECT_EQ(acquire(member(1), 1, 10000, 10000, "f")[0], 1);  // idle: granted inline, as by "q"
  const long long zscores = command_calls(server(), "zscore");
  auto first = acquire(member(2), 1, 10000, 10000, "f");
  ASSERT_EQ(first.size(), 4u);
  EXPECT_EQ(first[0], 0);
  EXPECT_EQ(first[2], 0);  // first in line
  EXPECT_GT(first[3], 0);  // ms until the holder's deadline
  EXPECT_EQ(command_calls(server(), "zscore"), zscores);
  EXPECT_EQ(acquire(member(3), 1, 10000, 10000, "f")[2], 1);
  auto again = acquire(member(2));  // a retry ("q") finds the entry: same ticket and place
  EXPECT_EQ(again[1], first[1]);
  EXPECT_EQ(again[2], 0);
  EXPECT_EQ(command_calls(server(), "zscore"), zscores + 3);  // h, w and q looked up
  EXPECT_EQ(release(member(1)), 1);
  EXPECT_EQ(grant_of(acquire(member(2))), (std::vector<long long>{1, first[1]}));  // the ticket is the fence
}

// The record's x, while ahead, tells that the queue structure exists: a
// call on a busy name needs no EXISTS. Without it, EXISTS decides; with it
// but no keys (deleted behind the scripts' backs), the call takes the queue
// path, which is right for an empty name too.
TEST_F(Scripts, ABusyNameIsKnownByItsXWithoutAnExistsCheck) {
  EXPECT_EQ(acquire(member(1))[0], 1);  // inline: no x
  EXPECT_EQ(acquire(member(2))[0], 0);  // the holder moves into h; x is set
  const long long exists = command_calls(server(), "exists");
  EXPECT_EQ(acquire(member(3), 1, 10000, 10000, "f")[2], 1);
  EXPECT_EQ(command_calls(server(), "exists"), exists);
  redis({"HDEL", keys.seq, "x"});
  EXPECT_EQ(acquire(member(4), 1, 10000, 10000, "f")[2], 2);  // still queued behind the holder
  EXPECT_EQ(command_calls(server(), "exists"), exists + 1);
  EXPECT_NE(redis({"HGET", keys.seq, "x"}), "(nil)");  // set again
  redis({"DEL", keys.q, keys.w, keys.h, keys.g});
  EXPECT_EQ(acquire(member(5))[0], 1);  // granted in h, not inline
  EXPECT_EQ(redis({"EXISTS", keys.o}), "0");
  EXPECT_NE(redis({"ZSCORE", keys.h, member(5)}), "(nil)");
  EXPECT_EQ(release(member(5)), 1);
  EXPECT_EQ(name_keys(), std::vector<std::string>{keys.seq});
}

// The keys of a busy name whose processes all died expire at x, but the
// record keeps x: the next inline grant deletes it, so an inline holder
// never stands beside an x (were the clock to step back below that x,
// has_queue would take the holder as forged and drop it).
TEST_F(Scripts, AnXLeftByExpiredKeysGoesWithTheNextInlineGrant) {
  EXPECT_EQ(acquire(member(1))[0], 1);
  EXPECT_EQ(acquire(member(2))[0], 0);
  const long long ms = std::stoll(redis({"TIME"}).substr(0, 10)) * 1000;
  redis({"DEL", keys.q, keys.w, keys.h, keys.g});  // as if expired at x
  redis({"HSET", keys.seq, "x", std::to_string(ms - 1)});
  EXPECT_EQ(acquire(member(3))[0], 1);  // inline
  EXPECT_EQ(inline_holder(), member(3));
  EXPECT_EQ(redis({"HGET", keys.seq, "x"}), "(nil)");
  EXPECT_EQ(acquire(member(4))[0], 0);
  EXPECT_EQ(release(member(3)), 1);
  EXPECT_EQ(acquire(member(4))[0], 1);
}

// An inline holder forged beside a queue is never confirmed as a holder,
// takes no permit, and its release or eviction (which delete o alone)
// leaves the queue's permit count and holders as they were.
TEST_F(Scripts, AForgedInlineHolderBesideAQueueKeepsThePermitCount) {
  EXPECT_EQ(acquire(member(1))[0], 1);
  EXPECT_EQ(acquire(member(2))[0], 0);
  for (const Script op : {Script::release, Script::evict}) {
    redis({"SET", keys.o, member(9) + " 5 1 1", "PX", "100000"});
    EXPECT_EQ(ints(*call(Script::heartbeat, {"1", "10000", member(9), "10000"})), (std::vector<long long>{0, 0, -1}));
    EXPECT_EQ(ints(*call(Script::cancel, {member(9), "1"})), std::vector<long long>{0});
    EXPECT_EQ(ints(*call(op, {member(9), "1"})), std::vector<long long>{1});
    EXPECT_EQ(redis({"EXISTS", keys.o}), "0");
    EXPECT_EQ(redis({"HGET", keys.seq, "p"}), "1");
    EXPECT_EQ(redis({"ZRANGE", keys.h, "0", "-1"}), member(1));
    EXPECT_EQ(error_of(call(Script::acquire, {member(3), "3", "1000", "1000", "q"})), "FLPERMITS 1");
  }
}

TEST_F(Scripts, ReleaseChecksOwnerAndIsIdempotent) {
  acquire(member(1));
  acquire(member(2));
  EXPECT_EQ(release(member(9)), 0);  // stranger
  EXPECT_EQ(release(member(2)), 0);  // a waiter, not a holder
  EXPECT_EQ(redis({"ZSCORE", keys.h, member(1)}) != "(nil)", true);
  EXPECT_EQ(redis({"ZCARD", keys.q}), "1");
  EXPECT_EQ(release(member(1)), 1);
  EXPECT_EQ(release(member(1)), 0);                          // repeated: harmless
  EXPECT_NE(redis({"ZSCORE", keys.h, member(2)}), "(nil)");  // the handoff survived it
}

// A release that says its member queued first ("h") skips o on the
// contended path; the hint is never trusted: wrong, it still releases
// the inline holder (one command more), and anything else is refused.
TEST_F(Scripts, AQueuedFirstHintSkipsTheInlineHolderButIsNeverTrusted) {
  acquire(member(1));
  acquire(member(2));  // contended: member 1 moves into h
  const long long gets = command_calls(server(), "get");
  EXPECT_EQ(ints(*call(Script::release, {member(1), "1", "h"})), std::vector<long long>{1});
  EXPECT_EQ(command_calls(server(), "get"), gets);                                            // o not read
  EXPECT_EQ(ints(*call(Script::release, {member(2), "1", "h"})), std::vector<long long>{1});  // handed off
  ASSERT_EQ(acquire(member(3))[0], 1);                                                        // idle: inline, in o
  EXPECT_EQ(ints(*call(Script::release, {member(3), "1", "h"})), std::vector<long long>{1});
  EXPECT_EQ(redis({"EXISTS", keys.o}), "0");
  for (const char* bad : {"", "o", "H", "hh"}) {
    EXPECT_EQ(error_of(call(Script::release, {member(3), "1", bad})).substr(0, 9), "FLBADARG ") << bad;
  }
}

TEST_F(Scripts, ReleaseHandsOffToHeadWithTicketAsFence) {
  acquire(member(1));
  auto b = acquire(member(2));
  auto c = acquire(member(3));
  EXPECT_EQ(release(member(1)), 1);
  EXPECT_EQ(redis({"HGET", keys.g, member(2)}).rfind(std::to_string(b[1]) + ":", 0), 0u);
  EXPECT_EQ(redis({"ZRANGE", keys.q, "0", "-1"}), member(3));
  // The grantee's retried acquire reports the handed-off grant, same fence.
  auto b2 = acquire(member(2));
  EXPECT_EQ(grant_of(b2), (std::vector<long long>{1, b[1]}));
  auto c2 = acquire(member(3));
  EXPECT_EQ(c2[0], 0);
  EXPECT_EQ(c2[2], 0);  // moved to the head
  EXPECT_EQ(c2[1], c[1]);
}

TEST_F(Scripts, HandoffSignalsOnlyTheGrantee) {
  const std::string cid_b = "00000000000000b1", cid_c = "00000000000000c1";
  redisContext* sub = redisConnect("127.0.0.1", server().port());
  ASSERT_TRUE(sub && !sub->err);
  auto* r = static_cast<redisReply*>(
      redisCommand(sub, "SUBSCRIBE fairlock:wake:%s fairlock:wake:%s", cid_b.c_str(), cid_c.c_str()));
  freeReplyObject(r);
  redisGetReply(sub, reinterpret_cast<void**>(&r));  // second subscribe confirmation
  freeReplyObject(r);
  acquire(member(1));
  auto b = acquire(member(2, 'p', cid_b));
  acquire(member(3, 'p', cid_c));
  release(member(1));
  ASSERT_EQ(redisGetReply(sub, reinterpret_cast<void**>(&r)), REDIS_OK);
  ASSERT_EQ(r->elements, 3u);
  EXPECT_EQ(std::string(r->element[1]->str), "fairlock:wake:" + cid_b);
  EXPECT_EQ(std::string(r->element[2]->str), member(2, 'p', cid_b) + " " + std::to_string(b[1]));
  freeReplyObject(r);
  // Nothing else was published: C was not woken.
  timeval tv{0, 200000};
  redisSetTimeout(sub, tv);
  EXPECT_NE(redisGetReply(sub, reinterpret_cast<void**>(&r)), REDIS_OK);
  redisFree(sub);
}

// Mode 's' (version 8, for Redis Cluster): the grant is SPUBLISHed on the
// grantee's shard channel of the name, "P:{N}:wake:<cid>", in the name's
// slot; a standalone server has shard channels too.
TEST_F(Scripts, ShardedModeSignalsOnlyTheGranteesShardChannel) {
  const std::string cid_b = "00000000000000b2", cid_c = "00000000000000c2";
  const std::string channel_b = "fairlock:{" + name + "}:wake:" + cid_b;
  const std::string channel_c = "fairlock:{" + name + "}:wake:" + cid_c;
  redisContext* sub = redisConnect("127.0.0.1", server().port());
  ASSERT_TRUE(sub && !sub->err);
  auto* r = static_cast<redisReply*>(redisCommand(sub, "SSUBSCRIBE %s %s", channel_b.c_str(), channel_c.c_str()));
  ASSERT_TRUE(r && r->type == REDIS_REPLY_ARRAY && r->elements == 3u);
  EXPECT_EQ(std::string(r->element[0]->str), "ssubscribe");
  freeReplyObject(r);
  redisGetReply(sub, reinterpret_cast<void**>(&r));  // second subscribe confirmation
  freeReplyObject(r);
  acquire(member(1));
  auto b = acquire(member(2, 's', cid_b));
  acquire(member(3, 's', cid_c));
  release(member(1));
  ASSERT_EQ(redisGetReply(sub, reinterpret_cast<void**>(&r)), REDIS_OK);
  ASSERT_EQ(r->elements, 3u);
  EXPECT_EQ(std::string(r->element[0]->str), "smessage");
  EXPECT_EQ(std::string(r->element[1]->str), channel_b);
  EXPECT_EQ(std::string(r->element[2]->str), member(2, 's', cid_b) + " " + std::to_string(b[1]));
  freeReplyObject(r);
  EXPECT_EQ(redis({"EXISTS", channel_b}), "0");  // no wake key, unlike mode 'k'
  // Nothing else was published: C was not woken.
  timeval tv{0, 200000};
  redisSetTimeout(sub, tv);
  EXPECT_NE(redisGetReply(sub, reinterpret_cast<void**>(&r)), REDIS_OK);
  redisFree(sub);
}

TEST_F(Scripts, KeyspaceModeWritesPerProcessWakeKey) {
  const std::string cid = "00000000000000d1";
  acquire(member(1));
  auto b = acquire(member(2, 'k', cid));
  release(member(1));
  EXPECT_EQ(redis({"GET", "fairlock:{" + name + "}:wake:" + cid}), std::to_string(b[1]));
  long long pttl = std::stoll(redis({"PTTL", "fairlock:{" + name + "}:wake:" + cid}));
  EXPECT_GT(pttl, 0);
  redis({"DEL", "fairlock:{" + name + "}:wake:" + cid});
}

// A waiter lives while its process does (w). A dead process's waiter in the
// middle of q counts in positions until it reaches the head, where it is
// skipped: nothing indexes it by process, and it blocks nobody.
TEST_F(Scripts, ADeadWaiterInTheMiddleIsSkippedWhenItReachesTheHead) {
  for (int m = 1; m <= 5; ++m) acquire(member(m));  // 1 holds, 2..5 wait
  expire_waiters({member(3)});                      // dies in the middle
  EXPECT_EQ(acquire(member(4))[2], 2);              // still counted
  ASSERT_EQ(release(member(1)), 1);
  EXPECT_NE(redis({"ZSCORE", keys.h, member(2)}), "(nil)");
  ASSERT_EQ(release(member(2)), 1);
  EXPECT_NE(redis({"ZSCORE", keys.h, member(4)}), "(nil)");  // past the dead one
  EXPECT_EQ(redis({"ZSCORE", keys.q, member(3)}), "(nil)");  // skipped, so gone
  EXPECT_EQ(acquire(member(5))[2], 0);
}

// Dead heads go one after another (fill skips them), and a release never
// revives a dead process's waiter.
TEST_F(Scripts, ReleaseSkipsDeadWaitersAtTheHead) {
  for (int m = 1; m <= 5; ++m) acquire(member(m));  // 1 holds, 2..5 wait
  expire_waiters({member(2), member(4)});
  ASSERT_EQ(release(member(1)), 1);
  EXPECT_NE(redis({"ZSCORE", keys.h, member(3)}), "(nil)");  // past the dead head
  EXPECT_EQ(redis({"ZSCORE", keys.q, member(2)}), "(nil)");  // skipped, so gone
  ASSERT_EQ(release(member(3)), 1);
  EXPECT_NE(redis({"ZSCORE", keys.h, member(5)}), "(nil)");
  EXPECT_EQ(redis({"ZCARD", keys.q}), "0");
}

// A process that was only late learns from its heartbeat that its waiters
// are gone, and the heartbeat removes them; it does not renew its liveness
// for them.
TEST_F(Scripts, AHeartbeatOfADeadProcessRemovesItsWaiters) {
  const std::string cid = "00000000000000bb";
  acquire(member(1));
  acquire(member(2, 'n', cid));
  acquire(member(3));
  acquire(member(4, 'n', cid));
  expire_waiters({member(2, 'n', cid)});
  auto r = ints(*call(Script::heartbeat, {"1", "10000", member(2, 'n', cid), "10000", member(4, 'n', cid), "10000"}));
  EXPECT_EQ(r, (std::vector<long long>{0, 0, -1, 0, 0, -1}));
  EXPECT_EQ(redis({"ZRANK", keys.q, member(3)}), "0");
  EXPECT_EQ(redis({"ZCARD", keys.q}), "1");
  EXPECT_EQ(redis({"ZSCORE", keys.w, proc(member(2, 'n', cid))}), "(nil)");  // pruned, not renewed
}

// A heartbeat renews its process's liveness (once), and removes dead waiters
// at the head while no permit is free: the first live waiter reads position
// 0, so it wakes when the holder's lease runs out.
TEST_F(Scripts, AHeartbeatRenewsItsProcessAndDropsDeadHeads) {
  acquire(member(1));
  acquire(member(2));
  acquire(member(3), 1, 10000, 1000);
  const double before = std::stod(redis({"ZSCORE", keys.w, proc(member(3))}));
  expire_waiters({member(2)});
  EXPECT_EQ(acquire(member(3))[2], 1);  // the dead head still counts
  auto r = ints(*call(Script::heartbeat, {"1", "60000", member(3), "10000"}));
  EXPECT_EQ(without_ms(r), (std::vector<long long>{1, 0}));  // ... until a heartbeat drops it
  EXPECT_GT(r[2], 0);                                        // next: the holder's deadline is ahead
  EXPECT_LE(r[2], 10000);
  EXPECT_EQ(redis({"ZSCORE", keys.q, member(2)}), "(nil)");
  EXPECT_GT(std::stod(redis({"ZSCORE", keys.w, proc(member(3))})), before + 30000);
}

// Pruning can empty w while q still holds a dead process's waiter; the next
// process to queue makes w again, and it must get its expiry like the rest.
TEST_F(Scripts, AWMadeAgainAfterPruningEmptiedItExpires) {
  acquire(member(1));
  acquire(member(2));
  expire_waiters({member(2)});
  cancel(member(9));  // not queued; its prune removes member 2's process: w is gone
  ASSERT_EQ(redis({"EXISTS", keys.w}), "0");
  ASSERT_EQ(redis({"ZCARD", keys.q}), "1");
  EXPECT_EQ(acquire(member(3))[0], 0);
  EXPECT_GT(std::stoll(redis({"PTTL", keys.w})), 0);
}

// A renewal sets now + lease but never shortens a grant: a handoff lasts to
// its process's liveness deadline, and a call sent before its client saw the
// grant must not cut short what the client counts on.
TEST_F(Scripts, ARenewalNeverShortensAGrant) {
  acquire(member(1));
  acquire(member(2), 1, 10000, 60000);
  ASSERT_EQ(release(member(1)), 1);
  const std::string handed = redis({"ZSCORE", keys.h, member(2)});
  EXPECT_EQ(ints(*call(Script::heartbeat, {"1", "60000", member(2), "1000"}))[0], 2);  // holds
  EXPECT_EQ(redis({"ZSCORE", keys.h, member(2)}), handed);
  EXPECT_EQ(acquire(member(2), 1, 1000)[0], 1);
  EXPECT_EQ(redis({"ZSCORE", keys.h, member(2)}), handed);
  call(Script::heartbeat, {"1", "60000", member(2), "120000"});
  EXPECT_GT(std::stod(redis({"ZSCORE", keys.h, member(2)})), std::stod(handed) + 30000);
}

// One w entry per process, however many waiters it has on the name.
TEST_F(Scripts, AProcessKeepsOneLivenessEntryForAllItsWaiters) {
  const std::string cid = "00000000000000bb";
  acquire(member(1));
  for (int m = 2; m <= 6; ++m) acquire(member(m, 'n', cid));
  EXPECT_EQ(redis({"ZCARD", keys.w}), "1");
  EXPECT_EQ(redis({"ZCARD", keys.q}), "5");
  // A heartbeat for all five renews the one entry and reports each place.
  std::vector<std::string> args{"1", "10000"};
  for (int m = 2; m <= 6; ++m) args.insert(args.end(), {member(m, 'n', cid), "10000"});
  auto r = ints(*call(Script::heartbeat, args));
  EXPECT_EQ(without_ms(r), (std::vector<long long>{1, 0, 1, 1, 1, 2, 1, 3, 1, 4}));
  // Members of two processes in one heartbeat: refused, nothing changes.
  EXPECT_EQ(error_of(call(Script::heartbeat, {"1", "10000", member(2, 'n', cid), "10000", member(7), "10000"})),
            "FLBADARG members of one process expected");
}

// A heartbeat's floor: the process's members queued at or below it that the
// call does not send are ones the process no longer has (a leave that
// failed, a failover's lost writes), which its other waiters would keep live
// (one w entry per process): they leave. Another process's entries, and the
// process's own queued after the floor (a claim it read after the floor),
// stay.
TEST_F(Scripts, AHeartbeatsFloorRemovesTheProcessesEntriesItNoLongerHas) {
  const std::string cid = "00000000000000bb";
  acquire(member(1));
  acquire(member(2, 'n', cid));  // abandoned
  acquire(member(3));            // another process's
  const long long floor = acquire(member(4, 'n', cid))[1];
  const long long later = acquire(member(5, 'n', cid))[1];  // queued after the floor
  auto r = ints(*call(Script::heartbeat, {"1", "10000", std::to_string(floor), member(4, 'n', cid), "10000"}));
  EXPECT_EQ(without_ms(r), (std::vector<long long>{1, 1}));
  EXPECT_EQ(redis({"ZSCORE", keys.q, member(2, 'n', cid)}), "(nil)");
  EXPECT_NE(redis({"ZSCORE", keys.q, member(3)}), "(nil)");
  EXPECT_NE(redis({"ZSCORE", keys.q, member(5, 'n', cid)}), "(nil)");
  // The floor's own member, not sent (its claim ended): it leaves too.
  r = ints(*call(Script::heartbeat, {"1", "10000", std::to_string(later), member(4, 'n', cid), "10000"}));
  EXPECT_EQ(without_ms(r), (std::vector<long long>{1, 1}));
  EXPECT_EQ(redis({"ZSCORE", keys.q, member(5, 'n', cid)}), "(nil)");
  acquire(member(5, 'n', cid));
  // A floor that is no ticket, or without a pair after it: refused, nothing changes.
  const std::string bad = "FLBADARG floor must be a ticket, an integer in [1, 2^53)";
  EXPECT_EQ(error_of(call(Script::heartbeat, {"1", "10000", "0", member(5, 'n', cid), "10000"})), bad);
  EXPECT_EQ(error_of(call(Script::heartbeat, {"1", "10000", "9007199254740992", member(5, 'n', cid), "10000"})), bad);
  EXPECT_EQ(error_of(call(Script::heartbeat, {"1", "10000", std::to_string(floor + 1)})),
            "FLBADARG member/lease pairs expected after the floor");
  EXPECT_NE(redis({"ZSCORE", keys.q, member(5, 'n', cid)}), "(nil)");
}

// Scores go to ZADD as text. A fraction (only a tampered key has one) is
// kept, not cut to an integer (which could move a deadline into the past).
TEST_F(Scripts, AHandoffKeepsAFractionalDeadlineAsItIs) {
  acquire(member(1));
  acquire(member(2));
  const std::string deadline = std::to_string(std::stoll(redis({"TIME"}).substr(0, 10)) * 1000 + 60000) + ".5";
  ASSERT_EQ(redis({"ZADD", keys.w, "XX", "CH", deadline, proc(member(2))}), "1");
  ASSERT_EQ(release(member(1)), 1);
  EXPECT_EQ(redis({"ZSCORE", keys.h, member(2)}), deadline);
}

TEST_F(Scripts, ExpiredHolderIsPrunedAndNextGranted) {
  acquire(member(1));
  auto b = acquire(member(2));
  expire_holders({member(1)});
  auto b2 = acquire(member(2));
  EXPECT_EQ(grant_of(b2), (std::vector<long long>{1, b[1]}));
  EXPECT_EQ(release(member(1)), 0);  // the expired holder's late release is refused
  EXPECT_NE(redis({"ZSCORE", keys.h, member(2)}), "(nil)");
}

TEST_F(Scripts, CancelAfterHandoffReportsTheGrant) {
  acquire(member(1));
  auto b = acquire(member(2));
  release(member(1));
  const auto c = cancel(member(2));
  EXPECT_EQ(grant_of(c), (std::vector<long long>{2, b[1]}));
  ASSERT_EQ(c.size(), 3u);
  EXPECT_GT(c[2], 0);  // the handoff's deadline: its liveness (a member without a lease), 10 s
  EXPECT_LE(c[2], 10000);
  EXPECT_NE(redis({"ZSCORE", keys.h, member(2)}), "(nil)");  // kept until released
  EXPECT_EQ(release(member(2)), 1);
  EXPECT_EQ(name_keys(), std::vector<std::string>{keys.seq});
}

TEST_F(Scripts, CancelLeavesNoTrace) {
  acquire(member(1));
  acquire(member(2));
  EXPECT_EQ(cancel(member(2)), std::vector<long long>{1});
  EXPECT_EQ(cancel(member(2)), std::vector<long long>{0});
  release(member(1));
  EXPECT_EQ(name_keys(), std::vector<std::string>{keys.seq});
}

TEST_F(Scripts, TryNeverQueuesNorBarges) {
  acquire(member(1));
  acquire(member(2));
  EXPECT_EQ(acquire(member(5), 1, 10000, 10000, "t"), std::vector<long long>{-1});
  expire_holders({member(1)});
  // The holder expired: the free permit goes to the waiter, not to the try.
  EXPECT_EQ(acquire(member(5), 1, 10000, 10000, "t"), std::vector<long long>{-1});
  EXPECT_NE(redis({"ZSCORE", keys.h, member(2)}), "(nil)");
  EXPECT_EQ(redis({"ZSCORE", keys.q, member(5)}), "(nil)");
}

TEST_F(Scripts, SemaphoreGrantsUpToPermitsInOrder) {
  for (int i = 1; i <= 3; ++i) EXPECT_EQ(acquire(member(i), 3)[0], 1);
  auto d = acquire(member(4), 3);
  auto e = acquire(member(5), 3);
  EXPECT_EQ(d[0], 0);
  EXPECT_EQ(d[2], 0);
  EXPECT_EQ(e[2], 1);
  release(member(2), 3);
  EXPECT_NE(redis({"ZSCORE", keys.h, member(4)}), "(nil)");
  EXPECT_EQ(redis({"ZCARD", keys.h}), "3");
}

TEST_F(Scripts, FencesStrictlyIncrease) {
  long long last = 0;
  for (int round = 0; round < 5; ++round) {
    auto a = acquire(member(10 + round));
    ASSERT_EQ(a[0], 1);
    EXPECT_GT(a[1], last);
    last = a[1];
    auto b = acquire(member(100 + round));
    release(member(10 + round));
    auto b2 = acquire(member(100 + round));
    ASSERT_EQ(b2[0], 1);
    EXPECT_GT(b2[1], last);
    last = b2[1];
    release(member(100 + round));
  }
}

TEST_F(Scripts, PermitsMismatchIsAnError) {
  acquire(member(1), 2);
  auto r = call(Script::acquire, {member(2), "1", "1000", "1000", "q"});
  EXPECT_EQ(error_of(std::move(r)), "FLPERMITS 2");
}

TEST_F(Scripts, MalformedArgvGetsDocumentedErrors) {
  auto bad = [&](Script s, std::vector<std::string> args) { return error_of(call(s, std::move(args))).substr(0, 9); };
  EXPECT_EQ(bad(Script::acquire, {"not-a-member", "1", "1000", "1000", "q"}), "FLBADARG ");
  EXPECT_EQ(bad(Script::acquire, {member(1), "0", "1000", "1000", "q"}), "FLBADARG ");
  EXPECT_EQ(bad(Script::acquire, {member(1), "1", "abc", "1000", "q"}), "FLBADARG ");
  EXPECT_EQ(bad(Script::acquire, {member(1), "1", "1000", "-5", "q"}), "FLBADARG ");
  EXPECT_EQ(bad(Script::acquire, {member(1), "1", "1000", "1000", "x"}), "FLBADARG ");
  EXPECT_EQ(bad(Script::acquire, {member(1)}), "FLBADARG ");
  EXPECT_EQ(bad(Script::release, {std::string("p\0x:1", 5), "1"}), "FLBADARG ");
  EXPECT_EQ(bad(Script::cancel, {member(1), "1.5"}), "FLBADARG ");
  EXPECT_EQ(bad(Script::heartbeat, {"1", "1000", member(1)}), "FLBADARG ");
  EXPECT_EQ(bad(Script::heartbeat, {"1", "1000", member(1), "-1"}), "FLBADARG ");  // 0 is a holder's check
  EXPECT_EQ(bad(Script::heartbeat, {"1", "1000", member(1), "2147483648"}), "FLBADARG ");
  EXPECT_EQ(bad(Script::acquire, {member(1) + ":0", "1", "1000", "1000", "q"}), "FLBADARG ");  // lease 1 .. 2^31-1
  EXPECT_EQ(bad(Script::acquire, {member(1) + ":01", "1", "1000", "1000", "q"}), "FLBADARG ");
  EXPECT_EQ(bad(Script::acquire, {member(1) + ":2147483648", "1", "1000", "1000", "q"}), "FLBADARG ");
  EXPECT_EQ(bad(Script::acquire, {member(1) + ":1:1", "1", "1000", "1000", "q"}), "FLBADARG ");
  EXPECT_EQ(bad(Script::acquire, {member(1) + ":", "1", "1000", "1000", "q"}), "FLBADARG ");
  EXPECT_EQ(name_keys(), std::vector<std::string>{});  // nothing stored
}

TEST_F(Scripts, HeartbeatReportsEachEntry) {
  const std::string cid = "00000000000000bb";  // one process: a heartbeat is one process's
  acquire(member(1, 'n', cid));
  acquire(member(2, 'n', cid));
  auto r = ints(*call(Script::heartbeat, {"1", "10000", member(1, 'n', cid), "10000", member(2, 'n', cid), "10000",
                                          member(3, 'n', cid), "10000"}));
  ASSERT_EQ(r.size(), 9u);
  EXPECT_EQ(r[0], 2);  // holder, fence, remaining ms (renewed: the lease)
  EXPECT_EQ(r[2], 10000);
  EXPECT_EQ(r[3], 1);  // waiter, position, next (the holder's deadline)
  EXPECT_EQ(r[4], 0);
  EXPECT_EQ(r[5], 10000);
  EXPECT_EQ(r[6], 0);  // unknown
  EXPECT_EQ(r[7], 0);
  EXPECT_EQ(r[8], -1);
}

TEST_F(Scripts, HandoffGrantBecomesFullLeaseAtHeartbeat) {
  acquire(member(1));
  acquire(member(2), 1, 10000, 5000);  // liveness 5 s
  release(member(1));
  double before = std::stod(redis({"ZSCORE", keys.h, member(2)}));
  call(Script::heartbeat, {"1", "5000", member(2), "60000"});
  double after = std::stod(redis({"ZSCORE", keys.h, member(2)}));
  EXPECT_GT(after - before, 30000);
}

// A grant handed off inside another call (here a release) lasts the
// grantee's lease, from then, but never past its process's liveness
// deadline: both ways round. Its own acquire then renews it to a lease.
TEST_F(Scripts, AHandoffLastsTheGranteesLeaseCappedByItsLiveness) {
  const std::string short_lease = member(2) + ":20000", short_liveness = member(3) + ":60000";
  acquire(member(1));
  ASSERT_EQ(acquire(short_lease, 1, 20000, 60000)[0], 0);
  ASSERT_EQ(acquire(short_liveness, 1, 60000, 20000)[0], 0);
  const long long t0 = server_ms();
  ASSERT_EQ(release(member(1)), 1);
  const long long t1 = server_ms();
  const double handed = std::stod(redis({"ZSCORE", keys.h, short_lease}));
  EXPECT_GE(handed, t0 + 20000);  // now + the lease ...
  EXPECT_LE(handed, t1 + 20000);
  EXPECT_LT(handed + 30000, std::stod(redis({"ZSCORE", keys.w, proc(short_lease)})));  // ... well before the liveness
  const auto confirmed = expect_left([&] { return acquire(short_lease, 1, 20000, 60000); }, 2,
                                     [&] {
                                       return redis({"ZSCORE", keys.h, short_lease});
                                     });
  EXPECT_EQ(confirmed[0], 1);
  const std::string liveness = redis({"ZSCORE", keys.w, proc(short_liveness)});
  ASSERT_EQ(release(short_lease), 1);
  EXPECT_EQ(redis({"ZSCORE", keys.h, short_liveness}), liveness);  // the liveness deadline, before the lease's end
}

// A heartbeat's lease 0 is a holder's check: the grant is reported with its
// fence and the time left, and not renewed (o's expiry, h's score). A
// waiter sent with 0 waits as with any lease: its process's liveness is
// renewed, and it learns when the holder's deadline comes.
TEST_F(Scripts, AHoldersCheckReportsItsGrantWithoutRenewingIt) {
  const std::string m1 = member(1) + ":60000", m2 = member(2) + ":60000";
  const auto a = acquire(m1, 1, 60000);
  ASSERT_EQ(a[0], 1);
  const std::string expiry = redis({"PEXPIRETIME", keys.o});
  const auto check = [&](const std::string& m) { return ints(*call(Script::heartbeat, {"1", "90000", m, "0"})); };
  auto r = expect_left([&] { return check(m1); }, 2, [&] { return redis({"PEXPIRETIME", keys.o}); });
  EXPECT_EQ(grant_of(r), (std::vector<long long>{2, a[1]}));
  EXPECT_EQ(redis({"PEXPIRETIME", keys.o}), expiry);
  ASSERT_EQ(acquire(m2, 1, 60000)[0], 0);  // contended: m1 moves into h
  const std::string deadline = redis({"ZSCORE", keys.h, m1});
  r = expect_left([&] { return check(m1); }, 2, [&] { return redis({"ZSCORE", keys.h, m1}); });
  EXPECT_EQ(grant_of(r), (std::vector<long long>{2, a[1]}));
  EXPECT_EQ(redis({"ZSCORE", keys.h, m1}), deadline);
  const double liveness = std::stod(redis({"ZSCORE", keys.w, proc(m2)}));
  r = expect_left([&] { return check(m2); }, 2,
                  [&]() -> const std::string& { return deadline; });  // next: the holder's deadline
  EXPECT_EQ(without_ms(r), (std::vector<long long>{1, 0}));
  EXPECT_GT(std::stod(redis({"ZSCORE", keys.w, proc(m2)})), liveness + 40000);  // now + 90 s
}

// Every granted reply's remaining ms is the grant's stored deadline less the
// call's now: inline (o's expiry) and in h, granted, retried, renewed,
// reported by cancel and heartbeat, handed off, and a free permit.
TEST_F(Scripts, EveryGrantedReplyTellsTheTimeLeftToItsStoredDeadline) {
  const std::string m1 = member(1) + ":30000", m2 = member(2) + ":30000";
  const auto o_expiry = [&] { return redis({"PEXPIRETIME", keys.o}); };
  const auto h_score = [&](const std::string& m) { return [this, m] { return redis({"ZSCORE", keys.h, m}); }; };
  const auto a = expect_left([&] { return acquire(m1, 1, 30000); }, 2, o_expiry);  // inline
  ASSERT_EQ(a[0], 1);
  EXPECT_EQ(a[2], 30000);
  EXPECT_EQ(grant_of(expect_left([&] { return acquire(m1, 1, 1000); }, 2, o_expiry)), grant_of(a));  // kept
  EXPECT_EQ(expect_left([&] { return acquire(m1, 1, 40000); }, 2, o_expiry)[2], 40000);              // renewed
  EXPECT_EQ(grant_of(expect_left([&] { return cancel(m1); }, 2, o_expiry)), (std::vector<long long>{2, a[1]}));
  ASSERT_EQ(acquire(m2, 1, 30000)[0], 0);  // m1 moves into h
  EXPECT_EQ(grant_of(expect_left([&] { return acquire(m1, 1, 1000); }, 2, h_score(m1))), grant_of(a));
  EXPECT_EQ(grant_of(expect_left([&] { return cancel(m1); }, 2, h_score(m1))), (std::vector<long long>{2, a[1]}));
  const auto beat = [&](const std::string& m, const char* lease) {
    return ints(*call(Script::heartbeat, {"1", "10000", m, lease}));
  };
  EXPECT_EQ(expect_left([&] { return beat(m1, "50000"); }, 2, h_score(m1))[2], 50000);
  ASSERT_EQ(release(m1), 1);  // handed to m2
  EXPECT_EQ(expect_left([&] { return beat(m2, "0"); }, 2, h_score(m2))[0], 2);
  EXPECT_EQ(expect_left([&] { return acquire(m2, 1, 30000); }, 2, h_score(m2))[0], 1);
  ASSERT_EQ(release(m2), 1);
  // A semaphore of 2: the second caller takes a free permit beside the
  // first (moved into h).
  ASSERT_EQ(acquire(m1, 2, 30000)[0], 1);
  const auto free = expect_left([&] { return acquire(m2, 2, 30000); }, 2, h_score(m2));
  EXPECT_EQ(free[0], 1);
  EXPECT_EQ(free[2], 30000);
}

// What the typed calls make of a reply: real replies (EVAL of a constant),
// well formed or not. A granted reply's remaining ms is 1 .. 2^31-1; any
// other shape is a ServerError, never a wrong figure.
TEST_F(Scripts, TheTypedCallsCheckTheGrantedReplyShapes) {
  const auto reply = [&](const std::string& lua) { return conn->command({"EVAL", lua, "0"}); };
  const auto granted = detail::parse_acquired(*reply("return {1, 5, 30000}"));
  EXPECT_EQ(granted.status, detail::Acquired::Status::granted);
  EXPECT_EQ(granted.fence, 5u);
  EXPECT_EQ(granted.remaining_ms, 30000);
  const auto queued = detail::parse_acquired(*reply("return {0, 7, 2, -1}"));
  EXPECT_EQ(queued.status, detail::Acquired::Status::queued);
  EXPECT_EQ(queued.ticket, 7u);
  const auto cancelled = detail::parse_cancelled(*reply("return {2, 5, 1}"));
  EXPECT_EQ(cancelled.status, detail::CancelResult::Status::granted);
  EXPECT_EQ(cancelled.remaining_ms, 1);
  for (const char* bad : {"return {1, 5}", "return {1, 5, 0}", "return {1, 5, -3}", "return {1, 5, 2147483648}",
                          "return {1, 5, 'x'}", "return {1, 0, 100}"}) {
    EXPECT_THROW(detail::parse_acquired(*reply(bad)), ServerError) << bad;
    const std::string as_cancel = std::string("return {2") + (bad + 9);  // the same shape from cancel
    EXPECT_THROW(detail::parse_cancelled(*reply(as_cancel)), ServerError) << as_cancel;
  }
}

// The typed heartbeat call sends a lease of 0 as a check and reads three
// figures per member: a waiter's next ms, a holder's remaining ms (not
// renewed by the check), -1 for a member gone.
TEST_F(Scripts, TheTypedHeartbeatReadsEachMembersMs) {
  const std::string cid = "00000000000000bb";
  const std::string holder = member(1, 'n', cid) + ":10000", waiter = member(2, 'n', cid) + ":10000";
  const auto held = acquire(holder);
  ASSERT_EQ(held[0], 1);
  ASSERT_EQ(acquire(waiter)[0], 0);  // the holder moves into h
  const std::string deadline = redis({"ZSCORE", keys.h, holder});
  detail::Counters counters;
  auto log = std::make_shared<spdlog::logger>("null", std::make_shared<spdlog::sinks::null_sink_mt>());
  detail::Server srv(detail::Target{detail::parse_url(server().url()), nullptr, std::chrono::milliseconds(2000),
                                    std::chrono::milliseconds(5000)},
                     detail::ServerConfig{1, script_way(), false, {}, {}, {}}, counters, *log);
  const std::vector<detail::BeatName> names{{&keys,
                                             1,
                                             {{holder, std::chrono::milliseconds(0)},
                                              {waiter, std::chrono::milliseconds(10000)},
                                              {member(3, 'n', cid), std::chrono::milliseconds(10000)}}}};
  const auto out = detail::heartbeat(srv, std::chrono::milliseconds(10000), names);
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].error, "");
  ASSERT_EQ(out[0].results.size(), 3u);
  const auto& h = out[0].results[0];
  EXPECT_EQ(h.status, detail::BeatResult::Status::holding);
  EXPECT_EQ(h.value, held[1]);
  EXPECT_GT(h.ms, 0);
  EXPECT_LE(h.ms, 10000);
  EXPECT_EQ(redis({"ZSCORE", keys.h, holder}), deadline);  // a check: not renewed
  const auto& w = out[0].results[1];
  EXPECT_EQ(w.status, detail::BeatResult::Status::waiting);
  EXPECT_EQ(w.value, 0);
  EXPECT_GE(w.ms, 0);  // the holder's deadline
  EXPECT_LE(w.ms, h.ms);
  const auto& gone = out[0].results[2];
  EXPECT_EQ(gone.status, detail::BeatResult::Status::gone);
  EXPECT_EQ(gone.ms, -1);
}

// `waiters` waiters of `processes` dead processes, written directly at the
// head of q (tickets 1000 and up), as a crashed fleet would leave them.
void queue_dead_fleet(const Keys& keys, int waiters, int processes) {
  auto fleet = [](int p) {
    char cid[17];
    std::snprintf(cid, sizeof cid, "%016x", 0xf1ee7000 + p);
    return std::string(cid);
  };
  std::vector<std::string> q{"ZADD", keys.q}, w{"ZADD", keys.w};
  for (int i = 0; i < waiters; ++i) {
    q.push_back(std::to_string(1000 + i));
    q.push_back(member(1000 + i, 'n', fleet(i % processes)));
  }
  for (int p = 0; p < processes; ++p) {
    w.emplace_back("1");
    w.push_back("n" + fleet(p));
  }
  server().cmd(q);
  server().cmd(w);
}

TEST_F(Scripts, PruningIsBoundedPerCall) {
  acquire(member(1));  // a holder, so nothing below can be granted
  acquire(member(2));  // and a waiter that leaves: the holder is in h now
  cancel(member(2));
  queue_dead_fleet(keys, 3000, 150);
  call(Script::heartbeat, {"1", "1000", member(1), "1000"});
  EXPECT_EQ(redis({"ZCARD", keys.w}), "51");    // 100 dead processes pruned; member 2's is live
  EXPECT_EQ(redis({"ZCARD", keys.q}), "2900");  // held: 100 dead heads dropped (drop_dead_heads)
  EXPECT_EQ(release(member(1)), 1);
  EXPECT_EQ(redis({"ZCARD", keys.q}), "2800");  // skipped by the release's fill
  // Each heartbeat now: 100 skipped by fill (a permit is free), 100 dropped.
  for (int i = 0; i < 13; ++i) call(Script::heartbeat, {"1", "1000", member(1), "1000"});
  EXPECT_EQ(redis({"ZCARD", keys.q}), "200");
  call(Script::heartbeat, {"1", "1000", member(1), "1000"});
  EXPECT_EQ(redis({"ZCARD", keys.q}), "0");
  EXPECT_EQ(name_keys(), std::vector<std::string>{keys.seq});
}

// A live waiter behind 250 dead ones: the release's fill skips 100 and
// stops; the live waiter's heartbeat drops 100 dead heads, then its fill
// skips the last 50 and grants it, in the same call.
TEST_F(Scripts, AHeartbeatGrantsALiveWaiterBehindDeadHeads) {
  acquire(member(1));
  ASSERT_EQ(acquire(member(2))[0], 0);  // queued: the holder is in h now
  queue_dead_fleet(keys, 250, 5);       // ahead of it: lower tickets
  ASSERT_EQ(redis({"ZRANK", keys.q, member(2)}), "250");
  EXPECT_EQ(release(member(1)), 1);
  EXPECT_EQ(redis({"ZCARD", keys.q}), "151");  // 100 skipped by the release's fill
  const auto beat = ints(*call(Script::heartbeat, {"1", "10000", member(2), "10000"}));
  ASSERT_EQ(beat.size(), 3u);
  EXPECT_EQ(beat[0], 2);  // holding
  EXPECT_EQ(redis({"ZCARD", keys.q}), "0");
}

TEST_F(Scripts, NoBargingPastManyStaleWaiters) {
  acquire(member(1), 2);
  acquire(member(2), 2);
  // 500 stale waiters (no w entry: their processes are gone) ahead of one
  // live waiter: more than two calls skip them.
  std::vector<std::string> q{"ZADD", keys.q};
  for (int i = 0; i < 500; ++i) {
    q.push_back(std::to_string(100000 + i));
    q.push_back(member(5000 + i));
  }
  redis(q);
  redis({"HSET", keys.seq, "s", "200000"});
  auto live = acquire(member(3), 2);
  ASSERT_EQ(live[0], 0);
  EXPECT_EQ(release(member(1), 2), 1);  // frees a permit; fill hits its skip bound
  auto newcomer = acquire(member(4), 2);
  EXPECT_EQ(newcomer[0], 0) << "a newcomer took a permit while a live waiter was queued";
  EXPECT_EQ(acquire(member(6), 2, 10000, 10000, "t"), std::vector<long long>{-1});
  for (int i = 0; i < 5; ++i) call(Script::heartbeat, {"2", "10000", member(3), "10000"});
  auto granted = acquire(member(3), 2);
  ASSERT_EQ(granted[0], 1);
  EXPECT_EQ(granted[1], live[1]);
  EXPECT_LT(granted[1], static_cast<long long>(newcomer[1]));
}

TEST_F(Scripts, PermitsOfANameWithOnlyExpiredEntriesCanChange) {
  acquire(member(1), 3);
  acquire(member(9), 3);  // a second holder: both in h
  expire_holders({member(1), member(9)});
  EXPECT_EQ(acquire(member(2), 1)[0], 1);
  EXPECT_EQ(error_of(call(Script::acquire, {member(3), "3", "1000", "1000", "q"})), "FLPERMITS 1");
  release(member(2));
}

TEST_F(Scripts, ExpiredEntriesBeyondThePruneBoundAreNotRevived) {
  acquire(member(1));
  std::vector<std::string> q{"ZADD", keys.q}, w{"ZADD", keys.w};
  for (int i = 0; i < 150; ++i) {
    q.push_back(std::to_string(100 + i));
    q.push_back(member(100 + i));
    w.emplace_back("1");
    w.push_back(proc(member(100 + i)));
  }
  redis(q);
  redis(w);
  // Member 249's process is past the first prune's reach; its heartbeat must
  // say gone, and neither renew its process nor keep it queued.
  auto r = ints(*call(Script::heartbeat, {"1", "10000", member(249), "10000"}));
  EXPECT_EQ(r, (std::vector<long long>{0, 0, -1}));
  const std::string w249 = redis({"ZSCORE", keys.w, proc(member(249))});
  EXPECT_TRUE(w249 == "(nil)" || w249 == "1") << "renewed: " << w249;
  EXPECT_EQ(redis({"ZSCORE", keys.q, member(249)}), "(nil)");
  redis({"DEL", keys.q, keys.w});
  release(member(1));
}

TEST_F(Scripts, EveryBusyKeyExpiresAfterItsDeadlines) {
  auto pttl = [&](const std::string& k) { return std::stoll(redis({"PTTL", k})); };
  acquire(member(1), 1, 10000);  // fast path: held inline, in o, which expires with the grant
  EXPECT_EQ(name_keys(), (std::vector<std::string>{keys.o, keys.seq}));
  EXPECT_GT(pttl(keys.o), 5000);
  EXPECT_LE(pttl(keys.o), 10000);
  acquire(member(2), 1, 10000, 30000);  // creates h, g, q and w, with a later deadline
  for (const auto& k : {keys.q, keys.w, keys.h, keys.g}) {
    EXPECT_GT(pttl(k), 30000) << k;
    EXPECT_LT(pttl(k), 40000) << k;
  }
  EXPECT_EQ(pttl(keys.seq), -1);  // the counter never expires
  call(Script::heartbeat, {"1", "60000", member(2), "10000"});
  EXPECT_GT(pttl(keys.q), 60000);
  release(member(1));
  release(member(2));
  EXPECT_EQ(name_keys(), std::vector<std::string>{keys.seq});
}

// A call that recreates h by a handoff and then grants a free permit too
// must still give h its expiry (it was left without one: PTTL -1).
TEST_F(Scripts, HandoffAndFreeGrantInOneCallKeepTheExpiry) {
  auto pttl = [&](const std::string& k) { return std::stoll(redis({"PTTL", k})); };
  EXPECT_EQ(acquire(member(1), 2, 10000)[0], 1);
  EXPECT_EQ(acquire(member(2), 2, 10000)[0], 1);
  EXPECT_EQ(acquire(member(3), 2, 10000)[0], 0);  // queued behind two holders
  expire_holders({member(1), member(2)});         // both leases run out
  // prune empties h, fill hands a permit to member 3 (h is created again),
  // and the second permit is free: member 4 is granted at once.
  EXPECT_EQ(acquire(member(4), 2, 10000)[0], 1);
  EXPECT_GT(pttl(keys.h), 0);
  EXPECT_GT(pttl(keys.g), 0);
  release(member(3), 2);
  release(member(4), 2);
}

// A release hands its permit on before it leaves h, so h is never emptied
// and created again: it keeps the expiry that stands (the record's x), and
// no call sets it again.
TEST_F(Scripts, AHandoffKeepsTheHolderSetAndItsStandingExpiry) {
  auto pttl = [&](const std::string& k) { return std::stoll(redis({"PTTL", k})); };
  EXPECT_EQ(acquire(member(1), 1, 10000)[0], 1);
  EXPECT_EQ(acquire(member(2), 1, 10000, 30000)[0], 0);  // x is pushed past its liveness
  const long long x = std::stoll(redis({"HGET", keys.seq, "x"}));
  const long long pexpireats = command_calls(server(), "pexpireat");
  const long long zcards = command_calls(server(), "zcard");
  EXPECT_EQ(release(member(1)), 1);  // hands off to member 2
  EXPECT_EQ(command_calls(server(), "pexpireat"), pexpireats);
  EXPECT_EQ(command_calls(server(), "zcard"), zcards);  // one ZRANGE of h, ZPOPMIN of q: no counts
  EXPECT_EQ(redis({"HGET", keys.seq, "x"}), std::to_string(x));
  EXPECT_EQ(redis({"PEXPIRETIME", keys.h}), std::to_string(x));
  EXPECT_EQ(redis({"PEXPIRETIME", keys.g}), std::to_string(x));
  EXPECT_GT(pttl(keys.h), 30000);  // the handed-off grant lasts its liveness (30 s)
  release(member(2));
  EXPECT_EQ(name_keys(), std::vector<std::string>{keys.seq});
  EXPECT_EQ(redis({"HMGET", keys.seq, "p", "x"}), "(nil)\n(nil)");  // idle: only what keeps fences increasing
}

// release looks its member up among h's first two entries; a semaphore
// holder further back is looked up by ZSCORE, and an expired one is not
// released wherever it stands.
TEST_F(Scripts, ASemaphoreHolderIsReleasedWhereverItStandsInH) {
  for (int m = 1; m <= 3; ++m) EXPECT_EQ(acquire(member(m), 3, 10000L * m)[0], 1);  // h by deadline: 1, 2, 3
  EXPECT_EQ(acquire(member(4), 3)[0], 0);
  EXPECT_EQ(release(member(3), 3), 1);     // the third entry
  EXPECT_EQ(acquire(member(4), 3)[0], 1);  // handed on
  EXPECT_EQ(release(member(3), 3), 0);
  EXPECT_EQ(release(member(2), 3), 1);  // the second entry
  EXPECT_EQ(release(member(1), 3), 1);
  EXPECT_EQ(release(member(4), 3), 1);
  EXPECT_EQ(name_keys(), std::vector<std::string>{keys.seq});
  EXPECT_EQ(acquire(member(5), 2)[0], 1);  // inline
  EXPECT_EQ(acquire(member(6), 2)[0], 1);  // both in h
  EXPECT_EQ(acquire(member(7), 2)[0], 0);
  expire_holders({member(5), member(6)});
  EXPECT_EQ(release(member(6), 2), 0);  // expired: lost, not released
  EXPECT_EQ(acquire(member(7), 2)[0], 1);
}

// The record lost (deleted, or evicted under maxmemory) while the name is
// busy, and with it x: the next call sets the keys' expiry from the latest
// deadline they hold, not only from what that call wrote.
TEST_F(Scripts, ALostRecordGetsAnXCoveringEveryDeadline) {
  auto expiry = [&](const std::string& k) { return std::stoll(redis({"PEXPIRETIME", k})); };
  EXPECT_EQ(acquire(member(1), 1, 30000)[0], 1);
  EXPECT_EQ(acquire(member(2), 1, 10000, 500)[0], 0);
  redis({"DEL", keys.seq});
  EXPECT_EQ(acquire(member(3), 1, 10000, 100)[0], 0);  // writes a deadline 100 ms ahead
  const long long holder_deadline = std::stoll(redis({"ZSCORE", keys.h, member(1)}));
  for (const auto& k : {keys.q, keys.w, keys.h, keys.g}) EXPECT_GE(expiry(k), holder_deadline + 1000) << k;
  EXPECT_EQ(redis({"HGET", keys.seq, "x"}), std::to_string(expiry(keys.h)));
}

// A key deleted (or evicted) while the name is busy and made again by a
// later call without an expiry (g by a handoff; w made again by a new
// process gets it at once) gets the standing x at the next heartbeat: no key
// of a busy name lives forever.
TEST_F(Scripts, AKeyMadeAgainWithoutAnExpiryGetsItAtTheNextHeartbeat) {
  auto expiry = [&](const std::string& k) { return std::stoll(redis({"PEXPIRETIME", k})); };
  auto x = [&] { return std::stoll(redis({"HGET", keys.seq, "x"})); };
  EXPECT_EQ(acquire(member(1), 1, 30000)[0], 1);
  EXPECT_EQ(acquire(member(2), 1, 10000, 10000)[0], 0);
  redis({"DEL", keys.w});                                // member 2 loses its liveness entry
  EXPECT_EQ(acquire(member(3), 1, 10000, 10000)[0], 0);  // w made again, by a new process: fresh
  EXPECT_EQ(expiry(keys.w), x());
  redis({"PERSIST", keys.w});  // w without its expiry (tampered): the next heartbeat gives it back
  call(Script::heartbeat, {"1", "10000", member(3), "10000"});
  EXPECT_EQ(expiry(keys.w), x());
  redis({"DEL", keys.g});
  EXPECT_EQ(release(member(1)), 1);  // member 2 is skipped; member 3 is granted: g made again
  EXPECT_EQ(expiry(keys.g), -1);
  call(Script::heartbeat, {"1", "10000", member(3), "1000"});
  for (const auto& k : {keys.h, keys.g}) EXPECT_EQ(expiry(k), x()) << k;
  EXPECT_GE(x(), std::stoll(redis({"ZSCORE", keys.h, member(3)})) + 1000);
}

TEST_F(Scripts, AFlushedLibraryOrScriptCacheIsReloaded) {
  redis({"FUNCTION", "FLUSH"});
  redis({"SCRIPT", "FLUSH"});
  auto before = reloads.load();
  EXPECT_EQ(acquire(member(1))[0], 1);
  EXPECT_EQ(reloads.load(), before + 1);
  EXPECT_EQ(release(member(1)), 1);
  // Loaded once, either way: the library holds every script, and by
  // EVALSHA the first miss loads them all.
  EXPECT_EQ(reloads.load(), before + 1);
}

// The calls go the way asked, and nothing else runs them.
TEST_F(Scripts, CallsGoTheWayAsked) {
  const bool functions = script_way() == detail::ScriptWay::functions;
  EXPECT_EQ(acquire(member(2))[0], 1);  // loads what is missing (a failed call counts as a call)
  EXPECT_EQ(release(member(2)), 1);
  const long long fcall0 = command_calls(server(), "fcall"), evalsha0 = command_calls(server(), "evalsha");
  EXPECT_EQ(acquire(member(1))[0], 1);
  EXPECT_EQ(release(member(1)), 1);
  EXPECT_EQ(command_calls(server(), "fcall") - fcall0, functions ? 2 : 0);
  EXPECT_EQ(command_calls(server(), "evalsha") - evalsha0, functions ? 0 : 2);
  EXPECT_EQ(runner->way(), script_way());
}

// Another client (of the same build) loaded the library first: it is used
// as it is. (A load racing with it gets "already exists": ScriptErrors.)
TEST_F(Scripts, ALibraryLoadedByAnotherClientIsUsed) {
  runner = make_runner(detail::ScriptWay::functions);
  redis({"FUNCTION", "FLUSH"});
  EXPECT_EQ(redis({"FUNCTION", "LOAD", std::string(detail::library_source())}), std::string(detail::lua::library_name));
  const auto before = reloads.load();
  EXPECT_EQ(acquire(member(1))[0], 1);
  EXPECT_EQ(reloads.load(), before);
  redis({"FUNCTION", "DELETE", std::string(detail::lua::library_name)});
  EXPECT_EQ(release(member(1)), 1);  // reloads it
  EXPECT_EQ(reloads.load(), before + 1);
}

// A user who may not load functions, or not call FCALL, gets the same calls
// run by EVALSHA, and the runner says so once.
TEST_F(Scripts, WithoutFunctionsTheCallsRunByEvalsha) {
  for (const std::string denied : {"function", "fcall"}) {
    SCOPED_TRACE("-" + denied);
    ASSERT_EQ(redis({"ACL", "SETUSER", "nofunc", "reset", "on", ">pw", "~*", "&*", "+@all", "-" + denied}), "OK");
    conn = connect(server());
    ASSERT_EQ(conn->command({"AUTH", "nofunc", "pw"})->type, REDIS_REPLY_STATUS);
    redis({"FUNCTION", "FLUSH"});
    std::vector<std::string> why;
    runner = make_runner(detail::ScriptWay::functions, [&](const std::string& w) { why.push_back(w); });
    const std::string m = member(denied == "fcall" ? 2 : 1);
    EXPECT_EQ(acquire(m)[0], 1);
    EXPECT_EQ(release(m), 1);
    EXPECT_EQ(runner->way(), detail::ScriptWay::evalsha);
    ASSERT_EQ(why.size(), 1u);
    EXPECT_NE(why[0].find("'" + std::string(denied == "fcall" ? "fcall" : "function|load") + "'"), std::string::npos)
        << why[0];
    EXPECT_EQ(redis({"FUNCTION", "LIST"}), "");  // nothing was loaded
  }
}

// A server without FCALL (before Redis 7; here renamed away) gets the same
// calls by EVALSHA.
TEST_F(Scripts, AServerWithoutFcallGetsTheCallsByEvalsha) {
  RedisServer old({"--rename-command", "FCALL", ""});
  conn = connect(old);
  std::vector<std::string> why;
  runner = make_runner(detail::ScriptWay::functions, [&](const std::string& w) { why.push_back(w); });
  EXPECT_EQ(acquire(member(1))[0], 1);
  EXPECT_EQ(release(member(1)), 1);
  EXPECT_EQ(runner->way(), detail::ScriptWay::evalsha);
  ASSERT_EQ(why.size(), 1u);
  EXPECT_EQ(why[0].rfind("ERR unknown command", 0), 0u) << why[0];
  EXPECT_EQ(command_calls(old, "fcall"), 0);
  EXPECT_GE(command_calls(old, "evalsha"), 2);
}

// Over maxmemory the server refuses FUNCTION LOAD (a write): that batch runs
// by EVALSHA (SCRIPT LOAD is no write), and the runner keeps functions for
// later calls.
TEST_F(Scripts, OverMaxmemoryTheCallsRunByEvalshaUntilTheLibraryLoads) {
  RedisServer full({"--maxmemory-policy", "noeviction"});
  conn = connect(full);
  runner = make_runner(detail::ScriptWay::functions);
  ASSERT_EQ(full.cmd({"SET", "ballast", std::string(8u << 20, 'x')}), "OK");
  ASSERT_EQ(full.cmd({"CONFIG", "SET", "maxmemory", "4mb"}), "OK");
  ASSERT_EQ(full.cmd({"FUNCTION", "LOAD", std::string(detail::library_source())}).rfind("ERR:OOM", 0), 0u);
  EXPECT_EQ(release(member(1)), 0);  // nothing held: runs, and answers
  EXPECT_EQ(runner->way(), detail::ScriptWay::functions);
  EXPECT_EQ(command_calls(full, "evalsha"), 1);
  EXPECT_EQ(full.cmd({"FUNCTION", "LIST"}), "");
  full.cmd({"DEL", "ballast"});
  EXPECT_EQ(acquire(member(2))[0], 1);  // the library loads now
  EXPECT_EQ(release(member(2)), 1);
  EXPECT_EQ(command_calls(full, "evalsha"), 1);
  EXPECT_NE(full.cmd({"FUNCTION", "LIST"}), "");
}

// Evict remembers an evicted member in ev until its entry's deadline (a
// waiter's: its process's liveness deadline): its heartbeat answers 3
// (evicted) and its re-ask (mode q) {-2}, never queueing it again, also
// once the name is idle; a try stays a try ({-1}).
TEST_F(Scripts, AnEvictedWaiterIsToldSoAndNotQueuedAgain) {
  EXPECT_EQ(acquire(member(1))[0], 1);
  EXPECT_EQ(acquire(member(2))[0], 0);
  EXPECT_EQ(ints(*call(Script::evict, {member(2), "1"})), std::vector<long long>{2});
  EXPECT_EQ(redis({"ZSCORE", keys.ev, member(2)}), redis({"ZSCORE", keys.w, proc(member(2))}));
  EXPECT_GT(std::stoll(redis({"PTTL", keys.ev})), 0);
  EXPECT_EQ(ints(*call(Script::heartbeat, {"1", "10000", member(2), "10000"})), (std::vector<long long>{3, 0, -1}));
  EXPECT_EQ(acquire(member(2)), std::vector<long long>{-2});
  EXPECT_EQ(acquire(member(2), 1, 10000, 10000, "t"), std::vector<long long>{-1});
  EXPECT_EQ(redis({"ZCARD", keys.q}), "0");
  EXPECT_EQ(release(member(1)), 1);  // idle: only the record and ev are left
  EXPECT_EQ(name_keys(), (std::vector<std::string>{keys.ev, keys.seq}));
  EXPECT_EQ(ints(*call(Script::heartbeat, {"1", "10000", member(2), "10000"})), (std::vector<long long>{3, 0, -1}));
  EXPECT_EQ(acquire(member(2)), std::vector<long long>{-2});  // not granted inline either
  EXPECT_EQ(redis({"EXISTS", keys.o}), "0");
  EXPECT_EQ(acquire(member(3), 1, 10000, 10000, "f")[0], 1);  // others are not affected
}

// An evicted holder, inline or in h, is remembered until its grant's
// deadline: its heartbeat answers 3, its re-ask {-2}, its release 0.
TEST_F(Scripts, AnEvictedHolderIsToldSo) {
  EXPECT_EQ(acquire(member(1))[0], 1);  // inline
  const long long left = std::stoll(redis({"PTTL", keys.o}));
  EXPECT_EQ(ints(*call(Script::evict, {member(1), "1"})), std::vector<long long>{1});
  const long long until = std::stoll(redis({"ZSCORE", keys.ev, member(1)})) - server_ms();
  EXPECT_LE(until, left + 1);  // o's deadline
  EXPECT_GT(until, left - 5000);
  EXPECT_EQ(ints(*call(Script::heartbeat, {"1", "10000", member(1), "10000"})), (std::vector<long long>{3, 0, -1}));
  EXPECT_EQ(acquire(member(1)), std::vector<long long>{-2});
  EXPECT_EQ(acquire(member(2))[0], 1);
  EXPECT_EQ(acquire(member(3))[0], 0);
  EXPECT_EQ(ints(*call(Script::evict, {member(2), "1"})), std::vector<long long>{1});  // in h: hands on
  EXPECT_EQ(redis({"ZSCORE", keys.ev, member(2)}).empty(), false);
  EXPECT_EQ(redis({"ZRANGE", keys.h, "0", "-1"}), member(3));
  EXPECT_EQ(without_ms(ints(*call(Script::heartbeat, {"1", "10000", member(2), "10000"}))),
            (std::vector<long long>{3, 0}));
  EXPECT_EQ(release(member(2)), 0);
  EXPECT_EQ(acquire(member(2)), std::vector<long long>{-2});
  EXPECT_EQ(release(member(3)), 1);
}

// ev stays bounded: an entry whose deadline passed was no live entry (its
// process counts as dead, and queues again when it comes back), so it is
// not recorded, and entries past their deadline, or corrupt far beyond any
// (tampered), leave at the next eviction and never count; ev expires with
// its last entry.
TEST_F(Scripts, TheEvictionRecordIsBounded) {
  EXPECT_EQ(acquire(member(1))[0], 1);
  EXPECT_EQ(acquire(member(2))[0], 0);
  EXPECT_EQ(acquire(member(3))[0], 0);
  EXPECT_EQ(acquire(member(4))[0], 0);
  expire_waiters({member(2)});
  EXPECT_EQ(ints(*call(Script::evict, {member(2), "1"})), std::vector<long long>{2});
  EXPECT_EQ(redis({"EXISTS", keys.ev}), "0");  // a dead waiter's eviction is not remembered
  EXPECT_EQ(ints(*call(Script::heartbeat, {"1", "10000", member(2), "10000"})), (std::vector<long long>{0, 0, -1}));
  EXPECT_EQ(ints(*call(Script::evict, {member(3), "1"})), std::vector<long long>{2});
  redis({"ZADD", keys.ev, "1e300", member(8)});  // corrupt
  expire(keys.ev, {member(3)});                  // past
  for (const auto& m : {member(3), member(8)}) {
    EXPECT_EQ(ints(*call(Script::heartbeat, {"1", "10000", m, "10000"})), (std::vector<long long>{0, 0, -1})) << m;
  }
  EXPECT_EQ(ints(*call(Script::evict, {member(4), "1"})), std::vector<long long>{2});
  EXPECT_EQ(redis({"ZRANGE", keys.ev, "0", "-1"}), member(4));
  const long long last = std::stoll(redis({"ZSCORE", keys.ev, member(4)}));
  EXPECT_EQ(std::stoll(redis({"PEXPIRETIME", keys.ev})), last + 1);
  EXPECT_EQ(acquire(member(3))[0], 0);  // the past one queues again
}

}  // namespace
}  // namespace fairlock::test
