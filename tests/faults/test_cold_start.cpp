// Processes that start in the middle of a failover. A storm of fresh
// processes, one started every kEvery while a master is killed (a Redis
// Cluster slot's, a Sentinel set's) or failed over by CLUSTER FAILOVER:
// workers (tests/faults/worker.cpp), each a new Client and one wait (timed
// 60 s, untimed, or lock_future timed 60 s, by its seed), and `fairlock run --wait
// 60s` commands. Every one must get its turn:
// no wait fails (a node the slot map or a sentinel names that cannot be
// reached yet is a failover under way, not a deployment that is down), every
// process exits 0, and the history checker finds no two holders at once.
// Found by a hunt: 2,001 of 2,658 fresh runs exited 69 at once through a
// cluster's failovers, while every suite passed (their clients all
// connected before the kill).
#include <iostream>

#include "failover_judge.h"
#include "protocol/slot.h"
#include "redis_cluster.h"
#include "scenario.h"
#include "sentinel_set.h"
#include "test_util.h"

namespace fairlock::faults {
namespace {

using Clock = std::chrono::steady_clock;

// The workers' name. The `fairlock run` commands take another in its slot
// (run_name()): they are judged by their exit status alone, not by the
// checker, and meet every fault the workers meet.
constexpr const char* kName = "storm";

// A fresh process every kEvery: a failover (about 3 s) starts about 20 of them.
constexpr std::chrono::milliseconds kEvery{150};

// How many kills the cluster kill test runs: FAIRLOCK_COLD_START_KILLS (2).
int kills() { return static_cast<int>(test::env_or("FAIRLOCK_COLD_START_KILLS", 2)); }

// The slot of kName's keys, whose master the cluster tests fail over.
int storm_slot() { return detail::key_slot(qkey(kName, "q")); }

// The first name stormrun0, stormrun1, ... in storm_slot().
std::string run_name() {
  for (int i = 0;; ++i) {
    std::string name = "stormrun" + std::to_string(i);
    if (detail::key_slot(qkey(name, "q")) == storm_slot()) return name;
  }
}

// Fresh processes, started in a loop while a fault runs.
class Storm {
 public:
  Storm(Scenario& sc, std::string url, int sync) : sc_(sc), url_(std::move(url)), sync_(sync) {}

  // Runs `fault` (a harness call) on another thread, starting a worker and a
  // `fairlock run` every kEvery meanwhile; `fault` returns the time from its
  // start to the new master, within which the processes started are counted
  // as started during the failover. Returns that time.
  template <typename F>
  std::chrono::milliseconds during(F&& fault) {
    const auto t0 = Clock::now();
    auto done = std::async(std::launch::async, std::forward<F>(fault));
    std::vector<Clock::time_point> started;
    do {
      started.push_back(Clock::now());
      start_one();
    } while (done.wait_for(kEvery) != std::future_status::ready);
    const std::chrono::milliseconds to_master = done.get();
    for (const auto& t : started) during_ += t >= t0 && t <= t0 + to_master ? 1 : 0;
    return to_master;
  }

  // Waits for every process (bounded): each must exit 0.
  void wait_all() {
    for (auto& [which, run] : runs_) {
      const int code = run->finish(std::chrono::seconds(90));
      EXPECT_EQ(code, 0) << which << " exited " << code << ": " << run->rest(std::chrono::milliseconds(100));
    }
    sc_.wait_all(std::chrono::seconds(90));
  }

  int started_during_failovers() const { return during_; }
  int started() const { return n_; }

 private:
  // A worker's liveness (15 s) outlasts a failover (kill to promotion about
  // 3 s, then the map read again within 1 s) several times over, on a loaded
  // machine too: an untimed wait rides out refused connections for that long.
  void start_one() {
    const std::string n = std::to_string(n_++);
    sc_.spawn("s" + n, {"locks=" + std::string(kName), "threads=1", "iters=1", "ops=for:1,lock:1,future:1",
                        "for=60000-60000", "hold=0-20", "lease=15000", "liveness=15000", "cmd_timeout=3000",
                        "connect_timeout=1000", "sync=" + std::to_string(sync_), "seed=" + n});
    std::vector<std::string> args = {"run", "--url", url_, "--wait", "60s", "--lease", "8s"};
    if (sync_ > 0) args.insert(args.end(), {"--sync-replicas", std::to_string(sync_)});
    args.insert(args.end(), {run_name(), "--", "true"});
    runs_.emplace_back("run " + n, std::make_unique<Proc>(FAIRLOCK_CLI_PATH, args, test::Pipes{false, true}));
  }

  Scenario& sc_;
  const std::string url_;
  const int sync_;
  int n_ = 0, during_ = 0;
  std::vector<std::pair<std::string, std::unique_ptr<Proc>>> runs_;
};

// The verdict over a storm: every process granted, no overlap, and enough of
// them started during the failovers to mean something.
void judge_storm(Scenario& sc, Storm& storm, const std::string& label) {
  storm.wait_all();
  const CheckResult r = sc.check(failover_check(), label);
  EXPECT_EQ(r.overlaps, 0u);
  for (const ReturnRec& w : sc.history().returns) {
    ADD_FAILURE() << w.wid << " " << w.op << " on " << w.name << " ended without a grant: " << w.outcome << ": "
                  << w.msg;
  }
  EXPECT_EQ(sc.history().unexpected, std::vector<std::string>{});
  EXPECT_EQ(r.grants, static_cast<std::size_t>(storm.started())) << "a worker's one wait was not granted";
  EXPECT_GE(storm.started_during_failovers(), 5) << "too few processes started during the failovers";
  std::cout << "[figures] " << label << ": " << storm.started() << " workers and as many `fairlock run`, "
            << storm.started_during_failovers() << " of each started between a fault and its new master\n";
}

TEST(ColdStart, ProcessesStartedDuringClusterMasterKillsGetTheirTurn) {
  test::RedisCluster cluster;
  Scenario sc(cluster.url(), "cold-cluster-kill");
  Storm storm(sc, cluster.url(), 0);
  for (int k = 0; k < kills(); ++k) {
    storm.during([&] { return cluster.kill_master_of_slot_and_wait_failover(storm_slot()); });
  }
  judge_storm(sc, storm, "cold-cluster-kill");
}

TEST(ColdStart, ProcessesStartedDuringACoordinatedClusterFailoverGetTheirTurn) {
  test::RedisCluster cluster;
  Scenario sc(cluster.url(), "cold-cluster-failover");
  Storm storm(sc, cluster.url(), 1);
  storm.during([&] { return cluster.failover_coordinated(storm_slot()); });
  storm.during([&] { return cluster.kill_master_of_slot_and_wait_failover(storm_slot()); });
  judge_storm(sc, storm, "cold-cluster-failover");
}

TEST(ColdStart, ProcessesStartedDuringASentinelMasterKillGetTheirTurn) {
  test::SentinelSet set;
  Scenario sc(set.url(), "cold-sentinel-kill");
  Storm storm(sc, set.url(), 1);
  storm.during([&] { return set.kill_master_and_wait_failover(); });
  judge_storm(sc, storm, "cold-sentinel-kill");
}

}  // namespace
}  // namespace fairlock::faults
