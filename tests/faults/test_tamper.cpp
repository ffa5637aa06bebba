// Keys of a queue tampered with while it is in use: wrong types, garbage
// scores and values, keys deleted mid-wait. Whatever is done, the library
// must answer with a clear error or recover cleanly: never crash, hang,
// grant a lock twice, or let a Lua runtime error or a garbage fence reach
// the caller.
//
// Each case: one process (one Client) holds a lock and has two waiters on it
// (so its heartbeat covers three members in one call); the keys are
// tampered with; for a while every participant's owns_lock() is sampled;
// then the holder unlocks, the tampering is repaired if the case says so,
// and a fresh client must get the lock within a bounded time.
#include <fairlock/fairlock.h>
#include <gtest/gtest.h>

#include <functional>
#include <optional>

#include "scenario.h"

namespace fairlock::faults {
namespace {

struct Members {
  std::string holder;
  std::vector<std::string> waiters;  // queue order
};

struct TamperCase {
  const char* id;    // test name suffix
  const char* what;  // description
  std::function<void(test::RedisServer&, const std::string& name, const Members&)> tamper;
  // Undoes the damage (empty: the library must recover by itself).
  std::function<void(test::RedisServer&, const std::string& name)> repair;
};

void PrintTo(const TamperCase& c, std::ostream* os) { *os << c.what; }

std::string k(const std::string& name, const char* suffix) { return qkey(name, suffix); }

constexpr std::uint64_t kMaxSafeFence = 1ULL << 53;

// A fake member of a process that does not exist.
const std::string kGhost = "p00000000000000ff:0000000000000000000000000000beef";

std::vector<TamperCase> cases() {
  using S = test::RedisServer;
  using N = const std::string&;
  using M = const Members&;
  auto set_type = [](const char* suffix, const std::vector<std::string>& write) {
    return [suffix, write](S& s, N n, M) {
      s.cmd({"DEL", k(n, suffix)});
      std::vector<std::string> argv = write;
      argv.insert(argv.begin() + 1, k(n, suffix));
      s.cmd(argv);
    };
  };
  auto del = [](const char* suffix) { return [suffix](S& s, N n) { s.cmd({"DEL", k(n, suffix)}); }; };
  auto set_seq = [](const char* v) { return [v](S& s, N n, M) { s.cmd({"SET", k(n, "seq"), v}); }; };
  auto ticket = [](int waiter, const char* score) {
    return [waiter, score](S& s, N n, M m) { s.cmd({"ZADD", k(n, "q"), "XX", score, m.waiters.at(waiter)}); };
  };
  auto permits = [](const char* v) { return [v](S& s, N n, M) { s.cmd({"HSET", k(n, "seq"), "p", v}); }; };
  return {
      // Wrong types.
      {"QIsAString", "q is a string", set_type("q", {"SET", "x"}), del("q")},
      {"WIsAHash", "w is a hash", set_type("w", {"HSET", "a", "b"}), del("w")},
      {"HIsAList", "h is a list", set_type("h", {"RPUSH", "x"}), del("h")},
      {"GIsAString", "g is a string", set_type("g", {"SET", "x"}), del("g")},
      {"SeqIsAList", "seq is a list", set_type("seq", {"RPUSH", "x"}), del("seq")},
      // Garbage values of the counter.
      {"SeqIsNotANumber", "seq is 'abc'", set_seq("abc"), nullptr},
      {"SeqIsHuge", "seq is 1e300", set_seq("1e300"), nullptr},
      {"SeqIsInfinite", "seq is inf", set_seq("inf"), nullptr},
      {"SeqIsPast2To53", "seq is 2^53+1", set_seq("9007199254740993"), nullptr},
      // Garbage tickets (scores of q) of live waiters.
      {"TicketIsNegative", "the first waiter's ticket is -1", ticket(0, "-1"), nullptr},
      {"TicketIsFractional", "the first waiter's ticket is 1.5", ticket(0, "1.5"), nullptr},
      {"TicketIsInfinite", "the second waiter's ticket is +inf", ticket(1, "+inf"), nullptr},
      {"TicketIsHuge", "the second waiter's ticket is 1e300", ticket(1, "1e300"), nullptr},
      // Garbage deadlines (scores of w and h).
      {"LiveWaiterDeadlineIsMinusInf", "a live waiter's deadline is -inf",
       [](S& s, N n, M m) {
         s.cmd({"ZADD", k(n, "w"), "XX", "-inf", m.waiters.at(0)});
       },
       nullptr},
      {"HolderDeadlineIsPlusInf", "the live holder's deadline is +inf",
       [](S& s, N n, M m) {
         s.cmd({"ZADD", k(n, "h"), "XX", "+inf", m.holder});
       },
       nullptr},
      {"HolderDeadlineIsMinusInf", "the live holder's deadline is -inf",
       [](S& s, N n, M m) {
         s.cmd({"ZADD", k(n, "h"), "XX", "-inf", m.holder});
       },
       nullptr},
      {"GhostWaiterLivesForever", "a dead waiter at the head with deadline +inf",
       [](S& s, N n, M) {
         s.cmd({"ZADD", k(n, "q"), "1", kGhost});
         s.cmd({"ZADD", k(n, "w"), "+inf", kGhost});
       },
       nullptr},
      {"GhostWaiterDeadlineIsHuge", "a dead waiter at the head with deadline 1e300",
       [](S& s, N n, M) {
         s.cmd({"ZADD", k(n, "q"), "1", kGhost});
         s.cmd({"ZADD", k(n, "w"), "1e300", kGhost});
       },
       nullptr},
      {"GhostHolderLivesForever", "a dead holder with deadline +inf",
       [](S& s, N n, M) {
         s.cmd({"ZADD", k(n, "h"), "+inf", kGhost});
         s.cmd({"HSET", k(n, "g"), kGhost, "1:1"});
       },
       nullptr},
      // Garbage and changed permit counts (every client here uses 1).
      {"PermitsIsNotANumber", "permits is 'abc'", permits("abc"), nullptr},
      {"PermitsIsZero", "permits is 0", permits("0"), nullptr},
      {"PermitsIsFractional", "permits is 1.5", permits("1.5"), nullptr},
      {"PermitsIsOutOfRange", "permits is 1e9", permits("1e9"), nullptr},
      {"PermitsChangedTo2", "permits is 2 under lock (1-permit) clients", permits("2"), nullptr},
      // A garbage fence of the holder.
      {"HolderFenceIsGarbage", "the holder's fence is 'abc'",
       [](S& s, N n, M m) {
         s.cmd({"HSET", k(n, "g"), m.holder, "abc"});
       },
       nullptr},
      // Keys deleted mid-wait.
      {"QDeletedMidWait", "q deleted while two waiters wait",
       [](S& s, N n, M) {
         s.cmd({"DEL", k(n, "q")});
       },
       nullptr},
      {"WDeletedMidWait", "w deleted while two waiters wait",
       [](S& s, N n, M) {
         s.cmd({"DEL", k(n, "w")});
       },
       nullptr},
      {"HDeletedMidHold", "h deleted while held",
       [](S& s, N n, M) {
         s.cmd({"DEL", k(n, "h")});
       },
       nullptr},
      {"GDeletedMidHold", "g deleted while held",
       [](S& s, N n, M) {
         s.cmd({"DEL", k(n, "g")});
       },
       nullptr},
      {"SeqDeletedMidWait", "seq deleted while two waiters wait",
       [](S& s, N n, M) {
         s.cmd({"DEL", k(n, "seq")});
       },
       nullptr},
      {"AllKeysDeletedMidWait", "every key of the name deleted mid-wait",
       [](S& s, N n, M) {
         s.cmd({"DEL", k(n, "q"), k(n, "w"), k(n, "h"), k(n, "g"), k(n, "seq")});
       },
       nullptr},
  };
}

// An error is clear when it is one of the library's typed errors and no
// Lua runtime error or reply-shape confusion leaked through.
std::string unclear(const std::exception& e) {
  std::string m = e.what();
  if (!dynamic_cast<const fairlock::Error*>(&e)) return std::string("not a fairlock::Error: ") + m;
  for (const char* garbage : {"attempt to", "bad argument", "unexpected reply", "nil value", "user_script:"}) {
    if (m.find(garbage) != std::string::npos && m.find("WRONGTYPE") == std::string::npos) {
      return "a Lua runtime error or a malformed reply surfaced: " + m;
    }
  }
  return "";
}

class Tamper : public ::testing::TestWithParam<TamperCase> {};

TEST_P(Tamper, ClearErrorOrCleanRecovery) {
  const TamperCase& tc = GetParam();
  test::RedisServer& server = test::server();
  const std::string name = std::string("tamper:") + tc.id + ":" + std::to_string(::getpid());
  Options o;
  o.url = server.url();
  o.liveness_ttl = 900ms;
  LockOptions lo;
  lo.lease = 1500ms;

  std::mutex mu;
  std::vector<std::string> problems;  // unclear errors, garbage fences
  std::vector<std::string> errors;    // every error seen (for the figures)
  std::uint64_t fence_floor = 0;      // every later grant must exceed the holder's fence
  auto note_error = [&](const char* who, const std::exception& e) {
    std::lock_guard<std::mutex> lk(mu);
    errors.push_back(std::string(who) + ": " + e.what());
    std::string why = unclear(e);
    if (!why.empty()) problems.push_back(std::string(who) + ": " + why);
  };
  auto note_fence = [&](const char* who, std::uint64_t f) {
    std::lock_guard<std::mutex> lk(mu);
    if (f == 0 || f >= kMaxSafeFence || f <= fence_floor) {
      problems.push_back(std::string(who) + " was granted the garbage fence " + std::to_string(f) +
                         " (the holder's was " + std::to_string(fence_floor) + ")");
    }
  };

  {
    Client client(o);
    FairLock holder(client, name, lo);
    holder.lock();
    fence_floor = holder.fence();
    std::vector<std::unique_ptr<FairLock>> waiters;
    std::vector<std::thread> threads;
    std::atomic<bool> release_all{false};
    std::atomic<int> finished{0};
    for (int i = 0; i < 2; ++i) {
      waiters.push_back(std::make_unique<FairLock>(client, name, lo));
      threads.emplace_back([&, i] {
        FairLock& w = *waiters[static_cast<size_t>(i)];
        const char* who = i == 0 ? "waiter 1" : "waiter 2";
        try {
          if (w.try_lock_for(6s)) {
            note_fence(who, w.fence());
            for (int guard = 0; guard < 100000 && !release_all.load(); ++guard) std::this_thread::sleep_for(2ms);
            try {
              w.unlock();
            } catch (const std::exception& e) {
              note_error(who, e);
            }
          }
        } catch (const std::exception& e) {
          note_error(who, e);
        }
        ++finished;
      });
      ASSERT_TRUE(eventually([&] { return zcard(server, name, "q") == i + 1; })) << "waiter " << i << " did not queue";
    }
    Members m;
    m.holder = server.cmd({"ZRANGE", k(name, "h"), "0", "0"});
    m.waiters = split(server.cmd({"ZRANGE", k(name, "q"), "0", "-1"}), '\n');
    ASSERT_EQ(m.waiters.size(), 2u);

    tc.tamper(server, name, m);

    // Never two owners of the lock at once, but for one case: a holder whose
    // entry was deleted under it learns so at its next heartbeat (every
    // lease/3), and a waiter may be granted the free permit before that
    // (its fence is larger: checked by note_fence). So the waiters never
    // overlap, and an overlap with the holder ends within a lease, with the
    // holder's release() saying it was lost.
    int max_owners = 0;
    std::chrono::steady_clock::duration longest_overlap{0};
    std::optional<std::chrono::steady_clock::time_point> overlap_since;
    for (int i = 0; i < 1000; ++i) {  // ~2 s
      const int owners = waiters[0]->owns_lock() + waiters[1]->owns_lock();
      max_owners = std::max(max_owners, owners);
      const auto now = std::chrono::steady_clock::now();
      if (owners > 0 && holder.owns_lock()) {
        if (!overlap_since) overlap_since = now;
        longest_overlap = std::max(longest_overlap, now - *overlap_since);
      } else {
        overlap_since.reset();
      }
      std::this_thread::sleep_for(2ms);
    }
    const Released holder_released = holder.release();
    if (longest_overlap.count() > 0) {
      EXPECT_EQ(holder_released, Released::lost) << tc.what << ": a waiter held while the holder still did";
      EXPECT_LE(longest_overlap, lo.lease) << tc.what << ": the holder did not learn its loss within a lease";
    }
    // The waiters' try_lock_for(6 s) must come back (no hang); whoever got
    // the lock keeps it a moment while ownership is still sampled.
    for (int i = 0; i < 4000 && finished.load() < 2; ++i) {
      int owners = waiters[0]->owns_lock() + waiters[1]->owns_lock();
      max_owners = std::max(max_owners, owners);
      if (i == 500) release_all = true;  // after ~1 s
      std::this_thread::sleep_for(2ms);
    }
    release_all = true;
    bool hung = !eventually([&] { return finished.load() == 2; }, 60s);
    EXPECT_FALSE(hung) << tc.what << ": a waiter's try_lock_for(6 s) did not return within a minute";
    if (hung) {
      for (auto& w : waiters) w->cancel();
    }
    for (auto& t : threads) t.join();
    EXPECT_LE(max_owners, 1) << tc.what << ": " << max_owners << " owners of one lock at once";
  }  // the client is shut down: whatever it held is released or expires

  if (tc.repair) tc.repair(server, name);
  // Recovery: a fresh process gets the lock within a bounded time (a typed
  // error meanwhile, e.g. PermitsMismatch until the name is idle, is fine).
  bool recovered = false;
  {
    Client fresh(o);
    FairLock f(fresh, name, lo);
    auto end = std::chrono::steady_clock::now() + 20s;
    for (int attempt = 0; attempt < 200 && !recovered && std::chrono::steady_clock::now() < end; ++attempt) {
      try {
        recovered = f.try_lock_for(
            std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now()));
        if (recovered) {
          note_fence("the fresh client", f.fence());
          f.unlock();
        }
      } catch (const std::exception& e) {
        if (attempt == 0) note_error("fresh client", e);
        std::string why = unclear(e);
        if (!why.empty()) note_error("fresh client", e);
        std::this_thread::sleep_for(100ms);
      }
    }
  }
  EXPECT_TRUE(recovered) << tc.what << ": a fresh client could not get the lock within 20 s"
                         << (tc.repair ? " after the repair" : " (no repair: the library must recover by itself)");
  for (const auto& p : problems) ADD_FAILURE() << tc.what << ": " << p;
  std::cout << "[figures] tamper '" << tc.what << "': " << errors.size() << " errors";
  for (size_t i = 0; i < errors.size() && i < 3; ++i) std::cout << (i ? " | " : ": ") << errors[i].substr(0, 160);
  std::cout << "; recovered " << (recovered ? "yes" : "NO") << std::endl;
  // Clean up for the shared server.
  server.cmd({"DEL", k(name, "q"), k(name, "w"), k(name, "h"), k(name, "g"), k(name, "seq")});
}

INSTANTIATE_TEST_SUITE_P(Keys, Tamper, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<TamperCase>& info) { return std::string(info.param.id); });

// ------------------------------------------------------------ script level

// The root causes, isolated at the protocol level (raw script calls).
class TamperScripts : public ::testing::Test {
 protected:
  std::string name = "tamper-scripts:" + std::to_string(::getpid()) + ":" +
                     ::testing::UnitTest::GetInstance()->current_test_info()->name();
  test::RedisServer& s = test::server();
  RawParticipant holder{s, name, "p00000000000000aa:00000000000000000000000000000009"};
  RawParticipant w1{s, name, "p00000000000000aa:00000000000000000000000000000001"};
  RawParticipant w2{s, name, "p00000000000000aa:00000000000000000000000000000002"};
  void TearDown() override {
    s.cmd({"DEL", k(name, "q"), k(name, "w"), k(name, "h"), k(name, "g"), k(name, "seq"), k(name, "o")});
  }
  // An inline holder written into o behind the scripts' backs.
  void forge_inline(const RawParticipant& p) { s.cmd({"SET", k(name, "o"), p.member() + " 5 1 1", "PX", "30000"}); }
  std::vector<std::string> heartbeat(const std::vector<std::string>& members) {
    std::string sha = s.cmd({"SCRIPT", "LOAD", std::string(detail::lua::heartbeat_source)});
    std::vector<std::string> argv = {"EVALSHA", sha, "7"};
    for (const char* suffix : {"q", "w", "h", "g", "seq", "o", "ev"}) argv.push_back(k(name, suffix));
    argv.emplace_back("1");
    argv.emplace_back("10000");
    for (const auto& m : members) {
      argv.push_back(m);
      argv.emplace_back("10000");
    }
    return split(s.cmd(argv), '\n');
  }
};

// heartbeat answers three integers per member. For a waiter whose q entry is
// gone (w kept), ZRANK returns nil and the reply carries a nil where the
// position should be.
TEST_F(TamperScripts, HeartbeatReplyIsThreeIntegersPerMember) {
  holder.acquire(10000, 10000);
  w1.acquire(10000, 10000);
  w2.acquire(10000, 10000);
  s.cmd({"DEL", k(name, "q")});
  auto r = heartbeat({w1.member(), w2.member(), holder.member()});
  std::string all;
  for (auto& x : r) all += x + " ";
  ASSERT_EQ(r.size(), 9u) << all;
  for (const auto& x : r) EXPECT_NE(x, "(nil)") << "heartbeat reply for (waiter 1, waiter 2, holder): " << all;
  EXPECT_EQ(r[6], "2") << "the holder is not reported as the holder: " << all;
}

// What that does to a client: the heartbeat round throws on the nil and
// drops the rest of its replies, for every name of the process. A grant on a
// different, untouched name is then never renewed locally and is reported
// lost although Redis renewed it.
TEST(TamperEffects, DamageToOneNameDoesNotCostAnotherNameItsGrant) {
  test::RedisServer& server = test::server();
  const std::string tag = std::to_string(::getpid());
  const std::string damaged = "a-damaged:" + tag, other = "z-untouched:" + tag;  // damaged sorts first
  Options o;
  o.url = server.url();
  o.liveness_ttl = 900ms;
  Client client(o), elsewhere(o);
  LockOptions lo;
  lo.lease = 3000ms;  // renewed every 300 ms: a heartbeat stalled 2.7 s loses nothing for real
  std::atomic<int> lost{0};
  LockOptions watched = lo;
  watched.on_lost = [&] { ++lost; };
  FairLock mine(client, other, watched);
  mine.lock();
  FairLock holder(elsewhere, damaged, lo), waiter(client, damaged, lo);
  holder.lock();
  std::thread t([&] {
    try {
      waiter.try_lock_for(8s);
    } catch (...) {
    }
  });
  ASSERT_TRUE(eventually([&] { return zcard(server, damaged, "q") == 1; }));
  // The damage lasts the whole window, over two leases of `mine` and 23
  // heartbeats (once, the waiter's re-ask would repair it within a second).
  const auto damage_until = std::chrono::steady_clock::now() + 7s;
  while (std::chrono::steady_clock::now() < damage_until) {
    server.cmd({"DEL", k(damaged, "q")});
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_TRUE(mine.owns_lock()) << "a grant on an untouched name was lost";
  EXPECT_EQ(lost.load(), 0) << "on_lost fired for a grant Redis kept renewing";
  EXPECT_NO_THROW(mine.unlock());
  holder.unlock();
  t.join();
  if (waiter.owns_lock()) waiter.unlock();
}

// Over-granting: fill() uses the stored permit count as it finds it.
TEST_F(TamperScripts, GarbagePermitCountNeverOvergrantsALock) {
  for (const char* v : {"1.5", "1e9"}) {
    s.cmd({"DEL", k(name, "q"), k(name, "w"), k(name, "h"), k(name, "g")});
    holder.acquire(10000, 10000);
    w1.acquire(10000, 10000);
    w2.acquire(10000, 10000);
    s.cmd({"HSET", k(name, "seq"), "p", v});
    heartbeat({w1.member(), w2.member()});
    EXPECT_EQ(s.cmd({"ZCARD", k(name, "h")}), "1") << "permits '" << v << "': a 1-permit name got several holders";
  }
}

// The holder kept inline (an uncontended name) in o, beside the record:
// garbage in o's value or expiry, or in the record, makes it count as
// expired or gives a typed error, never two holders at once or a garbage
// fence.
TEST_F(TamperScripts, GarbageInTheRecordNeverDoubleGrantsOrBecomesAFence) {
  const std::string m = holder.member();
  const std::vector<std::vector<std::string>> damage = {
      {"HSET", k(name, "seq"), "s", "abc"},
      {"HSET", k(name, "seq"), "s", "1e300"},
      {"HSET", k(name, "seq"), "s", "-5"},
      {"HSET", k(name, "seq"), "p", "0"},
      {"HSET", k(name, "seq"), "p", "abc"},
      {"HSET", k(name, "seq"), "v", "abc"},
      {"SET", k(name, "o"), "", "KEEPTTL"},
      {"SET", k(name, "o"), "garbage", "KEEPTTL"},
      {"SET", k(name, "o"), m + " abc 1 1", "KEEPTTL"},
      {"SET", k(name, "o"), m + " 9007199254740993 1 1", "KEEPTTL"},
      {"SET", k(name, "o"), m + " 5 0 1", "KEEPTTL"},
      {"SET", k(name, "o"), m + " 5 1 99999999999999999999", "KEEPTTL"},
      {"PERSIST", k(name, "o")},
      {"PEXPIRE", k(name, "o"), "99999999999"}};
  for (const auto& tamper : damage) {
    s.cmd({"DEL", k(name, "q"), k(name, "w"), k(name, "h"), k(name, "g"), k(name, "seq"), k(name, "o")});
    auto first = split(holder.acquire(10000, 10000), '\n');
    ASSERT_EQ(first[0], "1");
    s.cmd(tamper);
    auto r = split(w1.acquire(10000, 10000), '\n');
    std::string what;
    for (const auto& a : tamper) what += a + " ";
    what += ": ";
    if (r[0] == "1") {  // the damaged holder counts as expired
      long double f = std::strtold(r[1].c_str(), nullptr);
      EXPECT_TRUE(f >= 1 && f < 9007199254740992.0L) << what << "the fence " << r[1];
      EXPECT_EQ(split(holder.acquire(10000, 10000), '\n')[0], "0") << what << "two holders";
    } else if (r[0] == "0") {  // queued behind the holder: a valid ticket, granted as the fence
      long double t = std::strtold(r[1].c_str(), nullptr);
      EXPECT_TRUE(t >= 1 && t < 9007199254740992.0L) << what << "the ticket " << r[1];
      holder.release();
      const auto granted = split(w1.acquire(10000, 10000), '\n');  // 1, fence, remaining ms
      EXPECT_EQ(std::vector<std::string>(granted.begin(), granted.begin() + std::min<std::size_t>(2, granted.size())),
                (std::vector<std::string>{"1", r[1]}))
          << what;
    } else {
      EXPECT_EQ(r[0].rfind("ERR:FL", 0), 0u) << what << "neither queued nor a documented error: " << r[0];
    }
    holder.release();
    w1.release();
  }
}

// An inline holder forged into o while the name has a queue (it can never
// be there then) is never confirmed: not to an acquire retry, not
// to a heartbeat, and a release of the real holder does not move it into h.
TEST_F(TamperScripts, AnInlineHolderBesideTheQueueIsNeverConfirmed) {
  ASSERT_EQ(split(holder.acquire(60000, 60000), '\n')[0], "1");
  ASSERT_EQ(split(w1.acquire(60000, 60000), '\n')[0], "0");  // queued: the holder moved into h
  forge_inline(w1);
  EXPECT_EQ(heartbeat({w1.member()})[0], "1") << "a forged inline holder was confirmed by a heartbeat";
  EXPECT_EQ(split(w1.acquire(60000, 60000), '\n')[0], "0") << "a forged inline holder was confirmed by a retry";
  forge_inline(w2);
  EXPECT_EQ(split(w1.acquire(60000, 60000, 1, "t"), '\n')[0], "0") << "try: a forged inline holder was taken as busy";
  forge_inline(w1);
  EXPECT_EQ(split(w1.acquire(60000, 60000, 1, "t"), '\n')[0], "0") << "try: the caller forged as inline holder";
  forge_inline(w2);
  EXPECT_EQ(holder.release(), "1");
  EXPECT_EQ(s.cmd({"ZSCORE", k(name, "h"), w2.member()}), "(nil)") << "the forged holder was moved into h";
  EXPECT_EQ(split(w1.acquire(60000, 60000), '\n')[0], "1") << "the head of the queue was not granted";
}

// A garbage counter or ticket must not become a garbage fence.
TEST_F(TamperScripts, GarbageCounterOrTicketNeverBecomesAFence) {
  for (const char* v : {"1e300", "inf", "9007199254740993"}) {
    s.cmd({"DEL", k(name, "q"), k(name, "w"), k(name, "h"), k(name, "g")});
    s.cmd({"SET", k(name, "seq"), v});
    auto r = split(holder.acquire(10000, 10000), '\n');
    if (r.size() == 3 && r[0] == "1") {  // 1, fence, remaining ms
      long double f = std::strtold(r[1].c_str(), nullptr);
      EXPECT_TRUE(f > 0 && f < 9007199254740992.0L) << "seq '" << v << "' gave the fence " << r[1];
    } else {
      EXPECT_EQ(r[0].rfind("ERR:FL", 0), 0u) << "seq '" << v << "': neither a grant nor a documented error: " << r[0];
    }
    holder.release();
  }
  for (const char* score : {"-1", "1.5", "+inf"}) {
    s.cmd({"DEL", k(name, "q"), k(name, "w"), k(name, "h"), k(name, "g"), k(name, "seq")});
    holder.acquire(10000, 10000);
    auto first = split(holder.acquire(10000, 10000), '\n');
    w1.acquire(10000, 10000);
    s.cmd({"ZADD", k(name, "q"), "XX", score, w1.member()});
    holder.release();
    auto r = split(w1.acquire(10000, 10000), '\n');
    if (r.size() == 3 && r[0] == "1") {  // 1, fence, remaining ms
      long double f = std::strtold(r[1].c_str(), nullptr);
      long double floor = std::strtold(first[1].c_str(), nullptr);
      EXPECT_TRUE(f > floor && f < 9007199254740992.0L)
          << "ticket '" << score << "' gave the fence " << r[1] << " after fence " << first[1];
    }
    std::string g = s.cmd({"HGET", k(name, "g"), w1.member()});
    EXPECT_TRUE(g == "(nil)" || (g[0] >= '1' && g[0] <= '9' && g.find('-') == std::string::npos))
        << "ticket '" << score << "': stored grant '" << g << "'";
    w1.release();
  }
}

}  // namespace
}  // namespace fairlock::faults
