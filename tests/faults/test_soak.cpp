// Soak: several worker processes with several threads each, on two locks and
// a semaphore, all three wake transports at once, random holds (some longer
// than a lease, so renewals matter), lock(), try_lock(), try_lock_for() with
// random deadlines and lock() cancelled from another thread, for
// FAIRLOCK_SOAK_SECONDS (default 60). The checker runs over the whole
// history and the server's own log; at the end nothing but the fence
// counters may be left in Redis.
#include <gtest/gtest.h>

#include "scenario.h"

namespace fairlock::faults {
namespace {

TEST(Soak, ProcessesAndThreadsOnLocksAndASemaphore) {
  const long seconds = env_int("FAIRLOCK_SOAK_SECONDS", 60);
  const long procs = env_int("FAIRLOCK_SOAK_PROCESSES", 4);
  const long threads = env_int("FAIRLOCK_SOAK_THREADS", 3);
  ASSERT_GT(seconds, 0);
  test::RedisServer server({"--notify-keyspace-events", "K$"});
  Scenario sc(server, "soak");
  sc.start_log();
  const char* modes[] = {"publish", "keyspace", "poll", "publish"};
  for (long i = 0; i < procs; ++i) {
    sc.spawn("w" + std::to_string(i),
             {"locks=soak:a,soak:b", "sems=soak:s:3", "threads=" + std::to_string(threads),
              "seconds=" + std::to_string(seconds), "seed=" + std::to_string(1000 + i), "lease=1000", "liveness=2000",
              "hold=0-15", "long_hold=1:1500", "for=5-300", "cancel=100", "gap=0-5", "ops=lock:4,for:3,try:2,cancel:2",
              std::string("notify=") + modes[i % 4]});
  }
  sc.wait_all(std::chrono::seconds(seconds + 180));
  CheckConfig cfg;
  cfg.allowed_unlock = {"ok", "lost"};  // a renewal late by a whole lease on a loaded machine
  auto r = sc.check(cfg);
  const History& h = sc.history();
  // Every kind of operation happened, everywhere.
  EXPECT_GT(r.outcomes["for:timeout"], 0u) << "no try_lock_for timed out";
  EXPECT_GT(r.outcomes["cancel:cancelled"], 0u) << "no lock() was cancelled";
  EXPECT_GT(r.outcomes["try:busy"], 0u) << "no try_lock found the lock busy";
  EXPECT_EQ(r.max_concurrent, 3u) << "the semaphore never had its 3 holders at once";
  for (const auto& [wid, w] : h.workers) EXPECT_GT(w.stat("grants"), 0u) << wid << " starved";
  std::map<std::string, std::size_t> per_name;
  for (const auto& g : h.grants) ++per_name[g.name];
  for (const char* n : {"soak:a", "soak:b", "soak:s"}) EXPECT_GT(per_name[n], 0u) << n;
  EXPECT_GT(h.total("wakes_signal"), 0u);
  EXPECT_GT(h.total("wakes_keyspace"), 0u);
  EXPECT_GT(h.total("wakes_timer") + h.total("wakes_heartbeat"), 0u);
  // No leaks: every claim was released or cancelled by its process.
  EXPECT_EQ(leaked_keys(server), std::vector<std::string>{});
  std::cout << "[figures] soak: " << seconds << " s, " << procs << " processes x " << threads << " threads, "
            << per_name["soak:a"] << "+" << per_name["soak:b"] << " lock grants, " << per_name["soak:s"]
            << " semaphore grants, " << h.total("lost") << " lost, " << h.total("wakes_signal") << " publish wakes, "
            << h.total("wakes_keyspace") << " keyspace wakes, " << h.total("wakes_timer") << " timer wakes, "
            << h.total("heartbeats") << " heartbeat rounds" << std::endl;
}

}  // namespace
}  // namespace fairlock::faults
