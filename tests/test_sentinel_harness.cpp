// The Sentinel set of the tests (sentinel_set.h) against its real processes:
// it starts with every sentinel knowing the whole set, fails over when the
// master is killed (several times in a row), keeps 2 replicas that receive
// the writes, does the same over TLS and with passwords, and leaves nothing
// behind. (SENTINEL FAILOVER and a stopped master, 47 s of waiting for
// Sentinel, are the fault suite's: tests/faults/test_sentinel_faults.cpp,
// which fails if they do not move the master.)
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "harness_checks.h"
#include "sentinel_set.h"
#include "test_util.h"

namespace fairlock::test {
namespace {

using namespace std::chrono_literals;
using ms = std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

// Upper bound for one failover: down-after (1.5 s), the vote, the promotion;
// a split vote adds twice the failover timeout (10 s). Generous for 2 loaded cores.
constexpr ms kFailoverBound{40000};

std::string role_of(const RedisServer& s) { return s.cmd({"ROLE"}); }

pid_t pid_of(const RedisServer& s) {
  const std::string info = s.cmd({"INFO", "server"});
  return static_cast<pid_t>(std::stol(info.substr(info.find("process_id:") + 11)));
}

// A replica of `master` (a data port) with its link up.
bool is_replica_of(const RedisServer& s, int master) {
  return role_of(s).rfind("slave\n127.0.0.1\n" + std::to_string(master) + "\nconnected\n", 0) == 0;
}

// A write on the master now reaches both replicas.
void expect_writes_replicated(SentinelSet& set) {
  RedisServer& m = set.node(set.master_index());
  EXPECT_EQ(m.cmd({"SET", unique_name("sentinel-write"), "v"}), "OK");
  EXPECT_EQ(m.cmd({"WAIT", "2", "1000"}), "2");
}

// Node `old` was master; now another node is, and `old` is its replica again.
void expect_moved_from(SentinelSet& set, int old) {
  const int now = set.master_index();
  EXPECT_NE(now, old);
  ASSERT_GE(now, 0);
  EXPECT_EQ(role_of(set.node(now)).substr(0, 7), "master\n");
  EXPECT_TRUE(is_replica_of(set.node(old), set.data_port(now))) << role_of(set.node(old));
  expect_writes_replicated(set);
}

void expect_failover_time(ms took) {
  EXPECT_GE(took, SentinelSetOptions{}.down_after);  // no sentinel acts before down-after
  EXPECT_LT(took, kFailoverBound);
}

// After a failover (the master is no longer node 0, the one in the config
// file written at the start), a sentinel restarted from the config it
// rewrote names the master of now, and the set settles with it.
void expect_restarted_sentinel_knows_the_master(SentinelSet& set) {
  ASSERT_NE(set.master_index(), 0);
  set.sentinel(1).kill();
  set.sentinel(1).restart();
  EXPECT_EQ(set.sentinel(1).cmd({"SENTINEL", "GET-MASTER-ADDR-BY-NAME", "fl"}),
            "127.0.0.1\n" + std::to_string(set.data_port(set.master_index())));
  set.wait_settled();
}

TEST(SentinelSet, StartsWithEverySentinelKnowingTheWholeSetAndLeavesNothing) {
  std::vector<pid_t> pids;
  std::vector<std::string> dirs;
  {
    const auto t0 = Clock::now();
    SentinelSet set;
    std::cout << "[ figures  ] one set started in " << since(t0).count() << " ms\n";
    const std::string sentinels = "127.0.0.1:" + std::to_string(set.sentinel(0).port()) +
                                  ",127.0.0.1:" + std::to_string(set.sentinel(1).port()) +
                                  ",127.0.0.1:" + std::to_string(set.sentinel(2).port());
    EXPECT_EQ(set.url(), "redis-sentinel://" + sentinels + "#fl");
    EXPECT_EQ(set.master_name(), "fl");
    for (int s = 0; s < SentinelSet::kSentinels; ++s)
      EXPECT_EQ(set.sentinel(s).cmd({"SENTINEL", "GET-MASTER-ADDR-BY-NAME", "fl"}),
                "127.0.0.1\n" + std::to_string(set.node(0).port()));
    EXPECT_EQ(set.master_port(), set.node(0).port());
    EXPECT_EQ(set.master_index(), 0);
    for (int i = 1; i < SentinelSet::kNodes; ++i) EXPECT_TRUE(is_replica_of(set.node(i), set.node(0).port()));
    expect_writes_replicated(set);
    for (int i = 0; i < 3; ++i) {
      for (RedisServer* s : {&set.node(i), &set.sentinel(i)}) {
        pids.push_back(pid_of(*s));
        dirs.push_back(std::filesystem::path(s->log_file()).parent_path());
      }
    }
  }
  for (pid_t p : pids) EXPECT_TRUE(::kill(p, 0) != 0 && errno == ESRCH) << p;  // reaped
  for (const auto& d : dirs) EXPECT_FALSE(std::filesystem::exists(d)) << d;
}

TEST(SentinelSet, NotReadyInTimeThrowsAndLeavesNoProcess) {
  expect_not_ready_and_nothing_left([] { SentinelSet set({}, 300ms); }, "SentinelSet: no ");
}

TEST(SentinelSet, KillingTheMasterInARowMovesItAndKeepsTwoReplicas) {
  SentinelSet set;
  std::vector<long long> took;
  const auto t0 = Clock::now();
  for (long k = 0; k < env_or("FAIRLOCK_SENTINEL_KILLS", 3); ++k) {
    const int old = set.master_index();
    const ms t = set.kill_master_and_wait_failover();
    took.push_back(t.count());
    expect_failover_time(t);
    expect_moved_from(set, old);
    if (k == 0) expect_restarted_sentinel_knows_the_master(set);
  }
  std::cout << "[ figures  ] " << took.size() << " kills: kill to new master " << p50_max(took) << "; "
            << since(t0).count() << " ms with the restarts\n";
  // With a sentinel down, the 2 others (a majority) still fail over.
  set.sentinel(2).kill();
  const int old = set.master_index();
  expect_failover_time(set.kill_master_and_wait_failover());
  expect_moved_from(set, old);
  set.sentinel(2).restart();
  set.wait_settled();
}

// With passwords: every process refuses a client without its password, the
// sentinels reach the data nodes (auth-pass) and each other (sentinel-pass),
// the replicas their master (masterauth), also after a failover.
TEST(SentinelSet, WithPasswordsStartsAndFailsOver) {
  SentinelSetOptions o;
  o.data_password = "data-secret";
  o.sentinel_password = "sentinel-secret";
  SentinelSet set(o);
  for (const RedisServer* s : {&set.node(0), &set.node(1), &set.sentinel(0)}) {
    Reply r = command_reply(s->port(), {"PING"}, 5000ms);
    ASSERT_TRUE(r);
    EXPECT_EQ(reply_text(r.get()).rfind("ERR:NOAUTH", 0), 0u) << reply_text(r.get());
  }
  expect_writes_replicated(set);
  const int old = set.master_index();
  expect_failover_time(set.kill_master_and_wait_failover());
  expect_moved_from(set, old);
}

// How many of s's clients (CLIENT LIST) have `what` in their line; -1 if
// one of them lacks `port` (its local address) there.
int links(const RedisServer& s, const std::string& what, const std::string& port) {
  std::istringstream in(s.cmd({"CLIENT", "LIST"}));
  int n = 0;
  for (std::string l; std::getline(in, l);) {
    if (l.find(what) == std::string::npos) continue;
    if (l.find(port) == std::string::npos) return -1;
    ++n;
  }
  return n;
}

TEST(SentinelSet, OverTlsStartsAndFailsOver) {
  SentinelSetOptions o;
  o.tls = true;
  const auto t0 = Clock::now();
  SentinelSet set(o);
  const ms started = since(t0);
  EXPECT_EQ(set.url().rfind("rediss-sentinel://127.0.0.1:" + std::to_string(set.sentinel(0).tls_port()) + ",", 0), 0u)
      << set.url();
  // The sentinels know the data nodes and each other by their TLS ports only.
  EXPECT_EQ(set.master_port(), set.node(0).tls_port());
  std::string others = set.sentinel(0).cmd({"SENTINEL", "SENTINELS", "fl"});
  EXPECT_NE(others.find("\nport\n" + std::to_string(set.sentinel(1).tls_port()) + "\n"), std::string::npos) << others;
  EXPECT_NE(others.find("\nport\n" + std::to_string(set.sentinel(2).tls_port()) + "\n"), std::string::npos) << others;
  // Every sentinel link and replication link arrives on a TLS port.
  const std::string tls_master = "laddr=127.0.0.1:" + std::to_string(set.node(0).tls_port()) + " ";
  // (At least one of each kind: a sentinel's link may be reconnecting just now.)
  EXPECT_GE(links(set.node(0), " name=sentinel-", tls_master), 1);
  EXPECT_EQ(links(set.node(0), " flags=S ", tls_master), 2);  // the replicas
  const std::string tls_sentinel = "laddr=127.0.0.1:" + std::to_string(set.sentinel(0).tls_port()) + " ";
  EXPECT_GE(links(set.sentinel(0), " name=sentinel-", tls_sentinel), 1);  // the other sentinels
  expect_writes_replicated(set);
  const int old = set.master_index();
  const ms took = set.kill_master_and_wait_failover();
  expect_failover_time(took);
  expect_moved_from(set, old);
  std::cout << "[ figures  ] TLS set started in " << started.count() << " ms, failed over in " << took.count()
            << " ms\n";
}

}  // namespace
}  // namespace fairlock::test
