// The Redis Cluster of the tests (redis_cluster.h) against its real
// processes: it forms (3 masters, 3 replicas, every slot) and leaves nothing
// behind, redirects a key asked on the wrong node, migrates a slot key by key
// (ASK and TRYAGAIN meanwhile), promotes a replica when its master is killed
// (twice, the killed node rejoining as a replica), fails over on CLUSTER
// FAILOVER, and takes a new master with slots resharded to it. With TLS:
// the nodes link over TLS, a TLS client is told the TLS ports (CLUSTER
// SLOTS, -MOVED) and a plain one the plain ports; a failover and a migration
// still work.
#include <gtest/gtest.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "fairlock/options.h"
#include "harness_checks.h"
#include "net/connection.h"
#include "net/reply.h"
#include "net/tls.h"
#include "net/url.h"
#include "redis_cluster.h"
#include "test_util.h"
#include "tls_pki.h"

namespace fairlock::test {
namespace {

using namespace std::chrono_literals;
using ms = std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

// Upper bound of one failover: node_timeout (1.5 s) until PFAIL, the gossip
// to FAIL, 0.5-1 s of replica delay, the vote; a failed election is retried
// after 4 x node_timeout (6 s). Generous for 2 loaded cores.
constexpr ms kFailoverBound{30000};
// CLUSTER FAILOVER: the master pauses its clients, the replica catches up,
// then the vote without delay (its own time-out is 5 s).
constexpr ms kCoordinatedBound{15000};

pid_t pid_of(const RedisServer& s) {
  const std::string info = s.cmd({"INFO", "server"});
  return static_cast<pid_t>(std::stol(info.substr(info.find("process_id:") + 11)));
}

std::string addr(const RedisCluster& c, int i) { return "127.0.0.1:" + std::to_string(c.data_port(i)); }

// A replica of node `master` with its link up.
bool is_replica_of(RedisCluster& c, int i, int master) {
  return c.node(i).cmd({"ROLE"}).rfind("slave\n127.0.0.1\n" + std::to_string(c.data_port(master)) + "\nconnected\n",
                                       0) == 0;
}

// A key (with a hash tag of its own) whose slot node `m` masters.
std::string key_at(const RedisCluster& c, int m, const std::string& base) {
  for (int n = 0;; ++n) {
    std::string k = "{" + base + std::to_string(n) + "}";
    if (c.master_of_slot(c.slot_of(k)) == m) return k;
  }
}

TEST(RedisCluster, FormsThreeMastersWithAReplicaEachAndLeavesNothing) {
  std::vector<pid_t> pids;
  std::vector<std::string> dirs;
  {
    const auto t0 = Clock::now();
    RedisCluster c;
    std::cout << "[ figures  ] 3+3 cluster formed in " << since(t0).count() << " ms\n";
    ASSERT_EQ(c.size(), 6);
    std::string seeds;
    for (int i = 0; i < 6; ++i) seeds += (i ? "," : "") + addr(c, i);
    EXPECT_EQ(c.seeds(), seeds);
    EXPECT_EQ(c.url(), "redis-cluster://" + seeds);
    const SlotMap map = c.slot_map();
    ASSERT_EQ(map.size(), 3u);
    for (int m = 0; m < 3; ++m) {
      EXPECT_EQ(map[m].first, m * 16384 / 3);
      EXPECT_EQ(map[m].last, (m + 1) * 16384 / 3 - 1);
      EXPECT_EQ(map[m].master, m);
      EXPECT_EQ(map[m].replicas, std::vector<int>{m + 3});
      EXPECT_TRUE(is_replica_of(c, m + 3, m)) << c.node(m + 3).cmd({"ROLE"});
      EXPECT_EQ(c.node(m).cmd({"CLUSTER", "MYID"}), c.id(m));
    }
    for (int i = 0; i < 6; ++i) {
      EXPECT_NE(c.node(i).cmd({"CLUSTER", "INFO"}).find("cluster_state:ok"), std::string::npos);
      EXPECT_EQ(c.node(i).cmd({"CLUSTER", "SLOTS"}), c.node(0).cmd({"CLUSTER", "SLOTS"}));
      pids.push_back(pid_of(c.node(i)));
      dirs.push_back(std::filesystem::path(c.node(i).log_file()).parent_path());
    }
    EXPECT_EQ(c.master_of_slot(0), 0);
    EXPECT_EQ(c.master_of_slot(16383), 2);
    EXPECT_EQ(c.replicas_of_slot(16383), std::vector<int>{5});
  }
  for (pid_t p : pids) EXPECT_TRUE(::kill(p, 0) != 0 && errno == ESRCH) << p;  // reaped
  for (const auto& d : dirs) EXPECT_FALSE(std::filesystem::exists(d)) << d;
}

TEST(RedisCluster, NotReadyInTimeThrowsAndLeavesNoProcess) {
  expect_not_ready_and_nothing_left([] { RedisCluster c({}, 1ms); }, "RedisCluster: no ");
}

TEST(RedisCluster, AKeyAskedOnTheWrongNodeIsMoved) {
  RedisCluster c;
  // The slots of the cluster specification's examples (CRC16 of the hash tag).
  EXPECT_EQ(c.slot_of("foo"), 12182);
  EXPECT_EQ(c.slot_of("{user1000}.following"), c.slot_of("{user1000}.followers"));
  EXPECT_EQ(c.slot_of("{user1000}.following"), c.slot_of("user1000"));
  const std::string k = key_at(c, 0, "moved");
  const int slot = c.slot_of(k);
  EXPECT_EQ(c.node(0).cmd({"SET", k, "v"}), "OK");
  EXPECT_EQ(c.node(1).cmd({"GET", k}), "ERR:MOVED " + std::to_string(slot) + " " + addr(c, 0));
  EXPECT_EQ(c.node(3).cmd({"GET", k}), "ERR:MOVED " + std::to_string(slot) + " " + addr(c, 0));  // its replica
  EXPECT_EQ(c.node(0).cmd({"GET", k}), "v");
}

// The slot's keys are split between the two nodes while it migrates: what
// a client meets then (the hook runs after each key has moved).
void expect_split(RedisCluster& c, const std::vector<std::string>& keys, const std::vector<std::string>& moved,
                  int slot) {
  const std::string s = std::to_string(slot);
  EXPECT_EQ(c.node(0).cmd({"GET", moved.back()}), "ERR:ASK " + s + " " + addr(c, 1));
  EXPECT_EQ(c.node(1).cmd({"GET", moved.back()}), "ERR:MOVED " + s + " " + addr(c, 0));  // without ASKING
  for (size_t i = 0; i < keys.size(); ++i) {
    if (std::find(moved.begin(), moved.end(), keys[i]) != moved.end()) continue;
    EXPECT_EQ(c.node(0).cmd({"GET", keys[i]}), "v" + std::to_string(i));
    EXPECT_EQ(c.node(0).cmd({"MGET", moved.back(), keys[i]}).rfind("ERR:TRYAGAIN", 0), 0u);
    break;
  }
}

TEST(RedisCluster, ASlotMigratedKeyByKeyEndsAtTheTargetWithAllItsKeys) {
  RedisCluster c;
  const std::string tag = key_at(c, 0, "migrated");
  const int slot = c.slot_of(tag);
  std::vector<std::string> keys;
  for (int i = 0; i < 20; ++i) {
    keys.push_back(tag + ":" + std::to_string(i));
    ASSERT_EQ(c.node(0).cmd({"SET", keys.back(), "v" + std::to_string(i)}), "OK");
  }
  std::vector<std::string> moved;
  const auto t0 = Clock::now();
  c.migrate_slot(slot, 1, [&](const std::string& key) {
    moved.push_back(key);
    expect_split(c, keys, moved, slot);
  });
  std::cout << "[ figures  ] slot of 20 keys migrated in " << since(t0).count() << " ms\n";
  std::sort(moved.begin(), moved.end());
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(moved, keys);  // each once
  EXPECT_EQ(c.master_of_slot(slot), 1);
  EXPECT_EQ(c.master_of_slot(slot - 1), 0);
  EXPECT_EQ(c.master_of_slot(slot + 1), 0);
  EXPECT_EQ(c.node(1).cmd({"CLUSTER", "COUNTKEYSINSLOT", std::to_string(slot)}), "20");
  EXPECT_EQ(c.node(0).cmd({"CLUSTER", "COUNTKEYSINSLOT", std::to_string(slot)}), "0");
  for (int i = 0; i < 20; ++i)
    EXPECT_EQ(c.node(1).cmd({"GET", tag + ":" + std::to_string(i)}), "v" + std::to_string(i));
  EXPECT_EQ(c.node(0).cmd({"GET", keys[0]}), "ERR:MOVED " + std::to_string(slot) + " " + addr(c, 1));
  EXPECT_TRUE(eventually([&] { return c.node(4).cmd({"DBSIZE"}) == "20"; }));  // node 1's replica has them
}

// What a kill or a coordinated failover must leave: the replica that was
// promoted masters the slot everywhere, the old master is its replica, and
// a write on the new master reaches it.
void expect_moved(RedisCluster& c, int slot, int old, int replica) {
  EXPECT_EQ(c.master_of_slot(slot), replica);
  EXPECT_EQ(c.replicas_of_slot(slot), std::vector<int>{old});
  EXPECT_TRUE(is_replica_of(c, old, replica)) << c.node(old).cmd({"ROLE"});
  const std::string k = key_at(c, replica, "after");
  EXPECT_EQ(c.node(replica).cmd({"SET", k, "w"}), "OK");
  EXPECT_EQ(c.node(replica).cmd({"WAIT", "1", "5000"}), "1");
}

TEST(RedisCluster, KillingAMasterPromotesItsReplicaAndTheKilledNodeRejoins) {
  RedisCluster c;
  const std::string k = key_at(c, 1, "kept");
  const int slot = c.slot_of(k);
  ASSERT_EQ(c.node(1).cmd({"SET", k, "v"}), "OK");
  ASSERT_EQ(c.node(1).cmd({"WAIT", "1", "5000"}), "1");  // at its replica before the kill
  std::vector<long long> took;
  const auto t0 = Clock::now();
  for (int kill = 0; kill < 2; ++kill) {  // node 1, then node 4 (its replica, promoted by the first)
    const int old = c.master_of_slot(slot), replica = c.replicas_of_slot(slot).at(0);
    const ms t = c.kill_master_of_slot_and_wait_failover(slot);
    took.push_back(t.count());
    EXPECT_GE(t, RedisClusterOptions{}.node_timeout);  // a PING unanswered that long, then 0.5 s or more
    EXPECT_LT(t, kFailoverBound);
    expect_moved(c, slot, old, replica);
    EXPECT_EQ(c.node(replica).cmd({"GET", k}), "v");
  }
  std::cout << "[ figures  ] 2 kills: kill to promotion " << took[0] << " ms, " << took[1] << " ms; "
            << since(t0).count() << " ms with the restarts\n";
  EXPECT_EQ(c.master_of_slot(slot), 1);
  EXPECT_EQ(c.master_of_slot(0), 0);  // the others never moved
  EXPECT_EQ(c.master_of_slot(16383), 2);
}

TEST(RedisCluster, CoordinatedFailoverSwapsAMasterAndItsReplica) {
  RedisCluster c;
  const int slot = 16383;
  const ms t = c.failover_coordinated(slot);
  std::cout << "[ figures  ] CLUSTER FAILOVER to promotion " << t.count() << " ms\n";
  EXPECT_LT(t, kCoordinatedBound);
  expect_moved(c, slot, 2, 5);
}

TEST(RedisCluster, ANewMasterTakesSlotsFromEveryMaster) {
  RedisCluster c;
  // 30 slots: the last 10 of each master's range; a key in one of node 2's.
  std::string k;
  for (int n = 0; k.empty(); ++n)
    if (c.slot_of("resharded" + std::to_string(n)) >= 16374) k = "resharded" + std::to_string(n);
  ASSERT_EQ(c.node(2).cmd({"SET", k, "v"}), "OK");
  std::vector<std::string> hooked;
  const auto t0 = Clock::now();
  const int m = c.add_master_and_reshard(30, [&](const std::string& key) { hooked.push_back(key); });
  std::cout << "[ figures  ] a master and its replica added, 30 slots resharded in " << since(t0).count() << " ms\n";
  EXPECT_EQ(m, 6);
  EXPECT_EQ(c.size(), 8);
  EXPECT_EQ(hooked, std::vector<std::string>{k});
  EXPECT_EQ(c.node(6).cmd({"GET", k}), "v");
  for (int first : {5461 - 10, 10922 - 10, 16384 - 10}) {
    EXPECT_EQ(c.master_of_slot(first - 1), first < 6000 ? 0 : first < 11000 ? 1 : 2);
    for (int slot = first; slot < first + 10; ++slot) EXPECT_EQ(c.master_of_slot(slot), 6) << slot;
  }
  EXPECT_EQ(c.replicas_of_slot(16383), std::vector<int>{7});
  EXPECT_EQ(c.slot_map().size(), 6u);  // each master's range cut in two
}

// A connection to node i's TLS port, verifying its certificate with the test CA.
detail::Connection tls_to(const RedisCluster& c, int i) {
  TlsOptions t;
  t.ca_file = pki().ca;
  return detail::Connection(detail::Target{detail::parse_url(c.node(i).tls_url()),
                                           std::make_shared<const detail::TlsContext>(t), 5000ms, 5000ms});
}

// Every port a CLUSTER SLOTS reply names (masters and replicas).
std::set<int> ports_in(const redisReply& slots) {
  std::set<int> ports;
  for (size_t k = 0; k < slots.elements; ++k)
    for (size_t n = 2; n < slots.element[k]->elements; ++n)
      ports.insert(static_cast<int>(slots.element[k]->element[n]->element[1]->integer));
  return ports;
}

// How many of s's clients (CLIENT LIST) are replicas linked to `port`.
int replica_links(const RedisServer& s, int port) {
  std::istringstream in(s.cmd({"CLIENT", "LIST"}));
  int n = 0;
  for (std::string l; std::getline(in, l);)
    n += l.find(" flags=S ") != std::string::npos &&
         l.find(" laddr=127.0.0.1:" + std::to_string(port) + " ") != std::string::npos;
  return n;
}

// Each kind of client is told the ports of its kind, by every node.
void expect_ports_by_kind(const RedisCluster& c) {
  std::set<int> tls_ports, plain_ports;
  for (int i = 0; i < c.size(); ++i) {
    tls_ports.insert(c.node(i).tls_port());
    plain_ports.insert(c.data_port(i));
  }
  for (int i = 0; i < c.size(); ++i) {
    detail::Connection tls = tls_to(c, i);
    EXPECT_EQ(ports_in(*tls.command({"CLUSTER", "SLOTS"})), tls_ports) << "node " << i;
    EXPECT_EQ(ports_in(*c.node(i).reply({"CLUSTER", "SLOTS"}, 5000ms)), plain_ports) << "node " << i;
  }
}

TEST(RedisCluster, OverTlsTlsClientsAreToldTlsPortsAndPlainClientsPlainOnes) {
  RedisClusterOptions o;
  o.tls = true;
  const auto t0 = Clock::now();
  RedisCluster c(o);
  std::cout << "[ figures  ] 3+3 TLS cluster formed in " << since(t0).count() << " ms\n";
  std::string seeds;
  for (int i = 0; i < c.size(); ++i) {
    EXPECT_EQ(c.client_port(i), c.node(i).tls_port());
    seeds += (i ? ",127.0.0.1:" : "127.0.0.1:") + std::to_string(c.node(i).tls_port());
    EXPECT_EQ(c.node(i).cmd({"CONFIG", "GET", "tls-cluster"}), "tls-cluster\nyes");  // the bus accepts only TLS
  }
  EXPECT_EQ(c.seeds(), seeds);
  EXPECT_EQ(c.url(), "rediss-cluster://" + seeds);
  expect_ports_by_kind(c);
  const std::string k = key_at(c, 0, "tls-moved");
  const std::string moved = "MOVED " + std::to_string(c.slot_of(k)) + " 127.0.0.1:";
  EXPECT_EQ(detail::reply_error(*tls_to(c, 1).command({"GET", k})), moved + std::to_string(c.node(0).tls_port()));
  EXPECT_EQ(c.node(1).cmd({"GET", k}), "ERR:" + moved + std::to_string(c.data_port(0)));
  for (int m = 0; m < 3; ++m) EXPECT_EQ(replica_links(c.node(m), c.node(m).tls_port()), 1) << "node " << m;
  const ms took = c.failover_coordinated(16383);
  EXPECT_LT(took, kCoordinatedBound);
  EXPECT_EQ(c.master_of_slot(16383), 5);
  EXPECT_EQ(replica_links(c.node(5), c.node(5).tls_port()), 1);
  EXPECT_EQ(c.node(2).cmd({"ROLE"}).rfind("slave\n127.0.0.1\n" + std::to_string(c.node(5).tls_port()) + "\n", 0), 0u);
  ASSERT_EQ(c.node(0).cmd({"SET", k, "v"}), "OK");
  c.migrate_slot(c.slot_of(k), 1);  // MIGRATE over TLS
  EXPECT_EQ(c.node(1).cmd({"GET", k}), "v");
  expect_ports_by_kind(c);
  std::cout << "[ figures  ] TLS CLUSTER FAILOVER to promotion " << took.count() << " ms; all in " << since(t0).count()
            << " ms\n";
}

}  // namespace
}  // namespace fairlock::test
