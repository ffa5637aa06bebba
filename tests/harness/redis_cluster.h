#pragma once
// A real Redis Cluster owned by a test: `masters` masters with
// `replicas_per_master` replicas each (RedisServer, persisting nothing but
// their own cluster config file, nodes.conf in their temporary directories,
// on free loopback ports and cluster bus ports). Formed by hand (SET-CONFIG-
// EPOCH, ADDSLOTSRANGE, MEET, REPLICATE; see redis_cluster.cpp for why not
// redis-cli --cluster create): node m < masters is master m with the m-th
// third of the slots, node masters + j a replica of master j % masters.
// Ready (settled) when every node says cluster_state:ok and knows every other
// node without a failure flag, every node's CLUSTER SLOTS is the same map of
// every slot with each master's replicas in it, and every replica's link to
// its master is up. Drives the faults the cluster tests need (SIGKILL of a
// master, CLUSTER FAILOVER, a slot migrated key by key, a master added),
// each waited for with a bound (polls every 50 ms, no fixed sleeps). The
// destructor kills every process.
// With tls, each node also has a TLS port (certificates of tls_pki.h) and
// the nodes talk TLS among them (--tls-cluster, --tls-replication: the bus,
// replication and MIGRATE). Redis 7.0 answers each client with the ports of
// its own kind: CLUSTER SLOTS and -MOVED name the TLS ports to a TLS client,
// the plain ones to a plain client. url() and seeds() name the TLS ports
// (rediss-cluster://); the harness asks its own questions on the plain ports.
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "redis_server.h"

namespace fairlock::test {

struct RedisClusterOptions {
  int masters = 3;
  int replicas_per_master = 1;
  // A node is suspected (PFAIL) after this long without a PONG, and failed
  // over once most masters suspect it: a master whose main thread stalls that
  // long (it fsyncs nodes.conf there) is failed over for real, and a test
  // that did not expect it fails. Of 1000, 1500 and 2000 ms (each passed the
  // label 5 times at load 4 on 2 cores; kill to promotion 2.3-2.8, 3.0-3.5,
  // 3.6-4.3 s), the smallest with a record here: the Sentinel harness's
  // down-after (SentinelSetOptions), the same "no answer for that long" test.
  std::chrono::milliseconds node_timeout{1500};
  // TLS among the nodes and on the ports of url() (see the top).
  bool tls = false;
};

// One range of CLUSTER SLOTS, its nodes as node indexes (-1: a port of no node).
struct SlotRange {
  int first = 0, last = 0;
  int master = -1;
  std::vector<int> replicas;  // sorted
  bool operator==(const SlotRange& o) const {
    return first == o.first && last == o.last && master == o.master && replicas == o.replicas;
  }
};
using SlotMap = std::vector<SlotRange>;  // sorted by first slot

class RedisCluster {
 public:
  using ms = std::chrono::milliseconds;
  using KeyHook = std::function<void(const std::string& key)>;
  static constexpr int kSlots = 16384;

  explicit RedisCluster(RedisClusterOptions o = {}, ms limit = ms(60000));
  ~RedisCluster();
  RedisCluster(const RedisCluster&) = delete;
  RedisCluster& operator=(const RedisCluster&) = delete;

  int size() const { return static_cast<int>(nodes_.size()); }
  // Node i: pause/resume/kill/restart it directly (it restarts on its ports
  // and its nodes.conf: the same node id, rejoining the cluster).
  RedisServer& node(int i) { return *nodes_.at(i); }
  const RedisServer& node(int i) const { return *nodes_.at(i); }
  int data_port(int i) const;                                // the plain port (the harness asks there)
  int client_port(int i) const;                              // seeds()' port: the TLS port with tls, else data_port(i)
  const std::string& id(int i) const { return ids_.at(i); }  // CLUSTER MYID
  // "127.0.0.1:p1,127.0.0.1:p2,..." (every node's client_port) and
  // "redis-cluster://" + seeds() ("rediss-cluster://" with tls).
  std::string seeds() const;
  std::string url() const;

  int slot_of(const std::string& key) const;  // CLUSTER KEYSLOT on a running node
  // The map as the first running node that answers says (throws if none does).
  SlotMap slot_map() const;
  int master_of_slot(int slot) const;  // node index
  std::vector<int> replicas_of_slot(int slot) const;

  // SIGKILLs the master of `slot`, waits until one of its replicas answers
  // ROLE master and every running node's CLUSTER SLOTS names it for the slot,
  // restarts the killed node (it rejoins as a replica of the new master) and
  // waits until the cluster is settled. Returns the time from the kill to
  // the first poll at which the promotion was seen as above. `limit` bounds
  // the whole call. With `replicas_behind`, replication is cut that long
  // before the kill (the slot's replicas SIGSTOPped, their links killed;
  // resumed at the kill): the master's last writes die with it.
  ms kill_master_of_slot_and_wait_failover(int slot, ms limit = ms(60000), ms replicas_behind = ms(0));
  // CLUSTER FAILOVER on a replica of the master of `slot`; waits as above (the
  // old master becomes its replica) until settled. Returns the time to promotion.
  ms failover_coordinated(int slot, ms limit = ms(60000));
  // Moves `slot` to master `to` key by key: SETSLOT IMPORTING on `to`,
  // MIGRATING on the owner, then GETKEYSINSLOT + MIGRATE one key at a time,
  // calling per_key(key) after each key has moved (a test runs load there:
  // the slot's keys are split between the two nodes), until the owner has none
  // left; then SETSLOT NODE on `to`, the old owner and every other master,
  // and waits until settled with every node naming `to` for the slot.
  void migrate_slot(int slot, int to, const KeyHook& per_key = {}, ms limit = ms(60000));
  // Starts a new master and its replicas, has them join, and moves n_slots
  // slots to the new master (as many from each master, the last slots of
  // its ranges, key by key as migrate_slot does) and waits until settled.
  // Returns the new master's node index.
  int add_master_and_reshard(int n_slots, const KeyHook& per_key = {}, ms limit = ms(60000));

  // Waits until settled (see the top). Throws at once if a node is down.
  void wait_settled(ms limit = ms(60000)) const;

 private:
  using Clock = std::chrono::steady_clock;

  std::vector<std::string> node_args() const;
  TlsPort tls_port() const;
  int start_node();
  void form(Clock::time_point end);
  void meet(const std::vector<int>& newcomers, Clock::time_point end);
  void replicate(int master, const std::vector<int>& replicas, Clock::time_point end);
  std::string not_known_by_all() const;
  std::string not_ok() const;
  std::string replicas_not_online(int master, const std::vector<int>& replicas) const;
  int index_of(int port) const;
  void command(int i, const std::vector<std::string>& argv) const;  // throws unless the reply is OK
  bool map_of(int i, SlotMap& map) const;
  SlotMap agreed_map(std::string& why) const;
  std::string unsettled() const;
  std::string unsettled_replicas(const SlotMap& map) const;
  std::string unsettled_or_not_at(const std::vector<int>& slots, int to) const;
  std::string promoted(int slot, const std::vector<int>& candidates) const;
  ms wait_promotion(int slot, const std::vector<int>& candidates, Clock::time_point t0, Clock::time_point end) const;
  void move_keys(int slot, int from, int to, const KeyHook& per_key, Clock::time_point end);
  void move_slot(int slot, int to, const KeyHook& per_key, Clock::time_point end);
  void wait(const std::string& what, const std::function<std::string()>& state, Clock::time_point end) const;
  [[noreturn]] void time_out(const std::string& what, const std::string& state) const;

  RedisClusterOptions o_;
  std::vector<std::unique_ptr<RedisServer>> nodes_;
  std::vector<std::string> ids_;
};

}  // namespace fairlock::test
