// Faults of a busy slot of a real Redis Cluster (redis_cluster.h, 3 masters
// + 3 replicas) under contention, judged by the history checker over what
// the workers saw (no two holders overlap, reported or not; fences never
// repeat or fall): its master SIGKILLed again and again with
// Options::sync_replicas 1 and its replica 300 ms behind (the master's last
// writes die with it; no acknowledged grant lost), then the slot
// migrated key by key to another master and back, a CLUSTER FAILOVER, and a
// master added with the slot resharded to it. Every name of the workers
// lives in that one slot, so that every call meets every fault, and the
// queue must resume after each one within a bound.
#include <fairlock/fairlock.h>

#include <algorithm>
#include <future>
#include <iostream>

#include "failover_judge.h"
#include "protocol/scripts.h"
#include "protocol/slot.h"
#include "redis_cluster.h"
#include "scenario.h"
#include "test_util.h"

namespace fairlock::faults {
namespace {

using Clock = std::chrono::steady_clock;

// The slot of the faults: the cluster's last, the last of its master's
// ranges, so that add_master_and_reshard (which moves each master's last
// slots) moves it too.
constexpr int kBusySlot = test::RedisCluster::kSlots - 1;

// The lease and the liveness of the workers: longer than a failover (kill to
// promotion about 3 s) and than a migration of the slot (about 2 s) by the
// heartbeat's margin (two thirds of them), so that a holder keeps its grant
// through either.
constexpr long kLeaseMs = 8000;

// The first `count` names base0, base1, ... whose keys live in `slot`.
std::vector<std::string> names_in_slot(const std::string& base, int slot, int count) {
  std::vector<std::string> out;
  for (int i = 0; static_cast<int>(out.size()) < count; ++i) {
    const std::string name = base + std::to_string(i);
    if (detail::key_slot(qkey(name, "q")) == slot) out.push_back(name);
  }
  return out;
}

// A worker's arguments: two locks and a semaphore of 2 permits in the busy
// slot, one hold in thirty for 4 s (across a failover: a grant lost with the
// master would be believed while the new master grants the name again).
std::vector<std::string> worker_args(const test::RedisCluster& cluster, int sync) {
  const std::vector<std::string> n = names_in_slot("busy", kBusySlot, 3);
  for (const auto& name : n) EXPECT_EQ(cluster.slot_of(qkey(name, "q")), kBusySlot) << name;
  const std::string lease = std::to_string(kLeaseMs);
  return {"locks=" + n[0] + "," + n[1],
          "sems=" + n[2] + ":2",
          "threads=2",
          "sync=" + std::to_string(sync),
          "hold=0-20",
          "long_hold=3:4000",
          "lease=" + lease,
          "liveness=" + lease,
          "cmd_timeout=3000",
          "connect_timeout=1000",
          "ops=lock:4,for:3,try:1,asyncfor:2"};
}

// Generations of workers, each of kWorkers processes living kLife: a new one
// starts whenever the newest ends within kAhead. So the queue stays busy
// through every fault however long the harness takes on a loaded machine,
// and the run ends at most one life after its last fault (not after a
// guess of how long all faults take).
class Crew {
 public:
  static constexpr int kWorkers = 2;
  static constexpr std::chrono::seconds kLife{20}, kAhead{10};

  Crew(Scenario& sc, std::vector<std::string> args) : sc_(sc), args_(std::move(args)) { keep_busy(); }

  // Starts a generation if the newest ends within kAhead.
  void keep_busy() {
    if (Clock::now() + kAhead < ends_) return;
    const int g = generations_++;
    for (int i = 0; i < kWorkers; ++i) {
      std::vector<std::string> a = args_;
      a.push_back("seconds=" + std::to_string(kLife.count()));
      a.push_back("seed=" + std::to_string(g * kWorkers + i + 11));
      sc_.spawn("g" + std::to_string(g) + "w" + std::to_string(i), a);
    }
    ends_ = Clock::now() + kLife;
  }
  void busy_for(std::chrono::milliseconds d) {
    const auto end = Clock::now() + d;
    while (Clock::now() < end) {
      keep_busy();
      std::this_thread::sleep_for(50ms);
    }
  }
  // Runs `fault` (a harness call) on another thread, the crew kept busy meanwhile.
  template <typename F>
  auto during(F&& fault) {
    auto done = std::async(std::launch::async, std::forward<F>(fault));
    while (done.wait_for(50ms) != std::future_status::ready) keep_busy();
    return done.get();
  }
  // Keeps the crew busy until a grant began after `t` (recorder time), or for `limit`.
  void until_granted_after(Micros t, std::chrono::milliseconds limit) {
    const auto end = Clock::now() + limit;
    while (Clock::now() < end && !granted_after(t)) busy_for(50ms);
  }
  int generations() const { return generations_; }

 private:
  // Whether a G record not read before began after `t` (G gid wid name
  // permits fence t_call t_start ...). `t` only grows from call to call.
  bool granted_after(Micros t) {
    const std::string list = sc_.rec().cmd({"LRANGE", sc_.ev(), std::to_string(read_), "-1"});
    if (list.empty()) return false;
    const std::vector<std::string> lines = split(list, '\n');
    const auto hit = std::find_if(lines.begin(), lines.end(), [t](const std::string& line) {
      const std::vector<std::string> f = split(line);
      return f.size() > 7 && f[0] == "G" && std::atoll(f[7].c_str()) > t;
    });
    read_ += hit == lines.end() ? static_cast<long long>(lines.size()) : hit - lines.begin() + 1;
    return hit != lines.end();
  }

  Scenario& sc_;
  std::vector<std::string> args_;
  Clock::time_point ends_{};
  int generations_ = 0;
  long long read_ = 0;  // records of the history read so far
};

// Replication cut this long before each kill, as in the Sentinel suite:
// the grants, renewals and releases of that time are lost with the master.
constexpr std::chrono::milliseconds kReplicaBehind{300};

// How many kills the kill test runs: FAIRLOCK_CLUSTER_FAILOVERS (the issue
// asks for at least 20; each takes about 4.5 s with the harness's resettling).
int failovers() { return static_cast<int>(test::env_or("FAIRLOCK_CLUSTER_FAILOVERS", 20)); }

// The longest time without a grant starting, in ms, over the whole history.
long long longest_gap_ms(const History& h) {
  std::vector<Micros> starts;
  for (const GrantRec& g : h.grants) starts.push_back(g.start);
  std::sort(starts.begin(), starts.end());
  Micros gap = 0;
  for (std::size_t i = 1; i < starts.size(); ++i) gap = std::max(gap, starts[i] - starts[i - 1]);
  return gap / 1000;
}

// A queue resumed within the failover, a lease (a release lost with the
// master leaves its grant to run out) and a liveness period (a waiter's entry
// lost with it), plus a margin for the loaded machine: no stall beyond.
long long stall_bound_ms(long long fault_ms) { return fault_ms + kLeaseMs + kLeaseMs + 10000; }

TEST(ClusterFaults, MasterKilledAgainAndAgainLosesNoAcknowledgedGrant) {
  test::RedisCluster cluster;
  Scenario sc(cluster.url(), "cluster-kill");
  const int kills = failovers();
  Crew crew(sc, worker_args(cluster, 1));
  std::vector<long long> times;
  std::vector<Micros> killed_at;
  for (int k = 0; k < kills; ++k) {
    crew.busy_for(1000ms);  // contention on the new master before the next kill
    sc.fault();
    killed_at.push_back(sc.now());
    times.push_back(
        crew.during([&] { return cluster.kill_master_of_slot_and_wait_failover(kBusySlot, 60000ms, kReplicaBehind); })
            .count());
    crew.until_granted_after(killed_at.back(), std::chrono::milliseconds(stall_bound_ms(times.back())));
  }
  judge(sc, "cluster-kill", static_cast<std::size_t>(kills) * 10, std::chrono::seconds(120));
  const std::vector<long long> to_grant = first_grant_after(killed_at, sc.history());
  EXPECT_EQ(to_grant.size(), killed_at.size()) << "no grant after some kill: the queue did not resume";
  for (std::size_t i = 0; i < to_grant.size(); ++i) {
    EXPECT_LT(to_grant[i], stall_bound_ms(times[i])) << "kill " << i << ": the queue stalled";
  }
  std::cout << "[figures] " << kills << " kills of the busy slot's master (" << crew.generations()
            << " generations of workers), kill -> promotion " << test::p50_max(times) << "; kill -> first grant "
            << test::p50_max(to_grant) << "; longest time without a grant " << longest_gap_ms(sc.history()) << " ms\n";
}

// One fault of the second test: what, its end (recorder time), how long the
// harness took.
struct Fault {
  std::string what;
  Micros end = 0;
  long long ms = 0;
};

// Runs `fault` under load after 1.5 s of contention, then keeps the crew
// busy until the queue resumes (bounded).
template <typename F>
void inject(Scenario& sc, Crew& crew, std::vector<Fault>& faults, const std::string& what, F&& fault) {
  crew.busy_for(1500ms);
  sc.fault();
  Fault f{what};
  const auto t0 = Clock::now();
  crew.during(std::forward<F>(fault));
  f.ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
  f.end = sc.now();
  crew.until_granted_after(f.end, std::chrono::milliseconds(stall_bound_ms(0)));
  faults.push_back(f);
}

// After each fault's end, the first grant within a lease (a release that met
// the fault leaves its grant to run out), a liveness period (a waiter whose
// heartbeats met it) and a margin: a grant during the fault may come any
// time, so no stall beyond the fault's own duration and those.
void expect_resumed(const std::vector<Fault>& faults, const History& h) {
  std::string figures;
  for (const Fault& f : faults) {
    const std::vector<long long> to_grant = first_grant_after({f.end}, h);
    ASSERT_EQ(to_grant.size(), 1u) << f.what << ": no grant after it, the queue did not resume";
    EXPECT_LT(to_grant[0], stall_bound_ms(0)) << f.what << ": the queue stalled";
    figures += "; " + f.what + " " + std::to_string(f.ms) + " ms, end -> grant " + std::to_string(to_grant[0]) + " ms";
  }
  std::cout << "[figures] cluster-moves" << figures << "\n";
}

TEST(ClusterFaults, BusySlotMigratedFailedOverAndReshardedUnderLoad) {
  test::RedisCluster cluster;
  Scenario sc(cluster.url(), "cluster-moves");
  Crew crew(sc, worker_args(cluster, 0));
  int keys = 0;  // keys moved: the per-key hook runs on the harness's thread only
  const test::RedisCluster::KeyHook slowly = [&keys](const std::string&) {
    ++keys;
    std::this_thread::sleep_for(100ms);  // calls meet the split slot meanwhile
  };
  const int home = cluster.master_of_slot(kBusySlot);
  const int away = (home + 1) % 3;
  std::vector<Fault> faults;
  inject(sc, crew, faults, "migrated away", [&] { cluster.migrate_slot(kBusySlot, away, slowly); });
  inject(sc, crew, faults, "migrated back", [&] { cluster.migrate_slot(kBusySlot, home, slowly); });
  inject(sc, crew, faults, "CLUSTER FAILOVER", [&] { cluster.failover_coordinated(kBusySlot); });
  int added = -1;
  inject(sc, crew, faults, "added and resharded", [&] { added = cluster.add_master_and_reshard(3, slowly); });
  EXPECT_EQ(cluster.master_of_slot(kBusySlot), added) << "the reshard did not move the busy slot";
  judge(sc, "cluster-moves", 50, std::chrono::seconds(120));
  expect_resumed(faults, sc.history());
  std::cout << "[figures] cluster-moves: " << keys << " keys moved one by one, " << crew.generations()
            << " generations of workers, longest time without a grant " << longest_gap_ms(sc.history()) << " ms\n";
}

// A call of one of the scripts on `name`'s keys, on the master `s` (EVAL of
// the text the client loads).
std::string script(const test::RedisServer& s, detail::Script which, const std::string& name,
                   const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"EVAL", std::string(detail::script_source(which)), "7"};
  for (const char* suffix : {"q", "w", "h", "g", "seq", "o", "ev"}) argv.push_back(qkey(name, suffix));
  argv.insert(argv.end(), args.begin(), args.end());
  return s.cmd(argv);
}

bool queued(const test::RedisServer& s, const std::string& name, const std::string& member) {
  return s.cmd({"ZSCORE", qkey(name, "q"), member}) != "(nil)";
}

// The state that stalled a name's queue after a master kill (issue 44: 13-19
// s after the promotion, lease 8 s, liveness 5 s; here 12-14 s in 3 of 6
// kills): entries of live processes that the processes no longer had (left
// with a cancel that failed, the master being down, or granted and
// released, or left, in the writes the replica missed), queued ahead of
// their later claims. One liveness entry per process and name (w) kept them
// live while their processes waited there, so each in turn was granted at
// the head and held the permit, unused, for min(lease, liveness). Here
// the process (a Client) waits behind such an entry of its own and a
// foreign one: its heartbeat must remove its own (the foreign one stays),
// so the permit the holder frees goes to it, not to the entry.
TEST(ClusterFaults, AnEntryItsLiveProcessNoLongerHasLeavesTheQueue) {
  test::RedisCluster cluster;
  const std::string name = names_in_slot("ghost", kBusySlot, 1)[0];
  const test::RedisServer& master = cluster.node(cluster.master_of_slot(kBusySlot));
  Options o;
  o.url = cluster.url();
  o.liveness_ttl = 3000ms;  // heartbeats every second
  Client client(o);
  const std::string holder = "s00000000000000a1:" + std::string(24, '1') + ":60000";
  const std::string ghost = "s" + client.id() + ":" + std::string(24, '2') + ":8000";  // its own, abandoned
  const std::string foreign = "s00000000000000b2:" + std::string(24, '3') + ":60000";
  using detail::Script;
  ASSERT_EQ(script(master, Script::acquire, name, {holder, "1", "60000", "60000", "f"}).rfind("1\n", 0), 0u);
  // A liveness of a minute: a slow start of the lock's wait cannot let the
  // ghost expire by itself, which would pass without the floor.
  ASSERT_EQ(script(master, Script::acquire, name, {ghost, "1", "8000", "60000", "f"}).rfind("0\n", 0), 0u);
  ASSERT_EQ(script(master, Script::acquire, name, {foreign, "1", "60000", "60000", "f"}).rfind("0\n", 0), 0u);
  FairLock lock(client, name);
  auto got = std::async(std::launch::async, [&] { return lock.try_lock_for(60s); });
  const auto end = Clock::now() + 10s;  // ten heartbeat periods
  while (Clock::now() < end && master.cmd({"ZCARD", qkey(name, "q")}) != "3") std::this_thread::sleep_for(20ms);
  ASSERT_EQ(master.cmd({"ZCARD", qkey(name, "q")}), "3") << "the lock did not queue";
  // An entry of the process queued after its claim, which the process does
  // not send either: as a claim that queued after the heartbeat read them.
  const std::string late = "s" + client.id() + ":" + std::string(24, '4') + ":8000";
  ASSERT_EQ(script(master, Script::acquire, name, {late, "1", "8000", "60000", "f"}).rfind("0\n", 0), 0u);
  // Its heartbeat renews the process's liveness, which the ghost shares:
  // only the floor removes it.
  while (Clock::now() < end && queued(master, name, ghost)) std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(queued(master, name, ghost)) << "the process's abandoned entry is still queued ahead of its claim";
  EXPECT_TRUE(queued(master, name, foreign)) << "another process's entry was removed";
  EXPECT_TRUE(queued(master, name, late)) << "an entry queued after the claim was removed";
  EXPECT_EQ(script(master, Script::cancel, name, {foreign, "1"}), "1");
  EXPECT_EQ(script(master, Script::cancel, name, {late, "1"}), "1");
  EXPECT_EQ(script(master, Script::release, name, {holder, "1"}), "1");
  ASSERT_EQ(got.wait_for(30s), std::future_status::ready);
  EXPECT_TRUE(got.get());
  EXPECT_TRUE(lock.owns_lock());
  EXPECT_EQ(master.cmd({"HEXISTS", qkey(name, "g"), ghost}), "0") << "the abandoned entry was granted";
  lock.unlock();
}

}  // namespace
}  // namespace fairlock::faults
