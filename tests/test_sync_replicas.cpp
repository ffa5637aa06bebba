// Options::sync_replicas against a master with two replicas, all three
// started here: a grant is the caller's only once WAIT found it on that many
// replicas; a grant that is not acknowledged by the deadline is released and
// the call fails with NotReplicatedError; a renewal extends what the holder
// believes only once acknowledged. Bounds are generous (CI runs on 2 loaded
// cores): WAIT's timeout is honoured at the server's cron tick (100 ms).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <future>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "test_util.h"

namespace fairlock::test {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using std::chrono::steady_clock;

// Lines of INFO replication on the master that say "state=online".
int online_replicas(const RedisServer& master) {
  const std::string info = master.cmd({"INFO", "replication"});
  int n = 0;
  for (auto at = info.find("state=online"); at != std::string::npos; at = info.find("state=online", at + 1)) ++n;
  return n;
}

class SyncReplicas : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    master_ = std::make_unique<RedisServer>(
        std::vector<std::string>{"--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0"});
    const std::string port = std::to_string(master_->port());
    for (auto& r : replicas_)
      r = std::make_unique<RedisServer>(std::vector<std::string>{"--replicaof", "127.0.0.1", port});
  }
  static void TearDownTestSuite() {
    for (auto& r : replicas_) r.reset();
    master_.reset();
  }
  void SetUp() override {
    for (auto& r : replicas_) r->resume();
    ASSERT_TRUE(eventually([] { return online_replicas(*master_) == 2; }, seconds(30))) << "replicas not online";
  }
  void TearDown() override {
    for (auto& r : replicas_) r->resume();
  }

  static Options opts(int replicas) {
    Options o;
    o.url = master_->url();
    o.liveness_ttl = milliseconds(900);
    o.sync_replicas = replicas;
    return o;
  }
  static long long waits() { return command_calls(*master_, "wait"); }
  // The grant is on both replicas: the holder kept inline (o), or h.
  static bool on_replicas(const std::string& name) {
    for (auto& r : replicas_) {
      const bool inline_holder = r->cmd({"EXISTS", key(name, "o")}) == "1";
      if (!inline_holder && r->cmd({"ZCARD", key(name, "h")}) == "0") return false;
    }
    return true;
  }

  static std::unique_ptr<RedisServer> master_;
  static std::unique_ptr<RedisServer> replicas_[2];
};

std::unique_ptr<RedisServer> SyncReplicas::master_;
std::unique_ptr<RedisServer> SyncReplicas::replicas_[2];

TEST_F(SyncReplicas, AGrantIsAcknowledgedByTwoReplicasBeforeLockReturns) {
  Client c(opts(2));
  const std::string name = unique_name("sync-up");
  FairLock lock(c, name);
  const long long before = waits();
  lock.lock();
  EXPECT_TRUE(lock.owns_lock());
  EXPECT_TRUE(on_replicas(name));  // WAIT said so: no polling here
  EXPECT_GE(waits(), before + 1);
  lock.unlock();
  ASSERT_TRUE(lock.try_lock_for(seconds(5)));
  EXPECT_TRUE(on_replicas(name));
  lock.unlock();
}

TEST_F(SyncReplicas, AStoppedReplicaFailsTheTryAndLeavesTheNameFree) {
  Client c(opts(2));
  Client other(opts(0));
  const std::string name = unique_name("sync-stopped");
  FairLock lock(c, name);
  replicas_[1]->pause();
  const auto t0 = steady_clock::now();
  EXPECT_THROW(lock.try_lock_for(seconds(1)), NotReplicatedError);
  const auto took = since(t0);
  EXPECT_GE(took, milliseconds(900));  // WAIT again until the deadline
  EXPECT_LT(took, milliseconds(3500));
  EXPECT_FALSE(lock.owns_lock());
  FairLock next(other, name);
  EXPECT_TRUE(next.try_lock());  // released: free at once
  next.unlock();
  const auto t1 = steady_clock::now();
  EXPECT_THROW(lock.try_lock(), NotReplicatedError);  // one WAIT of sync_timeout (1 s), not for ever
  EXPECT_LT(since(t1), milliseconds(3500));
}

TEST_F(SyncReplicas, AReplicaResumedBeforeTheDeadlineLetsTheLockSucceed) {
  Client c(opts(2));
  const std::string name = unique_name("sync-resumed");
  FairLock lock(c, name);
  replicas_[1]->pause();
  const auto t0 = steady_clock::now();
  std::thread resume([] {
    std::this_thread::sleep_for(milliseconds(600));
    replicas_[1]->resume();
  });
  bool got = false;
  EXPECT_NO_THROW(got = lock.try_lock_for(seconds(8)));
  resume.join();
  EXPECT_TRUE(got);
  EXPECT_GE(since(t0), milliseconds(500));
  EXPECT_TRUE(on_replicas(name));
  if (got) lock.unlock();
}

TEST_F(SyncReplicas, AHandoffGrantIsConfirmedByTheWokenWaiter) {
  Options slow = opts(2);
  slow.liveness_ttl = seconds(30);  // heartbeat rounds (and their WAITs) seconds apart
  Client a(slow);
  Client b(slow);
  const std::string name = unique_name("sync-handoff");
  FairLock first(a, name);
  FairLock second(b, name);
  first.lock();
  auto waiter = std::async(std::launch::async, [&] {
    second.lock();
    return second.fence();
  });
  ASSERT_TRUE(eventually([&] { return a.inspect(name).waiter_count == 1; }));
  const long long before = waits();
  first.unlock();
  ASSERT_EQ(waiter.wait_for(seconds(10)), std::future_status::ready);
  EXPECT_GT(waiter.get(), first.fence());
  EXPECT_GE(waits(), before + 1);  // the woken waiter's own WAIT
  for (auto& r : replicas_) EXPECT_EQ(r->cmd({"ZCARD", key(name, "h")}), "1");
  second.unlock();
}

TEST_F(SyncReplicas, AnAsyncWaitGetsNotReplicatedOnce) {
  Client c(opts(2));
  Client other(opts(0));
  const std::string name = unique_name("sync-async");
  FairLock lock(c, name);
  replicas_[1]->pause();
  std::atomic<int> calls{0};
  std::promise<std::string> outcome;  // "granted", or the error's type and text
  lock.lock_async(seconds(1), [&](const AcquireResult& r) {
    if (++calls > 1) return;
    try {
      r.rethrow();
      outcome.set_value("granted");
    } catch (const NotReplicatedError&) {
      outcome.set_value("NotReplicatedError");
    } catch (const std::exception& e) {
      outcome.set_value(std::string("other: ") + e.what());
    }
  });
  auto got = outcome.get_future();
  ASSERT_EQ(got.wait_for(seconds(10)), std::future_status::ready);
  EXPECT_EQ(got.get(), "NotReplicatedError");
  std::this_thread::sleep_for(milliseconds(300));  // a second callback would come now
  EXPECT_EQ(calls.load(), 1);
  FairLock next(other, name);
  EXPECT_TRUE(eventually([&] { return next.try_lock(); }, seconds(5)));
  next.unlock();
}

TEST_F(SyncReplicas, ARenewalNotAcknowledgedDoesNotExtendWhatTheHolderBelieves) {
  Options o = opts(2);
  o.sync_timeout = milliseconds(200);
  Client c(o);
  const std::string name = unique_name("sync-renewal");
  std::atomic<bool> lost{false};
  LockOptions lo;
  lo.lease = milliseconds(1500);
  lo.on_lost = [&] { lost = true; };
  FairLock lock(c, name, lo);
  lock.lock();
  replicas_[1]->pause();
  // The master keeps renewing the grant; the holder believes only what two
  // replicas acknowledged, so its validity runs out within about a lease.
  ASSERT_TRUE(eventually([&] { return lost.load(); }, seconds(10)));
  EXPECT_FALSE(lock.owns_lock());
  const QueueState st = c.inspect(name);
  ASSERT_EQ(st.holder_count, 1u);  // still renewed on the master
  EXPECT_GT(st.holders.at(0).lease_left.count(), 0);
  EXPECT_EQ(lock.release(), Released::lost);
}

// How far past its deadline `wait(d)` ends, `runs` times, the master
// stalled (SIGSTOP) from before each call: the shortest of the runs (a
// loaded machine makes some runs late, never one early).
template <class Wait>
std::vector<long long> overshoots(int runs, milliseconds d, Wait wait) {
  std::vector<long long> out;
  for (int i = 0; i < runs; ++i) {
    const auto t0 = steady_clock::now();
    wait(d);
    out.push_back((since(t0) - d).count());
  }
  return out;
}

// A stalled master is a stalled master, WAIT or not: with sync_replicas a
// timed wait ends by its deadline and the grace (100 ms) plus scheduling,
// as without it (its WAIT is timed to be answered by the deadline, and cut
// there). Before: the calls that carried a WAIT got 250 ms more, so no run
// ended before d + 350 ms (the cut at d + 250, then the give-up's 100 ms);
// now about d + 100 to 135 ms. The shortest of 3 runs is judged, against
// d + 300 ms: only a machine that held every run back 170 ms could fail it.
// The same without sync_replicas, which never had the slack.
TEST_F(SyncReplicas, ATimedWaitOnAStalledMasterEndsByItsDeadlineAndTheGrace) {
  const int runs = static_cast<int>(env_or("FAIRLOCK_STALL_RUNS", 3));
  // Room for a WAIT (kMinSyncWait) and the server's tick before it.
  const milliseconds d(env_or("FAIRLOCK_STALL_DEADLINE_MS", 300));
  for (const int sync : {1, 0}) {
    Client c(opts(sync));
    const std::string name = unique_name("sync-stalled-master");
    FairLock lock(c, name);
    lock.lock();  // loads the scripts, opens a connection
    lock.unlock();
    master_->pause();
    const std::vector<long long> blocking = overshoots(runs, d, [&](milliseconds t) { (void)lock.try_lock_for(t); });
    const std::vector<long long> async = overshoots(runs, d, [&](milliseconds t) {
      std::promise<void> called;
      lock.lock_async(t, [&](const AcquireResult&) { called.set_value(); });
      called.get_future().wait();
    });
    master_->resume();
    const long long first_blocking = *std::min_element(blocking.begin(), blocking.end());
    const long long first_async = *std::min_element(async.begin(), async.end());
    std::cout << "[figures] master stalled, sync_replicas " << sync << ", d = " << d.count()
              << " ms: try_lock_for(d) ends at d + min " << first_blocking << " ms, " << p50_max(blocking)
              << "; lock_async(d) calls back at d + min " << first_async << " ms, " << p50_max(async) << "\n";
    EXPECT_LT(first_blocking, 300) << "try_lock_for(d) ended at d + " << first_blocking << " ms at the soonest";
    EXPECT_LT(first_async, 300) << "lock_async(d) called back at d + " << first_async << " ms at the soonest";
  }
}

TEST_F(SyncReplicas, OffItSendsNoWaitAndNoMoreScripts) {
  Options o = opts(0);
  o.liveness_ttl = seconds(30);
  Client c(o);
  const std::string name = unique_name("sync-off");
  FairLock lock(c, name);
  lock.lock();  // the first call loads the library: counted from the second
  lock.unlock();
  const long long waits_before = waits();
  const long long publish_before = command_calls(*master_, "publish");
  const long long scripts_before = script_calls(*master_);
  for (int i = 0; i < 20; ++i) {
    lock.lock();
    lock.unlock();
  }
  EXPECT_EQ(waits(), waits_before);
  EXPECT_EQ(command_calls(*master_, "publish"), publish_before);
  EXPECT_EQ(script_calls(*master_) - scripts_before, 40);  // acquire and release: 2 per pair
}

TEST_F(SyncReplicas, OptionsAreChecked) {
  Options o = opts(-1);
  EXPECT_THROW(Client{o}, BadOption);
  o.sync_replicas = 17;
  EXPECT_THROW(Client{o}, BadOption);
  o.sync_replicas = 1;
  o.sync_timeout = milliseconds(0);
  EXPECT_THROW(Client{o}, BadOption);
  o.sync_timeout = milliseconds(1900);  // with its slack, longer than command_timeout (2 s)
  EXPECT_THROW(Client{o}, BadOption);
}

}  // namespace
}  // namespace fairlock::test
