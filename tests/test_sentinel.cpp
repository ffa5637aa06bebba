// The library and the `fairlock` command through a real Sentinel set
// (sentinel_set.h): FIFO across processes, a semaphore, the async API, TLS
// to the sentinels and the data nodes, a sentinel that is down, a master
// name no sentinel knows, and a holder and a waiter carried across a
// failover (the new master's first grant measured), a release lost in a
// failover sent again.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <future>
#include <iostream>
#include <memory>
#include <thread>
#include <vector>

#include "fairlock/fairlock.h"
#include "sentinel_set.h"
#include "test_cli_util.h"
#include "test_util.h"
#include "tls_pki.h"

namespace fairlock::test {
namespace {

using namespace std::chrono_literals;

Options through(const SentinelSet& set) {
  Options o;
  o.url = set.url();
  o.liveness_ttl = 3000ms;
  if (set.tls()) o.tls.ca_file = pki().ca;
  return o;
}

RedisServer& master_of(SentinelSet& set) { return set.node(set.master_index()); }

// One shared set for the tests that do not fail it over.
SentinelSet& steady_set() {
  static SentinelSet set;
  return set;
}

// `fairlock run` processes queued one at a time (each seen in the master's
// queue before the next starts) run their commands in arrival order.
TEST(Sentinel, CommandsRunInArrivalOrderAcrossProcesses) {
  SentinelSet& set = steady_set();
  const std::string name = unique_name("sentinel-fifo");
  Client holder_client(through(set));
  FairLock holder(holder_client, name);
  holder.lock();
  TempFile order;
  std::vector<std::unique_ptr<Child>> runs;
  for (int i = 0; i < 5; ++i) {
    const std::string cmd = "echo " + std::to_string(i) + " >> " + order.path;
    runs.push_back(std::make_unique<Child>(FAIRLOCK_CLI_PATH, cli({"run", name, "sh", "-c", cmd}, set.url()), true));
    ASSERT_TRUE(eventually([&] { return zcard(master_of(set), name, "q") == i + 1; }, 20000ms)) << "run " << i;
  }
  holder.unlock();
  for (auto& r : runs) EXPECT_EQ(r->wait(), 0) << r->rest();
  EXPECT_EQ(order.text(), "0\n1\n2\n3\n4\n");
}

TEST(Sentinel, SemaphoreNeverAdmitsMoreThanItsPermits) {
  EXPECT_EQ(most_inside_a_semaphore(through(steady_set()), unique_name("sentinel-sem"), 2), 2);
}

// `fairlock run -p 2` processes through the set: each command logs "+"
// when it starts and "-" when it ends (appends of 2 bytes: atomic); at no
// point of the log are more than 2 inside (1 s each: they overlap), and all 6 ran.
TEST(Sentinel, SemaphoreAdmitsTwoProcessesAtATime) {
  SentinelSet& set = steady_set();
  const std::string name = unique_name("sentinel-sem-cli");
  TempFile log;
  const std::string cmd = "echo + >> " + log.path + "; sleep 1; echo - >> " + log.path;
  std::vector<std::unique_ptr<Child>> runs;
  for (int i = 0; i < 6; ++i) {
    runs.push_back(std::make_unique<Child>(
        FAIRLOCK_CLI_PATH, cli({"run", "-p", "2", "-w", "60", name, "sh", "-c", cmd}, set.url()), true));
  }
  for (auto& r : runs) EXPECT_EQ(r->wait(), 0) << r->rest();
  int inside = 0, most = 0, ran = 0;
  for (const char c : log.text()) {
    if (c == '+') {
      ++ran;
      most = std::max(most, ++inside);
    } else if (c == '-') {
      --inside;
    }
  }
  EXPECT_EQ(ran, 6);
  EXPECT_EQ(most, 2) << log.text();
}

TEST(Sentinel, AsyncWaitIsGrantedOnRelease) {
  SentinelSet& set = steady_set();
  const std::string name = unique_name("sentinel-async");
  Client c(through(set));
  FairLock first(c, name);
  first.lock();
  FairLock second(c, name);
  std::promise<std::uint64_t> granted;
  auto handle = second.lock_async([&](const AcquireResult& r) { granted.set_value(r.fence()); });
  ASSERT_TRUE(eventually([&] { return zcard(master_of(set), name, "q") == 1; }, 20000ms));
  const std::uint64_t first_fence = first.fence();
  first.unlock();
  auto f = granted.get_future();
  ASSERT_EQ(f.wait_for(20s), std::future_status::ready);
  EXPECT_GT(f.get(), first_fence);
  second.unlock();
}

TEST(Sentinel, AnUnknownMasterNameIsASetupErrorAtOnce) {
  SentinelSet& set = steady_set();
  Options o = through(set);
  o.url = o.url.substr(0, o.url.find('#')) + "#no-such-master";
  const auto t0 = std::chrono::steady_clock::now();
  bool made = false;
  try {
    Client c(o);
    made = true;
  } catch (const UnknownMasterError& e) {
    EXPECT_NE(std::string(e.what()).find("no-such-master"), std::string::npos) << e.what();
    EXPECT_TRUE(is_setup_error(e));
  }
  EXPECT_FALSE(made) << "a client was made for a master no sentinel knows";
  EXPECT_LT(since(t0), 10000ms);
  const CliResult r = run_cli({"run", "x", "true"}, o.url);
  EXPECT_EQ(r.status, 78) << r.output;
}

TEST(Sentinel, ASentinelDownIsSkipped) {
  SentinelSet set;
  set.sentinel(0).kill();  // the first in the URL
  Client c(through(set));
  FairLock l(c, unique_name("sentinel-down"));
  l.lock();
  EXPECT_GT(l.fence(), 0u);
  l.unlock();
  const CliResult r = run_cli({"run", unique_name("sentinel-down-cli"), "echo", "ran"}, set.url());
  EXPECT_EQ(r.status, 0) << r.output;
}

TEST(Sentinel, OverTlsToTheSentinelsAndTheDataNodes) {
  SentinelSetOptions so;
  so.tls = true;
  SentinelSet set(so);
  ASSERT_EQ(set.url().rfind("rediss-sentinel://", 0), 0u) << set.url();
  Client c(through(set));
  FairLock l(c, unique_name("sentinel-tls"));
  l.lock();
  EXPECT_GT(l.fence(), 0u);
  l.unlock();
  Options wrong = through(set);
  wrong.tls.ca_file = pki().other_ca;  // the sentinels' certificates do not verify
  EXPECT_THROW(Client bad(wrong), TlsError);
}

// A holder and a waiter across a master's SIGKILL: the holder's grant (it
// reached both replicas: WAIT) survives on the new master, its release
// hands over to the waiter, and the fences keep rising. Prints the time
// from the kill to the waiter's grant.
TEST(Sentinel, HolderAndWaiterCarryOnAcrossAFailover) {
  SentinelSet set;
  const std::string name = unique_name("sentinel-carry");
  Client a_client(through(set)), b_client(through(set));
  FairLock a(a_client, name);
  a.lock();
  const std::uint64_t a_fence = a.fence();
  FairLock b(b_client, name);
  auto b_done = std::async(std::launch::async, [&] { return b.try_lock_for(60s); });
  ASSERT_TRUE(eventually([&] { return zcard(master_of(set), name, "q") == 1; }, 20000ms));
  EXPECT_EQ(master_of(set).cmd({"WAIT", "2", "5000"}), "2");
  const auto killed = std::chrono::steady_clock::now();
  const auto failover = set.kill_master_and_wait_failover();
  EXPECT_TRUE(a.owns_lock()) << "the holder's grant was replicated: it survives the failover";
  EXPECT_EQ(a.release(), Released::released);
  ASSERT_TRUE(b_done.get()) << "the waiter did not get its turn on the new master";
  const auto granted = since(killed);
  EXPECT_GT(b.fence(), a_fence);
  std::cout << "[figures] failover " << failover.count() << " ms; kill -> waiter's grant " << granted.count()
            << " ms (the test restarts the old master and waits for the set to settle in between)\n";
  b.unlock();
}

// Split brain seen by a client still talking to the old master: SIGSTOPped
// through a failover and resumed, it takes writes as master until the
// sentinels demote it (some 10 s). With sync_replicas its grant is never
// acknowledged (its replicas follow the new master): NotReplicatedError,
// and the grant is released there.
TEST(Sentinel, AGrantOnTheOldMasterAfterAFailoverIsNeverAcknowledged) {
  SentinelSet set;
  const int old = set.master_index();
  set.pause_master();
  set.node(old).resume();
  ASSERT_EQ(set.node(old).cmd({"ROLE"}).rfind("master", 0), 0u) << "demoted already: nothing to test";
  Options o;
  o.url = set.node(old).url();  // the old master, addressed directly
  o.sync_replicas = 1;
  o.sync_timeout = 300ms;
  o.command_timeout = 2000ms;
  Client c(o);
  FairLock l(c, unique_name("split-brain"));
  EXPECT_THROW((void)l.try_lock_for(1500ms), NotReplicatedError);
  EXPECT_FALSE(l.owns_lock());
  set.resume_old_master();
}

// The sentinels stalled (SIGSTOP, a partition) while the master is fine:
// nothing that renews or waits may depend on them (review of issue 34: the
// heartbeat asked them before renewing, ~3 s a round; a 1.5 s lease was lost
// and a waiter lost its place).
TEST(Sentinel, AHolderKeepsItsLeaseWhileTheSentinelsAreStalled) {
  SentinelSet set;
  Client c(through(set));
  LockOptions lo;
  lo.lease = 1500ms;
  std::atomic<int> lost{0};
  lo.on_lost = [&] { ++lost; };
  FairLock l(c, unique_name("sentinel-stalled"), lo);
  l.lock();
  std::this_thread::sleep_for(2s);  // the heartbeat's connection is open
  for (int i = 0; i < SentinelSet::kSentinels; ++i) set.sentinel(i).pause();
  std::this_thread::sleep_for(6s);
  const bool owned = l.owns_lock();
  for (int i = 0; i < SentinelSet::kSentinels; ++i) set.sentinel(i).resume();
  EXPECT_TRUE(owned) << "the grant was lost while only the sentinels were stalled";
  EXPECT_EQ(lost.load(), 0);
  EXPECT_EQ(l.release(), Released::released);
}

TEST(Sentinel, AWaiterKeepsItsPlaceWhileTheSentinelsAreStalled) {
  SentinelSet set;
  const std::string name = unique_name("sentinel-stalled-fifo");
  Options direct;
  direct.url = "redis://127.0.0.1:" + std::to_string(set.master_port());
  direct.liveness_ttl = 3000ms;
  Client a_client(direct), c_client(direct), b_client(through(set));
  FairLock a(a_client, name), b(b_client, name), c(c_client, name);
  a.lock();
  std::atomic<int> order{0};
  int b_turn = 0, c_turn = 0;
  auto bf = std::async(std::launch::async, [&] {
    if (b.try_lock_for(40s)) {
      b_turn = ++order;
      b.unlock();
    }
  });
  ASSERT_TRUE(eventually([&] { return zcard(master_of(set), name, "q") == 1; }, 20000ms));
  auto cf = std::async(std::launch::async, [&] {
    if (c.try_lock_for(40s)) {
      c_turn = ++order;
      c.unlock();
    }
  });
  ASSERT_TRUE(eventually([&] { return zcard(master_of(set), name, "q") == 2; }, 20000ms));
  std::this_thread::sleep_for(2s);  // the heartbeat's connections are open
  for (int i = 0; i < SentinelSet::kSentinels; ++i) set.sentinel(i).pause();
  std::this_thread::sleep_for(8s);
  a.unlock();
  for (int i = 0; i < SentinelSet::kSentinels; ++i) set.sentinel(i).resume();
  bf.get();
  cf.get();
  ASSERT_GT(b_turn, 0);
  ASSERT_GT(c_turn, 0);
  EXPECT_LT(b_turn, c_turn) << "b queued first, but lost its place while the sentinels were stalled";
}

// With min-replicas-to-write (docs/TOPOLOGIES.md recommends it), a master whose replicas
// are not back yet answers every write with -NOREPLICAS: a wait rides it out
// (review of issue 34: it failed at once, a final ServerError).
TEST(Sentinel, NoReplicasYetIsRiddenOutByAWait) {
  RedisServer master({"--min-replicas-to-write", "1"});
  const std::string port = std::to_string(master.port());
  std::unique_ptr<RedisServer> replica;
  std::thread later([&] {
    std::this_thread::sleep_for(1500ms);
    replica = std::make_unique<RedisServer>(std::vector<std::string>{"--replicaof", "127.0.0.1", port});
  });
  bool got = false;
  const auto t0 = std::chrono::steady_clock::now();
  try {
    Options o;
    o.url = master.url();
    Client c(o);
    FairLock l(c, unique_name("noreplicas"));
    got = l.try_lock_for(20s);
    if (got) l.unlock();
  } catch (const Error& e) {
    ADD_FAILURE() << "after " << since(t0).count() << " ms: " << e.what();
  }
  later.join();
  EXPECT_TRUE(got);
}

// A grant lost in a failover (the replicas were behind: the new master never
// had it) is reported when the client follows the new master, not at the
// next heartbeat: here rounds are 20 s apart, and on_lost comes within a few
// seconds of the failover.
TEST(Sentinel, AGrantLostInAFailoverIsReportedAtOnce) {
  SentinelSet set;
  Client c(long_lived(through(set)));  // heartbeat rounds every 20 s
  LockOptions lo = long_lease();
  std::promise<void> lost;
  std::atomic<bool> told{false};
  lo.on_lost = [&] {
    if (!told.exchange(true)) lost.set_value();
  };
  FairLock l(c, unique_name("sentinel-lost"), lo);
  set.cut_replication();  // the grant reaches no replica
  l.lock();
  set.kill_master_and_wait_failover(60000ms, 1ms);  // resumes the replicas after the kill
  const auto failed_over = std::chrono::steady_clock::now();
  ASSERT_EQ(lost.get_future().wait_for(15s), std::future_status::ready) << "the lost grant was not reported";
  EXPECT_LT(since(failed_over), 12000ms) << "reported by the periodic heartbeat, not at the master change";
  EXPECT_FALSE(l.owns_lock());
  EXPECT_EQ(l.release(), Released::lost);
}

// A release sent while the master is dead (the sentinels still name it)
// fails, and is asked again in the background: it runs on the new master,
// where the grant survived (WAIT 2), and the waiter is granted then, not
// when the holder's lease and liveness (60 s each) would have ended.
TEST(Sentinel, AReleaseDuringAFailoverRunsOnTheNewMaster) {
  SentinelSet set;
  Client a_client(long_lived(through(set))), b_client(through(set));
  const std::string name = unique_name("sentinel-release");
  FairLock a(a_client, name, long_lease());
  a.lock();
  FairLock b(b_client, name);
  auto b_done = std::async(std::launch::async, [&] { return b.try_lock_for(45s); });
  ASSERT_TRUE(eventually([&] { return zcard(master_of(set), name, "q") == 1; }, 20000ms));
  EXPECT_EQ(master_of(set).cmd({"WAIT", "2", "5000"}), "2");
  const int old_port = master_of(set).port();
  auto failover = std::async(std::launch::async, [&] { return set.kill_master_and_wait_failover(); });
  const auto dead = [old_port] {
    try {
      command_reply(old_port, {"PING"}, 500ms);
      return false;
    } catch (const std::exception&) {
      return true;
    }
  };
  ASSERT_TRUE(eventually(dead, 20000ms));
  const Released first = a.release();
  EXPECT_TRUE(first == Released::failed || first == Released::released) << static_cast<int>(first);
  failover.get();
  ASSERT_TRUE(b_done.get()) << "the release was not asked again on the new master: the grant waits out its lease";
  EXPECT_TRUE(b.owns_lock());
  b.unlock();
}

// A release that ran on the master but reached no replica (replication cut
// before it) comes back with the failover: the new master has the grant,
// acknowledged by both replicas before the cut, and would keep it for its
// 60 s lease. The releasing client sends it again when it learns the master
// changed, so a waiter is granted within the failover, not the lease.
TEST(Sentinel, AReleaseLostInAFailoverIsSentAgainToTheNewMaster) {
  SentinelSet set;
  const std::string name = unique_name("sentinel-lost-release");
  Client a_client(long_lived(through(set)));
  FairLock a(a_client, name, long_lease());
  a.lock();
  EXPECT_EQ(master_of(set).cmd({"WAIT", "2", "5000"}), "2");  // the grant is on both replicas
  set.cut_replication();
  ASSERT_EQ(a.release(), Released::released);       // on the master alone
  set.kill_master_and_wait_failover(60000ms, 1ms);  // resumes the replicas after the kill
  Client b_client(through(set));
  FairLock b(b_client, name);
  ASSERT_TRUE(b.try_lock_for(30s)) << "the lost release was not sent again: the grant waits out its 60 s lease";
  b.unlock();
}

}  // namespace
}  // namespace fairlock::test
