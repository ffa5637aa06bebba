// Fault injection with real processes: SIGKILLed holders and waiters, a
// paused or restarted server, killed connections, flushed scripts and data.
// Every scenario ends with the history checker (history.h) over all grants
// and the server-side replay (server_log.h) over everything the scripts did.
// Timing assertions are upper bounds only, and generous.
#include <fairlock/fairlock.h>
#include <gtest/gtest.h>
#include <hiredis/hiredis.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <random>
#include <sstream>

#include "fairlock_lua.h"
#include "scenario.h"
#include "test_util.h"
#include "tls_pki.h"

namespace fairlock::faults {
namespace {

using Names = std::vector<std::pair<std::string, std::uint32_t>>;

std::uint64_t fence_in(const std::optional<std::string>& granted) {
  if (!granted) return 0;
  auto f = split(*granted);
  return f.size() >= 3 ? std::strtoull(f[2].c_str(), nullptr, 10) : 0;
}

// After the run: once every deadline has passed and each name was touched,
// no entry of a dead process may remain, and only the fence counters do.
void expect_clean_end(Scenario& sc, const Names& names, const std::vector<std::string>& dead_cids, long wait_ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms));
  touch_names(sc.server(), names);
  std::vector<std::string> ns;
  for (auto& n : names) ns.push_back(n.first);
  for (const auto& cid : dead_cids) {
    auto left = entries_of(sc.server(), ns, cid);
    EXPECT_TRUE(left.empty()) << left.size() << " entries of dead process " << cid << " survive, e.g. "
                              << (left.empty() ? "" : left[0].name + ":" + left[0].suffix + " " + left[0].member);
  }
  EXPECT_EQ(leaked_keys(sc.server()), std::vector<std::string>{});
}

TEST(Faults, BaselineContentionWithoutFaults) {
  test::RedisServer server;
  Scenario sc(server, "baseline");
  sc.start_log();
  for (int i = 0; i < 3; ++i) {
    sc.spawn("w" + std::to_string(i), {"locks=a,b", "sems=s:2", "threads=2", "seconds=3",
                                       "seed=" + std::to_string(i + 1), "hold=0-10", "lease=5000", "liveness=3000"});
  }
  sc.wait_all(120s);
  auto r = sc.check();
  EXPECT_GT(r.valid, 50u);
  EXPECT_EQ(r.max_concurrent, 2u);
  EXPECT_EQ(leaked_keys(server), std::vector<std::string>{});
}

// A holder killed while it holds, while its release is in flight, and
// right after it released (while queued again).
TEST(Faults, HolderKilledBeforeDuringAndAfterRelease) {
  test::RedisServer server;
  Scenario sc(server, "holder-kill");
  sc.start_log();
  const long lease = 3000, liveness = 900;
  const std::vector<std::string> opts = {"lease=3000", "liveness=900"};
  std::vector<std::string> dead;

  {  // before release: killed while holding; the next waiter gets it after the lease
    std::string cid;
    Proc& a = sc.spawn_cmd("a-before", opts, &cid);
    Proc& b = sc.spawn_cmd("b-before", opts);
    a.send("lock before");
    auto ga = a.expect("granted before");
    ASSERT_TRUE(ga);
    b.send("lock before");
    ASSERT_TRUE(eventually([&] { return zcard(server, "before", "q") == 1; }));
    std::this_thread::sleep_for(100ms);
    Micros k = sc.kill("a-before");
    sc.fault();
    dead.push_back(cid);
    expect_bounded_entries(server, {"before"}, cid, k, lease, liveness);
    auto gb = b.expect("granted before", 60s);
    ASSERT_TRUE(gb) << "the waiter behind a killed holder was never granted";
    EXPECT_LE(sc.now() - k, (lease + 15000) * 1000);
    EXPECT_GT(fence_in(gb), fence_in(ga));
    b.send("unlock before");
    EXPECT_TRUE(b.expect("unlocked before ok"));
  }
  {  // during release: the release is in the server's socket when the holder dies
    std::string cid;
    Proc& a = sc.spawn_cmd("a-during", opts, &cid);
    Proc& b = sc.spawn_cmd("b-during", opts);
    a.send("lock during");
    auto ga = a.expect("granted during");
    ASSERT_TRUE(ga);
    b.send("lock during");
    ASSERT_TRUE(eventually([&] { return zcard(server, "during", "q") == 1; }));
    server.pause();
    a.send("unlock during");
    EXPECT_TRUE(a.expect("unlocking during"));
    std::this_thread::sleep_for(150ms);  // the release is written and waits for the server
    Micros k = sc.kill("a-during");
    server.resume();
    sc.fault(2);
    dead.push_back(cid);
    auto gb = b.expect("granted during", 60s);
    ASSERT_TRUE(gb) << "the waiter behind a holder killed mid-release was never granted";
    EXPECT_LE(sc.now() - k, (lease + 15000) * 1000);
    EXPECT_GT(fence_in(gb), fence_in(ga));
    b.send("unlock during");
    EXPECT_TRUE(b.expect("unlocked during ok"));
  }
  {  // after release: killed once the handoff was made, while queued again
    std::string cid;
    Proc& a = sc.spawn_cmd("a-after", opts, &cid);
    Proc& b = sc.spawn_cmd("b-after", opts);
    a.send("lock after");
    auto ga = a.expect("granted after");
    ASSERT_TRUE(ga);
    b.send("lock after");
    ASSERT_TRUE(eventually([&] { return zcard(server, "after", "q") == 1; }));
    a.send("unlock after");
    EXPECT_TRUE(a.expect("unlocked after ok"));
    auto gb = b.expect("granted after", 60s);
    ASSERT_TRUE(gb);
    a.send("lock after");  // queues behind b
    ASSERT_TRUE(eventually([&] { return zcard(server, "after", "q") == 1; }));
    Micros k = sc.kill("a-after");
    sc.fault();
    dead.push_back(cid);
    expect_bounded_entries(server, {"after"}, cid, k, lease, liveness);
    std::this_thread::sleep_for(std::chrono::milliseconds(2 * liveness));
    b.send("owns after");
    EXPECT_EQ(b.expect("owns after"), std::optional<std::string>("owns after 1"))
        << "the holder was disturbed by a dead waiter behind it";
    b.send("unlock after");
    EXPECT_TRUE(b.expect("unlocked after ok"));
  }
  for (auto& [wid, p] : sc.procs()) {
    if (p->running()) p->send("exit");
  }
  sc.wait_all(60s);
  CheckConfig cfg;
  sc.check(cfg);
  expect_clean_end(sc, {{"before", 1}, {"during", 1}, {"after", 1}}, dead, std::max(lease, liveness) + 500);
}

// Waiters killed at the head and in the middle of the queue: the queue
// moves on in order, within the dead waiters' liveness.
TEST(Faults, WaitersKilledAtTheHeadAndInTheMiddle) {
  test::RedisServer server;
  Scenario sc(server, "waiter-kill");
  sc.start_log();
  // Liveness 3 s: a waiter keeps its place however slowly the next ones
  // start (a stall of 2 s between its heartbeats would send it to the tail).
  const long lease = 3000, liveness = 3000;
  const std::vector<std::string> opts = {"lease=3000", "liveness=3000"};
  Proc& holder = sc.spawn_cmd("holder", opts);
  holder.send("lock q");
  ASSERT_TRUE(holder.expect("granted q"));
  std::vector<std::string> cid(5);
  for (int i = 0; i < 5; ++i) {
    Proc& w = sc.spawn_cmd("w" + std::to_string(i), opts, &cid[i]);
    w.send("lock q");
    ASSERT_TRUE(eventually([&] { return zcard(server, "q", "q") == i + 1; })) << "waiter " << i << " did not queue";
  }
  Micros k0 = sc.kill("w0");  // the head
  Micros k2 = sc.kill("w2");  // the middle
  sc.fault(2);
  expect_bounded_entries(server, {"q"}, cid[0], k0, lease, liveness);
  expect_bounded_entries(server, {"q"}, cid[2], k2, lease, liveness);
  holder.send("unlock q");
  EXPECT_TRUE(holder.expect("unlocked q ok"));
  Micros released = sc.now();
  std::uint64_t last = 0;
  for (int i : {1, 3, 4}) {
    Proc& w = sc.proc("w" + std::to_string(i));
    auto g = w.expect("granted q", 60s);
    ASSERT_TRUE(g) << "waiter " << i << " was never granted";
    if (i == 1) {
      EXPECT_LE(sc.now() - released, (liveness + 15000) * 1000) << "the dead head stalled the queue";
    }
    EXPECT_GT(fence_in(g), last) << "waiter " << i << " was served out of order";
    last = fence_in(g);
    w.send("unlock q");
    EXPECT_TRUE(w.expect("unlocked q ok"));
  }
  for (auto& [wid, p] : sc.procs()) {
    if (p->running()) p->send("exit");
  }
  sc.wait_all(60s);
  sc.check();
  expect_clean_end(sc, {{"q", 1}}, {cid[0], cid[2]}, liveness + 500);
}

// Random SIGKILLs of holders, waiters and anyone, under contention on two
// locks and a semaphore, with replacements joining all the time.
TEST(Faults, ProcessesKilledAtRandomPointsUnderContention) {
  test::RedisServer server;
  Scenario sc(server, "random-kill");
  sc.start_log();
  const long lease = 1200, liveness = 800;
  const Names names = {{"a", 1}, {"b", 1}, {"s", 2}};
  const auto run_for = std::chrono::seconds(env_int("FAIRLOCK_FAULT_SECONDS", 8));
  const auto end = std::chrono::steady_clock::now() + run_for;
  std::mt19937 rng(static_cast<unsigned>(env_int("FAIRLOCK_FAULT_SEED", 4242)));
  int next_id = 0;
  auto spawn = [&] {
    double left = std::max(1.0, std::chrono::duration<double>(end - std::chrono::steady_clock::now()).count());
    const int id = next_id++;
    sc.spawn("w" + std::to_string(id),
             {"locks=a,b", "sems=s:2", "threads=1", "seconds=" + std::to_string(left), "seed=" + std::to_string(id + 1),
              "hold=0-40", "lease=1200", "liveness=800", "gap=0-10"});
  };
  for (int i = 0; i < 6; ++i) spawn();
  std::vector<std::string> dead;
  int holder_kills = 0, waiter_kills = 0, any_kills = 0;
  for (int round = 0; std::chrono::steady_clock::now() < end - 500ms && round < 1000; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(200, 450)(rng)));
    auto by_cid = sc.wid_by_cid();
    auto [holders, waiters, alive] = sc.roles({"a", "b", "s"});
    int kind = round % 3;
    std::vector<std::string>& pool = kind == 0 ? holders : kind == 1 ? waiters : alive;
    if (pool.empty()) continue;
    std::string victim = pool[std::uniform_int_distribution<size_t>(0, pool.size() - 1)(rng)];
    if (!sc.proc(victim).running()) continue;
    std::string victim_cid;
    for (auto& [c, w] : by_cid) {
      if (w == victim) victim_cid = c;
    }
    // Let it run a few ms more so the kill lands anywhere in its cycle.
    std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(0, 15)(rng)));
    Micros k = sc.kill(victim);
    sc.fault();
    (kind == 0 ? holder_kills : kind == 1 ? waiter_kills : any_kills)++;
    if (!victim_cid.empty()) {
      dead.push_back(victim_cid);
      expect_bounded_entries(server, {"a", "b", "s"}, victim_cid, k, lease, liveness);
    }
    spawn();
  }
  sc.wait_all(120s);
  CheckConfig cfg;
  cfg.allowed_unlock = {"ok", "lost"};  // a renewal delayed past the lease on a loaded machine
  auto r = sc.check(cfg);
  std::cout << "[figures] kills: " << holder_kills << " holders, " << waiter_kills << " waiters, " << any_kills
            << " anywhere" << std::endl;
  EXPECT_GE(holder_kills + waiter_kills + any_kills, 5);
  EXPECT_GT(r.valid, 20u);
  expect_clean_end(sc, names, dead, std::max(lease, liveness) + 500);
}

// The server frozen (SIGSTOP) for longer than a lease: the holder notices the
// loss by its own clock, the grant moves on after the resume, and the old
// holder never again believes it holds.
TEST(Faults, ServerPausedLongerThanALease) {
  test::RedisServer server;
  Scenario sc(server, "server-pause");
  sc.start_log();
  // a holds with a short lease; b waits with a liveness longer than the
  // pause (its lock() must ride it out); c waits with a shorter one (its
  // lock() must fail with a typed error by its deadline).
  Proc& a = sc.spawn_cmd("a", {"lease=800", "liveness=1000", "cmd_timeout=1000"});
  Proc& b = sc.spawn_cmd("b", {"lease=800", "liveness=8000", "cmd_timeout=1000"});
  Proc& c = sc.spawn_cmd("c", {"lease=800", "liveness=1000", "cmd_timeout=1000"});
  a.send("lock p");
  auto ga = a.expect("granted p");
  ASSERT_TRUE(ga);
  b.send("lock p");
  ASSERT_TRUE(eventually([&] { return zcard(server, "p", "q") == 1; }));
  c.send("lock p");
  ASSERT_TRUE(eventually([&] { return zcard(server, "p", "q") == 2; }));
  Micros paused = sc.now();
  server.pause();
  sc.fault();
  std::this_thread::sleep_for(3000ms);  // > lease and > c's liveness, < b's liveness
  a.send("owns p");
  EXPECT_EQ(a.expect("owns p", 30s), std::optional<std::string>("owns p 0")) << "lease expired, still owns_lock()";
  auto ce = c.expect("error", 30s);
  EXPECT_TRUE(ce && (ce->rfind("error timeouterr p", 0) == 0 || ce->rfind("error conn p", 0) == 0))
      << (ce ? *ce : "c's lock() neither failed nor returned");
  EXPECT_LE(sc.now() - paused, (1000 + 2 * 1000 + 5000) * 1000) << "c's lock() failed late";
  server.resume();
  auto gb = b.expect("granted p", 60s);
  ASSERT_TRUE(gb) << "b's lock() did not ride out a pause shorter than its liveness";
  EXPECT_GT(fence_in(gb), fence_in(ga));
  a.send("owns p");
  EXPECT_EQ(a.expect("owns p"), std::optional<std::string>("owns p 0"));
  a.send("unlock p");
  EXPECT_EQ(a.expect("unlocked p", 30s), std::optional<std::string>("unlocked p lost"));
  b.send("unlock p");
  EXPECT_EQ(b.expect("unlocked p", 30s), std::optional<std::string>("unlocked p ok"));
  for (auto* p : {&a, &b, &c}) p->send("exit");
  sc.wait_all(60s);
  CheckConfig cfg;
  cfg.allowed_unlock = {"ok", "lost"};
  cfg.allowed_outcomes = {"timeouterr", "conn"};
  sc.check(cfg);
  auto& gs = sc.history().grants;
  auto it = std::find_if(gs.begin(), gs.end(), [](const GrantRec& g) { return g.wid == "a"; });
  ASSERT_NE(it, gs.end());
  EXPECT_GE(it->lost_cb, 0) << "on_lost was never called for the holder whose lease ran out";
}

// A pause shorter than the lease loses nothing.
TEST(Faults, ServerPausedBrieflyLosesNothing) {
  test::RedisServer server;
  Scenario sc(server, "server-blip");
  sc.start_log();
  const std::vector<std::string> opts = {"lease=20000", "liveness=20000"};
  Proc& a = sc.spawn_cmd("a", opts);
  Proc& b = sc.spawn_cmd("b", opts);
  a.send("lock p");
  ASSERT_TRUE(a.expect("granted p"));
  b.send("lock p");
  ASSERT_TRUE(eventually([&] { return zcard(server, "p", "q") == 1; }));
  server.pause();
  sc.fault();
  std::this_thread::sleep_for(300ms);
  server.resume();
  std::this_thread::sleep_for(300ms);
  a.send("owns p");
  EXPECT_EQ(a.expect("owns p"), std::optional<std::string>("owns p 1"));
  EXPECT_EQ(zcard(server, "p", "q"), 1);  // b still waits its turn
  a.send("unlock p");
  EXPECT_EQ(a.expect("unlocked p"), std::optional<std::string>("unlocked p ok"));
  EXPECT_TRUE(b.expect("granted p"));
  b.send("unlock p");
  EXPECT_EQ(b.expect("unlocked p"), std::optional<std::string>("unlocked p ok"));
  a.send("exit");
  b.send("exit");
  sc.wait_all(60s);
  sc.check();
}

// A holder *process* frozen for longer than its lease: the grant moves on
// while it sleeps; when it wakes up it knows, by its own clock, that it no
// longer holds (its validity samples stop before the next grant).
TEST(Faults, HolderProcessPausedLongerThanItsLease) {
  test::RedisServer server;
  Scenario sc(server, "client-pause");
  sc.start_log();
  // Only a's lease is under test: b's outlasts any stall of its heartbeat.
  Proc& a = sc.spawn_cmd("a", {"lease=700", "liveness=900"});
  Proc& b = sc.spawn_cmd("b", {"lease=5000", "liveness=3000"});
  a.send("lock p");
  auto ga = a.expect("granted p");
  ASSERT_TRUE(ga);
  b.send("lock p");
  ASSERT_TRUE(eventually([&] { return zcard(server, "p", "q") == 1; }));
  a.kill(SIGSTOP);
  sc.fault();
  auto gb = b.expect("granted p", 60s);
  ASSERT_TRUE(gb) << "the grant never moved on from a frozen holder";
  EXPECT_GT(fence_in(gb), fence_in(ga));
  std::this_thread::sleep_for(300ms);
  a.kill(SIGCONT);
  a.send("owns p");
  EXPECT_EQ(a.expect("owns p"), std::optional<std::string>("owns p 0"));
  std::this_thread::sleep_for(200ms);  // b holds while a's sampler runs again
  a.send("unlock p");
  EXPECT_EQ(a.expect("unlocked p"), std::optional<std::string>("unlocked p lost"));
  b.send("unlock p");
  EXPECT_EQ(b.expect("unlocked p"), std::optional<std::string>("unlocked p ok"));
  a.send("exit");
  b.send("exit");
  sc.wait_all(60s);
  CheckConfig cfg;
  cfg.allowed_unlock = {"ok", "lost"};
  sc.check(cfg);
}

// The server SIGKILLed and restarted twice under load: once for less than
// the waiters' liveness (blocked lock() calls complete), once for longer
// (they fail with a typed error by their deadline); clients reconnect on
// their own and carry on.
void restart_scenario(bool persistent) {
  std::vector<std::string> extra;
  if (persistent) extra = {"--appendonly", "yes", "--appendfsync", "always"};
  test::RedisServer server(extra);
  Scenario sc(server, persistent ? "restart-aof" : "restart");
  sc.start_log();
  // Loaded before any client: a reload is then only needed after a restart
  // that lost the library.
  ASSERT_EQ(server.cmd({"FUNCTION", "LOAD", std::string(detail::lua::library_source)}),
            std::string(detail::lua::library_name));
  const long liveness = 3000, cmd_timeout = 1000, connect_timeout = 1000;
  const int seconds = 20;  // the outages take >= 11 s: margin for slow restarts under sanitizers
  for (int i = 0; i < 4; ++i) {
    sc.spawn("w" + std::to_string(i),
             {"locks=a,b", "sems=s:2", "threads=2", "seconds=" + std::to_string(seconds),
              "seed=" + std::to_string(i + 11), "hold=0-30", "lease=2000", "liveness=3000", "cmd_timeout=1000",
              "connect_timeout=1000", "ops=lock:5,for:3,try:1", "for=50-1500"});
  }
  std::this_thread::sleep_for(2500ms);
  Micros down1 = sc.now();
  server.kill();
  sc.fault();
  std::this_thread::sleep_for(1500ms);  // < liveness
  server.restart();
  Micros up1 = sc.now();
  std::this_thread::sleep_for(2500ms);
  Micros down2 = sc.now();
  server.kill();
  sc.fault();
  std::this_thread::sleep_for(4500ms);  // > liveness
  server.restart();
  Micros up2 = sc.now();
  sc.wait_all(120s);
  CheckConfig cfg;
  cfg.allowed_outcomes = {"timeout", "busy", "cancelled", "conn", "timeouterr"};
  cfg.allowed_unlock = {"ok", "lost", "conn", "timeouterr"};
  auto r = sc.check(cfg);
  History& h = sc.history();
  // Typed errors were seen, and every failed call failed by its deadline:
  // liveness after its last good reply, plus the time of one failed attempt.
  std::size_t typed = 0;
  const Micros bound = (liveness + 2 * cmd_timeout + connect_timeout + 5000) * 1000;
  for (auto& ret : h.returns) {
    if (ret.outcome != "conn" && ret.outcome != "timeouterr") continue;
    ++typed;
    Micros from = std::max(ret.t_call, ret.t_ret > down2 ? down2 : down1);  // the outage it failed in
    EXPECT_LE(ret.t_ret - from, bound) << ret.wid << " " << ret.op << " failed only after " << (ret.t_ret - from) / 1000
                                       << " ms: " << ret.msg;
  }
  EXPECT_GT(typed, 0u) << "a 4.5 s outage produced no typed error";
  // Blocked lock() calls across the short outage completed.
  std::size_t across_short = 0;
  for (auto& g : h.grants) {
    if (g.t_call < down1 && g.start > up1) ++across_short;
  }
  // Every worker carried on after the last restart, and reconnected.
  for (auto& [wid, w] : h.workers) {
    std::size_t after = 0;
    for (auto& g : h.grants) after += g.wid == wid && g.t_call > up2;
    EXPECT_GT(after, 0u) << wid << " got no grant after the restart";
    EXPECT_GT(w.stat("reconnects"), 0u) << wid;
  }
  // Without persistence each restart loses the library, and whichever
  // client misses it first loads it again; with an AOF it survives them.
  if (persistent) {
    EXPECT_EQ(h.total("script_reloads"), 0u);
  } else {
    EXPECT_GT(h.total("script_reloads"), 0u);
  }
  std::cout << "[figures] " << typed << " typed errors, " << across_short
            << " waits that outlived the short outage and completed, " << h.total("reconnects") << " reconnects, "
            << h.total("script_reloads") << " script reloads" << std::endl;
  if (persistent) {
    EXPECT_TRUE(sc.log()->losses().empty()) << "an fsync-always AOF lost data";
  } else {
    EXPECT_EQ(sc.log()->losses().size(), 2u);
  }
  EXPECT_GT(r.valid, 20u);
}

// A restart that has to load its data: while Redis loads, it answers every
// command with -LOADING. Like a refused connection, that is a transient
// state of the server: a blocked lock() (whose queue entry is in the data
// being loaded) must ride it out and be granted, not fail.
TEST(Faults, BlockedLockRidesOutTheServerLoadingItsData) {
  test::RedisServer server({"--enable-debug-command", "yes"});
  ASSERT_EQ(server.cmd({"DEBUG", "POPULATE", "1500000", "filler"}), "OK");  // ~1 s to load
  Options o;
  o.url = server.url();
  o.liveness_ttl = 30000ms;
  Client cb(o);
  LockOptions lo;
  lo.lease = 60000ms;
  const std::string name = "loading";
  RawParticipant a(server, name);  // the holder, immune to the client's pool
  ASSERT_EQ(a.acquire(60000, 60000).substr(0, 2), "1\n");
  FairLock b(cb, name, lo);
  std::atomic<int> outcome{0};
  std::string error;
  std::thread t([&] {
    try {
      b.lock();
      outcome = 1;
    } catch (const std::exception& e) {
      error = e.what();
      outcome = 2;
    }
  });
  ASSERT_TRUE(eventually([&] { return zcard(server, name, "q") == 1; }));
  ASSERT_EQ(server.cmd({"SAVE"}), "OK");
  server.kill();
  server.restart();  // returns once the data is loaded (PING answers)
  EXPECT_EQ(zcard(server, name, "h"), 1) << "the grant was not in the saved data";
  EXPECT_EQ(outcome.load(), 0) << "b's lock() failed while the server was loading: " << error;
  EXPECT_EQ(a.release(), "1");
  ASSERT_TRUE(eventually([&] { return outcome.load() != 0; }, 60s));
  t.join();
  EXPECT_EQ(outcome.load(), 1) << "b's lock() failed instead of being granted: " << error;
  if (outcome.load() == 1) b.unlock();
}

// unlock() right after the server came back must release: the pool's idle
// connections died with the old server process, and must not be used as if
// they were alive (the release would be lost and the next waiter would wait
// for the whole lease). The restart may also come while b's first call is
// in flight (the entry is seen before b read its reply): b's lock() must
// ride through that, as a queued wait does, not fail.
TEST(Faults, UnlockRightAfterAServerRestartReleases) {
  test::RedisServer server({"--appendonly", "yes", "--appendfsync", "always"});
  std::ostringstream log;  // what the library said, shown if the test fails
  Options o;
  o.url = server.url();
  o.liveness_ttl = 30000ms;  // heartbeats every 10 s: none in between
  o.logger = std::make_shared<spdlog::logger>("restart", std::make_shared<spdlog::sinks::ostream_sink_mt>(log));
  o.logger->set_level(spdlog::level::debug);
  Client ca(o), cb(o);
  LockOptions lo;
  lo.lease = 60000ms;
  const std::string name = "restart-unlock";
  FairLock a(ca, name, lo), b(cb, name, lo);
  a.lock();
  std::atomic<bool> got{false};
  std::string error;  // read after the join
  std::thread t([&] {
    try {
      b.lock();
      got = true;
    } catch (const std::exception& e) {
      error = e.what();
    }
  });
  ASSERT_TRUE(eventually([&] { return zcard(server, name, "q") == 1; }));
  server.kill();
  server.restart();
  ASSERT_EQ(zcard(server, name, "h"), 1) << "the grant did not survive the restart";
  EXPECT_EQ(a.release(), Released::released) << "release() with the server up again failed";
  EXPECT_TRUE(eventually([&] { return got.load(); }, 20s))
      << "the release was lost: the waiter waits for the 60 s lease";
  if (HasFailure()) {
    o.logger->flush();
    std::cout << "the library's log:\n" << log.str() << std::endl;
  }
  b.cancel();
  t.join();
  EXPECT_EQ(error, "") << "b's lock() failed: the restart may come while its first call is in flight";
  if (got) b.unlock();
}

// The same after CLIENT KILL of the client's idle command connections.
TEST(Faults, UnlockAfterItsIdleConnectionsWereKilledReleases) {
  test::RedisServer server;
  Options o;
  o.url = server.url();
  o.liveness_ttl = 30000ms;
  Client ca(o);
  LockOptions lo;
  lo.lease = 60000ms;
  const std::string name = "killed-idle";
  FairLock a(ca, name, lo);
  a.lock();
  RawParticipant next(server, name);
  ASSERT_EQ(next.acquire(60000, 60000).substr(0, 2), "0\n");  // queued behind a
  std::string list = server.cmd({"CLIENT", "LIST", "TYPE", "normal"});
  int killed = std::atoi(server.cmd({"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"}).c_str());
  ASSERT_GE(killed, 1) << list;
  std::string error;
  try {
    a.unlock();
  } catch (const std::exception& e) {
    error = e.what();
  }
  EXPECT_EQ(error, "") << "unlock() after its idle connection was killed failed";
  EXPECT_EQ(next.acquire(60000, 60000).substr(0, 2), "1\n") << "the release was lost";
  next.release();
}

TEST(Faults, ServerKilledAndRestartedWithoutPersistence) { restart_scenario(false); }
TEST(Faults, ServerKilledAndRestartedWithPersistence) { restart_scenario(true); }

// ------------------------------------------------------------ connections

// Over TLS, the workers connect to the server's TLS port (the checks and the
// MONITOR use its plain port).
void connections_killed_under_load(bool tls) {
  test::RedisServer server =
      tls ? test::RedisServer({}, test::TlsPort{test::pki().server, test::pki().server_key, test::pki().ca, false, {}})
          : test::RedisServer();
  Scenario sc(server, tls ? "client-kill-tls" : "client-kill");
  sc.start_log();
  const int seconds = 7;
  for (int i = 0; i < 3; ++i) {
    std::vector<std::string> args = {"locks=a,b",
                                     "sems=s:2",
                                     "threads=2",
                                     "seconds=" + std::to_string(seconds),
                                     "seed=" + std::to_string(i + 21),
                                     "hold=0-30",
                                     "lease=1500",
                                     "liveness=1000",
                                     std::string("notify=") + (i == 2 ? "keyspace" : "publish")};
    if (tls) args.insert(args.end(), {"url=" + server.tls_url(), "cacert=" + test::pki().ca});
    sc.spawn("w" + std::to_string(i), args);
  }
  std::mt19937 rng(7);  // NOLINT(cert-msc51-cpp): a reproducible kill schedule
  int command_kills = 0, subscriber_kills = 0;
  auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds - 1);
  for (int round = 0; std::chrono::steady_clock::now() < end && round < 1000; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(150, 400)(rng)));
    if (round % 2 == 0) {
      command_kills += kill_connections(server, false);
    } else {
      subscriber_kills += kill_connections(server, true);
    }
    sc.fault();
  }
  sc.wait_all(120s);
  CheckConfig cfg;
  cfg.allowed_outcomes = {"timeout", "busy", "cancelled", "conn", "timeouterr"};
  cfg.allowed_unlock = {"ok", "lost", "conn", "timeouterr"};
  auto r = sc.check(cfg);
  std::cout << "[figures] killed " << command_kills << " command and " << subscriber_kills
            << " subscriber connections; " << sc.history().total("reconnects") << " reconnects" << std::endl;
  EXPECT_GT(command_kills, 0);
  EXPECT_GT(subscriber_kills, 0);
  for (auto& [wid, w] : sc.history().workers) EXPECT_GT(w.stat("reconnects"), 0u) << wid;
  EXPECT_GT(r.valid, 50u);
  touch_names(server, {{"a", 1}, {"b", 1}, {"s", 2}});
  EXPECT_EQ(leaked_keys(server), std::vector<std::string>{});
}

TEST(Faults, ConnectionsKilledUnderLoad) { connections_killed_under_load(false); }
TEST(Faults, ConnectionsKilledUnderLoadOverTls) { connections_killed_under_load(true); }

// The wake signal of a handoff is sent while the waiter's subscriber is
// dead: CLIENT KILL TYPE pubsub and the release run in one MULTI/EXEC, so
// the PUBLISH (or the keyspace SET) reaches nobody. The waiter still gets the
// grant (re-subscribe + re-check, or the bounded timer), within its liveness.
// (In keyspace mode the waiter asks, subscribes to its name, then asks once
// more before it sleeps: the kill waits for that last ask.)
void lost_wake(Notify mode) {
  test::RedisServer server({"--notify-keyspace-events", "K$"});
  Options o;
  o.url = server.url();
  o.notify = mode;
  o.liveness_ttl = 1500ms;
  Client client(o);
  ASSERT_EQ(client.notify_mode(), mode);
  const std::string name = "lost-wake";
  // The holder is a raw protocol participant of another (fake) process.
  RawParticipant holder(server, name);
  ASSERT_EQ(holder.acquire(60000, 60000).substr(0, 2), "1\n");
  FairLock waiter(client, name);
  const test::CommandLog log(server);
  std::atomic<bool> got{false};
  std::thread t([&] {
    waiter.lock();
    got = true;
  });
  ASSERT_TRUE(eventually([&] { return zcard(server, name, "q") == 1; }));
  if (mode == Notify::keyspace) {
    const std::string channel = "__keyspace@0__:fairlock:{" + name + "}:wake:" + client.id();
    ASSERT_TRUE(eventually([&] { return log.asked_after_subscribing(channel); }));
  }
  auto before = client.stats();
  std::string exec = holder.release_in_multi_after({"CLIENT", "KILL", "TYPE", "pubsub"});
  auto parts = split(exec, '\n');
  ASSERT_EQ(parts.size(), 2u) << exec;
  EXPECT_GE(std::atoi(parts[0].c_str()), 1) << "no subscriber connection was killed";
  EXPECT_EQ(parts[1], "1") << "the release did not run";
  Micros t0 = Rec(recorder().port()).time_us();
  ASSERT_TRUE(eventually([&] { return got.load(); }, 60s)) << "a wake lost with its subscriber was lost for good";
  Micros waited = Rec(recorder().port()).time_us() - t0;
  t.join();
  EXPECT_LE(waited, (1500 + 15000) * 1000);
  auto after = client.stats();
  EXPECT_EQ(after.wakes_signal, before.wakes_signal) << "the signal cannot have arrived";
  EXPECT_TRUE(eventually([&] { return client.stats().reconnects >= before.reconnects + 1; }))
      << "the subscriber did not reconnect";
  EXPECT_TRUE(waiter.owns_lock());
  // Re-subscribed: the next handoff is signalled again. (In keyspace mode
  // once the name's channel is subscribed again, the event reaches the
  // subscriber, and is counted, however the waiter learns its grant.)
  FairLock second(client, name);
  std::thread t2([&] { second.lock(); });
  ASSERT_TRUE(eventually([&] { return zcard(server, name, "q") == 1; }));
  if (mode == Notify::keyspace) {
    ASSERT_TRUE(eventually([&] { return !server.cmd({"PUBSUB", "CHANNELS", "*{" + name + "}*"}).empty(); }));
  }
  auto mid = client.stats();
  waiter.unlock();
  t2.join();
  if (mode == Notify::publish) {
    EXPECT_EQ(client.stats().wakes_signal, mid.wakes_signal + 1) << "no signal after the subscriber came back";
  } else {
    EXPECT_TRUE(eventually([&] { return client.stats().wakes_keyspace >= mid.wakes_keyspace + 1; }))
        << "no keyspace event after the subscriber came back";
  }
  second.unlock();
  std::cout << "[figures] wake lost with the subscriber recovered after " << waited / 1000 << " ms (timer wakes "
            << after.wakes_timer - before.wakes_timer << ", heartbeat wakes "
            << after.wakes_heartbeat - before.wakes_heartbeat << ", keyspace wakes "
            << after.wakes_keyspace - before.wakes_keyspace << ")" << std::endl;
}

TEST(Faults, WakeSentWhileTheSubscriberIsDeadIsNotLostPublish) { lost_wake(Notify::publish); }
TEST(Faults, WakeSentWhileTheSubscriberIsDeadIsNotLostKeyspace) { lost_wake(Notify::keyspace); }

// ------------------------------------------------------------ flushes

TEST(Faults, ScriptFlushAndFlushallUnderLoad) {
  test::RedisServer server;
  Scenario sc(server, "flush");
  sc.start_log();
  const int seconds = 12;        // the flush schedule takes >= 6.6 s: margin for a slow machine
  for (int i = 0; i < 3; ++i) {  // w2 runs the scripts by EVALSHA, the others as functions
    sc.spawn("w" + std::to_string(i), {"locks=a,b", "sems=s:2", "threads=2", "seconds=" + std::to_string(seconds),
                                       "seed=" + std::to_string(i + 31), "hold=0-40", "lease=1500", "liveness=1000",
                                       i == 2 ? "scripts=evalsha" : "scripts=functions"});
  }
  // The flushes start once every worker has started (its S record), so
  // that they land on running workers however slowly those start.
  ASSERT_TRUE(eventually([&] { return sc.wid_by_cid().size() == 3; }, 60s)) << "the workers did not start";
  int script_flushes = 0, flushalls = 0;
  for (int i = 0; i < 12; ++i) {
    std::this_thread::sleep_for(250ms);
    EXPECT_EQ(server.cmd({"FUNCTION", "FLUSH"}), "OK");
    EXPECT_EQ(server.cmd({"SCRIPT", "FLUSH"}), "OK");
    ++script_flushes;
    sc.fault();
  }
  for (int i = 0; i < 3; ++i) {
    std::this_thread::sleep_for(1200ms);
    EXPECT_EQ(server.cmd({"FLUSHALL"}), "OK");
    ++flushalls;
    sc.fault();
  }
  Micros last_flush = sc.now();
  sc.wait_all(120s);
  CheckConfig cfg;
  cfg.allowed_unlock = {"ok", "lost"};  // a grant wiped by FLUSHALL is lost, and must say so
  auto r = sc.check(cfg);
  History& h = sc.history();
  EXPECT_EQ(sc.log()->losses().size(), 3u);
  EXPECT_GT(h.total("script_reloads"), 0u);
  std::size_t after = 0;
  for (auto& g : h.grants) after += g.t_call > last_flush;
  EXPECT_GT(after, 0u) << "nothing was granted after the last FLUSHALL";
  std::cout << "[figures] " << script_flushes << " FUNCTION FLUSH + SCRIPT FLUSH, " << flushalls << " FLUSHALL, "
            << h.total("script_reloads") << " script reloads, " << h.total("lost") << " grants reported lost"
            << std::endl;
  EXPECT_GT(r.valid, 50u);
  touch_names(server, {{"a", 1}, {"b", 1}, {"s", 2}});
  EXPECT_EQ(leaked_keys(server), std::vector<std::string>{});
}

}  // namespace
}  // namespace fairlock::faults
