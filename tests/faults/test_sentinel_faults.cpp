// Failovers under contention through a real Sentinel set (sentinel_set.h),
// judged by the history checker over what the workers saw: with
// Options::sync_replicas 2 no acknowledged grant is lost (no two holders
// overlap, reported or not) and fences never repeat or fall, across the
// master SIGKILLed again and again with its replicas 300 ms behind (its last
// writes lost with it), a SENTINEL FAILOVER, and a sentinel killed and
// restarted.
#include <iostream>

#include "failover_judge.h"
#include "scenario.h"
#include "sentinel_set.h"
#include "test_util.h"

namespace fairlock::faults {
namespace {

// Workers that take `names` in turn through the set for `seconds`, each
// grant acknowledged by both replicas. One hold in thirty lasts 4 s: across a
// failover (about 2.7 s), so that a grant lost with the master would be
// believed while the new master grants the name again. The lease and the
// liveness outlast one failover, so that a holder keeps its grant through it.
void spawn_workers(Scenario& sc, int workers, int seconds) {
  for (int i = 0; i < workers; ++i) {
    sc.spawn("w" + std::to_string(i),
             {"locks=a,b", "sems=s:2", "threads=2", "seconds=" + std::to_string(seconds), "sync=2",
              "seed=" + std::to_string(i + 11), "hold=0-20", "long_hold=3:4000", "lease=8000", "liveness=8000",
              "cmd_timeout=3000", "connect_timeout=1000", "ops=lock:4,for:3,try:1,asyncfor:2"});
  }
}

// How many failovers the kill test runs: FAIRLOCK_SENTINEL_FAILOVERS (the
// issue asks for at least 20; each takes about 4 s with the set's resettling).
int failovers() { return static_cast<int>(test::env_or("FAIRLOCK_SENTINEL_FAILOVERS", 20)); }

TEST(SentinelFaults, MasterKilledAgainAndAgainLosesNoAcknowledgedGrant) {
  test::SentinelSet set;
  Scenario sc(set.url(), "sentinel-kill");
  const int kills = failovers();
  // Each kill takes about 6 s (1.5 s of contention, the failover, the old
  // master back as a replica): the workers outlast the last one by a margin
  // (a grant must follow every kill).
  spawn_workers(sc, 3, 8 * kills + 20);
  std::vector<long long> times;
  std::vector<Micros> killed_at;
  for (int k = 0; k < kills; ++k) {
    std::this_thread::sleep_for(1500ms);  // contention on the new master before the next kill
    sc.fault();
    killed_at.push_back(sc.now());
    // The replicas 300 ms behind: the grants, renewals and releases of that
    // time are lost with the master. None was acknowledged (WAIT waited on
    // the stopped replicas), so no holder believes in one.
    times.push_back(set.kill_master_and_wait_failover(60000ms, 300ms).count());
  }
  judge(sc, "sentinel-kill", static_cast<std::size_t>(kills) * 10, std::chrono::seconds(8 * kills + 120));
  const std::vector<long long> to_grant = first_grant_after(killed_at, sc.history());
  EXPECT_EQ(to_grant.size(), killed_at.size()) << "no grant after some kill: the queue did not resume";
  // Resumed within the failover, a lease (a release lost with the master
  // leaves its grant to run out) and a liveness period (a waiter's entry
  // lost with it), plus a margin for the loaded machine: no stall beyond.
  for (std::size_t i = 0; i < to_grant.size(); ++i) {
    EXPECT_LT(to_grant[i], times[i] + 8000 + 8000 + 10000) << "kill " << i << ": the queue stalled";
  }
  std::cout << "[figures] " << kills << " master kills, kill -> new master " << test::p50_max(times)
            << "; kill -> first grant " << test::p50_max(to_grant) << "\n";
}

TEST(SentinelFaults, CoordinatedFailoverAndASentinelRestartLoseNothing) {
  test::SentinelSet set;
  Scenario sc(set.url(), "sentinel-coordinated");
  spawn_workers(sc, 3, 40);
  std::this_thread::sleep_for(2000ms);
  sc.fault();
  set.sentinel(1).kill();
  std::this_thread::sleep_for(1000ms);
  set.sentinel(1).restart();
  sc.fault();
  const auto moved = set.failover_coordinated();
  judge(sc, "sentinel-coordinated", 50, std::chrono::seconds(160));
  std::cout << "[figures] SENTINEL FAILOVER: new master after " << moved.count() << " ms\n";
}

// Split brain: the master SIGSTOPped through the failover, then resumed
// while it still believes it is master (until the sentinels demote it,
// some 10 s later). Workers whose connections reach it again may be
// granted there; with sync_replicas those grants are never acknowledged
// (its replicas follow the new master): no two holders overlap.
TEST(SentinelFaults, OldMasterResumedAfterAFailoverGrantsNothingAcknowledged) {
  test::SentinelSet set;
  Scenario sc(set.url(), "sentinel-split");
  spawn_workers(sc, 3, 35);
  std::this_thread::sleep_for(2000ms);
  sc.fault();
  const auto moved = set.pause_master();
  sc.fault();
  const auto demoted = set.resume_old_master();
  judge(sc, "sentinel-split", 50, std::chrono::seconds(160));
  std::cout << "[figures] master stopped: new master after " << moved.count() << " ms; resumed, demoted after "
            << demoted.count() << " ms\n";
}

}  // namespace
}  // namespace fairlock::faults
