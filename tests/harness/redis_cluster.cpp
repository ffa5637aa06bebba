#include "redis_cluster.h"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "poll_until.h"
#include "tls_pki.h"

// Formed by hand (CLUSTER SET-CONFIG-EPOCH, ADDSLOTSRANGE, MEET, REPLICATE),
// not with `redis-cli --cluster create --cluster-replicas 1`:
// - deterministic: the harness says which node masters which slots and which
//   replica follows which master; redis-cli pairs them by its own rule (on
//   7.0.15, of 6 nodes on 127.0.0.1: node 4 to node 0, 5 to 1, 3 to 2);
// - no faster either way: a master says cluster_state:ok 2 s after its start
//   at the earliest (CLUSTER_WRITABLE_DELAY), which bounds both; by hand, 2.1
//   s to settled; redis-cli took 2.0 s and returned before the masters knew
//   their replicas, so its cluster still needs the wait below;
// - one way for all: the same MEET and REPLICATE add a master later
//   (add_master_and_reshard), and every step's reply is checked here.

namespace fairlock::test {

namespace {

using ms = std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

constexpr ms kAsk{1000};          // one question to one node
constexpr ms kMigrate{5000};      // MIGRATE's own timeout for one key
constexpr int kKeysPerAsk = 100;  // GETKEYSINSLOT's count
constexpr size_t kLogLines = 8;   // of each node's log in a time-out message
const std::string kHost = "127.0.0.1";

// ROLE's first word: "master", "slave", or an "ERR:..." when it does not answer.
std::string role(int port) {
  std::string r = ask(port, {"ROLE"});
  return r.substr(0, r.find('\n'));
}

std::string joined(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) s += (s.empty() ? "" : " ") + a;
  return s;
}

// The node that owns `slot` in `map`; -1 if none.
int owner(const SlotMap& map, int slot) {
  for (const auto& r : map)
    if (r.first <= slot && slot <= r.last) return r.master;
  return -1;
}

// The masters of `map`, each once, in slot order.
std::vector<int> masters_in(const SlotMap& map) {
  std::vector<int> out;
  for (const auto& r : map)
    if (std::find(out.begin(), out.end(), r.master) == out.end()) out.push_back(r.master);
  return out;
}

// The last n slots of master m's ranges in `map`.
std::vector<int> last_slots_of(const SlotMap& map, int m, int n) {
  std::vector<int> out;
  for (auto r = map.rbegin(); r != map.rend(); ++r)
    for (int s = r->last; r->master == m && s >= r->first && static_cast<int>(out.size()) < n; --s) out.push_back(s);
  return out;
}

// "" if a line of CLUSTER NODES shows a node known, linked and not suspected.
std::string unhealthy(const std::string& line) {
  std::istringstream in(line);
  std::string id, addr, flags, master, ping, pong, epoch, link;
  in >> id >> addr >> flags >> master >> ping >> pong >> epoch >> link;
  std::istringstream f(flags);
  for (std::string flag; std::getline(f, flag, ',');)
    if (flag == "fail" || flag == "fail?" || flag == "handshake" || flag == "noaddr" || flag == "noflags")
      return addr + " is " + flags;
  return link == "connected" ? "" : addr + " is " + link;
}

}  // namespace

RedisCluster::RedisCluster(RedisClusterOptions o, ms limit) : o_(o) {
  if (o_.masters < 1 || o_.replicas_per_master < 0) throw std::invalid_argument("RedisCluster: no masters");
  const auto end = Clock::now() + limit;
  for (int i = 0; i < o_.masters * (1 + o_.replicas_per_master); ++i) start_node();
  form(end);
  wait_settled(left(end));
}

RedisCluster::~RedisCluster() = default;  // every node killed and reaped, its directory removed

// Persisting nothing but nodes.conf (in the node's own directory), so that a
// killed node restarts with its id and rejoins. A replica fails over however
// long its link was down (validity factor 0), and stays with its master (no
// replica migration): the harness, not Redis, decides the layout. Full syncs
// without disk and without the 5 s wait for more replicas (7.0's default).
std::vector<std::string> RedisCluster::node_args() const {
  return {"--cluster-enabled",
          "yes",
          "--cluster-config-file",
          "nodes.conf",
          "--cluster-node-timeout",
          std::to_string(o_.node_timeout.count()),
          "--cluster-replica-validity-factor",
          "0",
          "--cluster-allow-replica-migration",
          "no",
          "--repl-diskless-sync",
          "yes",
          "--repl-diskless-sync-delay",
          "0"};
}

// With tls, the port and the links among the nodes: the bus, replication
// and MIGRATE go over TLS (7.0 uses the peer's TLS port for them).
TlsPort RedisCluster::tls_port() const {
  if (!o_.tls) return TlsPort{};
  return TlsPort{pki().server, pki().server_key, pki().ca, false, {"--tls-cluster", "yes", "--tls-replication", "yes"}};
}

int RedisCluster::start_node() {
  Launch cluster_node;
  cluster_node.cluster_bus = true;
  nodes_.push_back(std::make_unique<RedisServer>(node_args(), tls_port(), cluster_node));
  const int i = size() - 1;
  ids_.push_back(ask(data_port(i), {"CLUSTER", "MYID"}, kAsk));
  if (ids_.back().size() != 40) throw std::runtime_error("RedisCluster: CLUSTER MYID: " + ids_.back());
  return i;
}

// Distinct config epochs (no collision to resolve), master j with the j-th
// share of the slots, every node meets every other, then the replicas.
void RedisCluster::form(Clock::time_point end) {
  for (int i = 0; i < size(); ++i) command(i, {"CLUSTER", "SET-CONFIG-EPOCH", std::to_string(i + 1)});
  const int m = o_.masters;
  for (int j = 0; j < m; ++j)
    command(j, {"CLUSTER", "ADDSLOTSRANGE", std::to_string(j * kSlots / m), std::to_string((j + 1) * kSlots / m - 1)});
  std::vector<int> others;
  for (int i = 1; i < size(); ++i) others.push_back(i);
  meet(others, end);
  for (int j = 0; j < m; ++j) {
    std::vector<int> replicas;
    for (int i = m + j; i < size(); i += m) replicas.push_back(i);
    replicate(j, replicas, end);
  }
}

// Every running node meets every newcomer (the newcomers, those after them):
// 6 nodes joined in 0.2 s, where MEETs from node 0 alone left the rest to
// gossip (1.0 s).
void RedisCluster::meet(const std::vector<int>& newcomers, Clock::time_point end) {
  auto is_new = [&](int i) { return std::find(newcomers.begin(), newcomers.end(), i) != newcomers.end(); };
  for (int n : newcomers) {
    for (int i = 0; i < size(); ++i) {
      if (i == n || !nodes_[i]->up() || (is_new(i) && i > n)) continue;
      command(i, {"CLUSTER", "MEET", kHost, std::to_string(data_port(n)), std::to_string(nodes_[n]->cluster_port())});
    }
  }
  wait(
      "join of every node", [this] { return not_known_by_all(); }, end);
}

// "" when every node lists every node (itself included) in CLUSTER NODES,
// linked and without a failure flag.
std::string RedisCluster::not_known_by_all() const {
  for (int i = 0; i < size(); ++i) {
    std::istringstream in(ask(data_port(i), {"CLUSTER", "NODES"}, kAsk));
    int known = 0;
    for (std::string line; std::getline(in, line);) {
      if (std::string why = unhealthy(line); !why.empty()) return "node " + std::to_string(i) + ": " + why;
      ++known;
    }
    if (known != size()) return "node " + std::to_string(i) + " knows " + std::to_string(known) + " nodes";
  }
  return "";
}

// "" when every node says cluster_state:ok. A master says so 2 s after its
// start at the earliest (CLUSTER_WRITABLE_DELAY), and refuses commands until then.
std::string RedisCluster::not_ok() const {
  for (int i = 0; i < size(); ++i) {
    const std::string info = ask(data_port(i), {"CLUSTER", "INFO"}, kAsk);
    if (info.find("cluster_state:ok") == std::string::npos) return "node " + std::to_string(i) + " is not ok";
  }
  return "";
}

// The replicas follow `master` and have synced; then a write on it (FLUSHALL,
// of nothing) moves their replication offset above 0: 7.0 leaves a replica
// out of CLUSTER SLOTS until then (and until the others have heard so).
void RedisCluster::replicate(int master, const std::vector<int>& replicas, Clock::time_point end) {
  for (int r : replicas) command(r, {"CLUSTER", "REPLICATE", id(master)});
  wait(
      "sync of the replicas of node " + std::to_string(master), [&] { return replicas_not_online(master, replicas); },
      end);
  command(master, {"FLUSHALL"});
}

// "" when each replica's link to `master` is up (its ROLE) and the master
// has it online (its INFO). With tls, both name the TLS ports.
std::string RedisCluster::replicas_not_online(int master, const std::vector<int>& replicas) const {
  const std::string info = ask(data_port(master), {"INFO", "replication"}, kAsk);
  for (int r : replicas) {
    const std::string port = std::to_string(client_port(r));
    const std::string linked = "slave\n" + kHost + "\n" + std::to_string(client_port(master)) + "\nconnected\n";
    if (ask(data_port(r), {"ROLE"}, kAsk).rfind(linked, 0) != 0 ||
        info.find("port=" + port + ",state=online") == std::string::npos)
      return "node " + std::to_string(r) + " is not an online replica of node " + std::to_string(master);
  }
  return "";
}

int RedisCluster::data_port(int i) const { return nodes_.at(i)->port(); }

int RedisCluster::client_port(int i) const { return o_.tls ? nodes_.at(i)->tls_port() : data_port(i); }

int RedisCluster::index_of(int port) const {
  for (int i = 0; i < size(); ++i)
    if (data_port(i) == port) return i;
  return -1;
}

std::string RedisCluster::seeds() const {
  std::string s;
  for (int i = 0; i < size(); ++i) s += (i ? "," : "") + kHost + ":" + std::to_string(client_port(i));
  return s;
}

std::string RedisCluster::url() const { return (o_.tls ? "rediss-cluster://" : "redis-cluster://") + seeds(); }

void RedisCluster::command(int i, const std::vector<std::string>& argv) const {
  const std::string r = ask(data_port(i), argv, kAsk);
  if (r != "OK") throw std::runtime_error("RedisCluster: node " + std::to_string(i) + ": " + joined(argv) + ": " + r);
}

int RedisCluster::slot_of(const std::string& key) const {
  for (int i = 0; i < size(); ++i) {
    if (!nodes_[i]->up()) continue;
    const std::string r = ask(data_port(i), {"CLUSTER", "KEYSLOT", key}, kAsk);
    if (!r.empty() && std::all_of(r.begin(), r.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
      return std::stoi(r);
  }
  throw std::runtime_error("RedisCluster: no node answers CLUSTER KEYSLOT");
}

// Node i's CLUSTER SLOTS as a SlotMap; false if it does not answer with one.
bool RedisCluster::map_of(int i, SlotMap& map) const {
  Reply r;
  try {
    r = command_reply(data_port(i), {"CLUSTER", "SLOTS"}, kAsk);
  } catch (const std::exception&) {
    return false;
  }
  if (!r || r->type != REDIS_REPLY_ARRAY) return false;
  map.clear();
  for (size_t k = 0; k < r->elements; ++k) {
    const redisReply* e = r->element[k];
    if (e->type != REDIS_REPLY_ARRAY || e->elements < 3) return false;
    SlotRange range;
    range.first = static_cast<int>(e->element[0]->integer);
    range.last = static_cast<int>(e->element[1]->integer);
    for (size_t n = 2; n < e->elements; ++n) {
      const redisReply* node = e->element[n];
      if (node->type != REDIS_REPLY_ARRAY || node->elements < 2) return false;
      const int at = index_of(static_cast<int>(node->element[1]->integer));
      if (n == 2) {
        range.master = at;
      } else {
        range.replicas.push_back(at);
      }
    }
    std::sort(range.replicas.begin(), range.replicas.end());
    map.push_back(range);
  }
  std::sort(map.begin(), map.end(), [](const SlotRange& a, const SlotRange& b) { return a.first < b.first; });
  return true;
}

SlotMap RedisCluster::slot_map() const {
  SlotMap map;
  for (int i = 0; i < size(); ++i)
    if (nodes_[i]->up() && map_of(i, map)) return map;
  throw std::runtime_error("RedisCluster: no node answers CLUSTER SLOTS");
}

int RedisCluster::master_of_slot(int slot) const { return owner(slot_map(), slot); }

std::vector<int> RedisCluster::replicas_of_slot(int slot) const {
  for (const auto& r : slot_map())
    if (r.first <= slot && slot <= r.last) return r.replicas;
  return {};
}

void RedisCluster::wait_settled(ms limit) const {
  for (int i = 0; i < size(); ++i)
    if (!nodes_[i]->up()) throw std::logic_error("RedisCluster: node " + std::to_string(i) + " is down");
  wait(
      "settled cluster", [this] { return unsettled(); }, Clock::now() + limit);
}

// "" when settled (see redis_cluster.h), else the first thing that is not so.
std::string RedisCluster::unsettled() const {
  if (std::string why = not_ok(); !why.empty()) return why;
  if (std::string why = not_known_by_all(); !why.empty()) return why;
  std::string why;
  const SlotMap map = agreed_map(why);
  if (!why.empty()) return why;
  int next = 0;
  for (const auto& r : map) {
    if (r.first != next) return "slot " + std::to_string(next) + " has no master";
    next = r.last + 1;
  }
  if (next != kSlots) return "slot " + std::to_string(next) + " has no master";
  return unsettled_replicas(map);
}

// The map every node's CLUSTER SLOTS gives; `why` says why not if they differ.
SlotMap RedisCluster::agreed_map(std::string& why) const {
  SlotMap first, other;
  for (int i = 0; i < size(); ++i) {
    if (!map_of(i, i == 0 ? first : other)) {
      why = "node " + std::to_string(i) + " does not answer CLUSTER SLOTS";
    } else if (i > 0 && other != first) {
      why = "the CLUSTER SLOTS of nodes 0 and " + std::to_string(i) + " differ";
    }
    if (!why.empty()) break;
  }
  return first;
}

// "" when each master of `map` has its replicas in it, online, and every node is in it.
std::string RedisCluster::unsettled_replicas(const SlotMap& map) const {
  std::set<int> seen;
  for (int m : masters_in(map)) {
    const std::vector<int>& replicas =
        std::find_if(map.begin(), map.end(), [m](const SlotRange& r) { return r.master == m; })->replicas;
    if (m < 0 || std::count(replicas.begin(), replicas.end(), -1) > 0) return "the map names a port of no node";
    if (static_cast<int>(replicas.size()) != o_.replicas_per_master)
      return "node " + std::to_string(m) + " has " + std::to_string(replicas.size()) + " replicas in the map";
    if (std::string why = replicas_not_online(m, replicas); !why.empty()) return why;
    seen.insert(m);
    seen.insert(replicas.begin(), replicas.end());
  }
  for (int i = 0; i < size(); ++i)
    if (!seen.count(i)) return "node " + std::to_string(i) + " is in no range of the map";
  return "";
}

// "" when one of `candidates` answers ROLE master and every running node's
// CLUSTER SLOTS names it the master of `slot`.
std::string RedisCluster::promoted(int slot, const std::vector<int>& candidates) const {
  int now = -1;
  for (int c : candidates)
    if (nodes_[c]->up() && role(data_port(c)) == "master") now = c;
  if (now < 0) return "no candidate answers ROLE master";
  for (int i = 0; i < size(); ++i) {
    SlotMap map;
    if (!nodes_[i]->up()) continue;
    if (!map_of(i, map)) return "node " + std::to_string(i) + " does not answer CLUSTER SLOTS";
    if (owner(map, slot) != now)
      return "node " + std::to_string(i) + " names node " + std::to_string(owner(map, slot)) + " for slot " +
             std::to_string(slot);
  }
  return "";
}

RedisCluster::ms RedisCluster::wait_promotion(int slot, const std::vector<int>& candidates, Clock::time_point t0,
                                              Clock::time_point end) const {
  wait(
      "promotion for slot " + std::to_string(slot), [&] { return promoted(slot, candidates); }, end);
  return std::chrono::duration_cast<ms>(Clock::now() - t0);
}

RedisCluster::ms RedisCluster::kill_master_of_slot_and_wait_failover(int slot, ms limit, ms replicas_behind) {
  const auto end = Clock::now() + limit;
  const int old = master_of_slot(slot);
  const std::vector<int> replicas = replicas_of_slot(slot);
  if (replicas.empty()) throw std::logic_error("RedisCluster: the master of the slot has no replica");
  if (replicas_behind.count() > 0) {
    for (int r : replicas) node(r).pause();
    node(old).cmd({"CLIENT", "KILL", "TYPE", "replica"});
    std::this_thread::sleep_for(replicas_behind);
  }
  const auto t0 = Clock::now();
  node(old).kill();
  if (replicas_behind.count() > 0) {
    for (int r : replicas) node(r).resume();
  }
  const ms took = wait_promotion(slot, replicas, t0, end);
  node(old).restart();
  wait_settled(left(end));
  return took;
}

RedisCluster::ms RedisCluster::failover_coordinated(int slot, ms limit) {
  const auto end = Clock::now() + limit;
  const std::vector<int> replicas = replicas_of_slot(slot);
  if (replicas.empty()) throw std::logic_error("RedisCluster: the master of the slot has no replica");
  const auto t0 = Clock::now();
  command(replicas.front(), {"CLUSTER", "FAILOVER"});
  const ms took = wait_promotion(slot, {replicas.front()}, t0, end);
  wait_settled(left(end));
  return took;
}

void RedisCluster::migrate_slot(int slot, int to, const KeyHook& per_key, ms limit) {
  const auto end = Clock::now() + limit;
  move_slot(slot, to, per_key, end);
  wait(
      "slot " + std::to_string(slot) + " at node " + std::to_string(to),
      [&] { return unsettled_or_not_at({slot}, to); }, end);
}

// "" when settled and the map names node `to` for each of `slots`.
std::string RedisCluster::unsettled_or_not_at(const std::vector<int>& slots, int to) const {
  std::string why = unsettled();
  if (!why.empty()) return why;
  const SlotMap map = slot_map();
  for (int slot : slots)
    if (owner(map, slot) != to)
      return "the map names node " + std::to_string(owner(map, slot)) + " for slot " + std::to_string(slot);
  return "";
}

// IMPORTING on `to`, MIGRATING on the owner, the keys, then NODE on `to`
// first (which owns it from then on), the old owner, every other master.
void RedisCluster::move_slot(int slot, int to, const KeyHook& per_key, Clock::time_point end) {
  const SlotMap map = slot_map();
  const int from = owner(map, slot);
  if (from == to) return;
  const std::string s = std::to_string(slot);
  command(to, {"CLUSTER", "SETSLOT", s, "IMPORTING", id(from)});
  command(from, {"CLUSTER", "SETSLOT", s, "MIGRATING", id(to)});
  move_keys(slot, from, to, per_key, end);
  command(to, {"CLUSTER", "SETSLOT", s, "NODE", id(to)});
  command(from, {"CLUSTER", "SETSLOT", s, "NODE", id(to)});
  for (int m : masters_in(map))
    if (m != from && m != to) command(m, {"CLUSTER", "SETSLOT", s, "NODE", id(to)});
}

// Until `from` has no key of the slot left: GETKEYSINSLOT, MIGRATE each key
// alone (NOKEY: the hook's load deleted it meanwhile), the hook after each.
void RedisCluster::move_keys(int slot, int from, int to, const KeyHook& per_key, Clock::time_point end) {
  const std::vector<std::string> get = {"CLUSTER", "GETKEYSINSLOT", std::to_string(slot), std::to_string(kKeysPerAsk)};
  for (;;) {
    Reply keys = command_reply(data_port(from), get, kAsk);
    if (!keys || keys->type != REDIS_REPLY_ARRAY) throw std::runtime_error("RedisCluster: GETKEYSINSLOT failed");
    if (keys->elements == 0) return;
    if (Clock::now() > end) time_out("migration of slot " + std::to_string(slot), "keys left at the source");
    for (size_t k = 0; k < keys->elements; ++k) {
      const std::string key(keys->element[k]->str, keys->element[k]->len);
      const std::vector<std::string> argv = {"MIGRATE", kHost, std::to_string(client_port(to)),
                                             key,       "0",   std::to_string(kMigrate.count())};
      const std::string r = ask(data_port(from), argv, kMigrate + kAsk);
      if (r != "OK" && r != "NOKEY") throw std::runtime_error("RedisCluster: MIGRATE " + key + ": " + r);
      if (per_key) per_key(key);
    }
  }
}

int RedisCluster::add_master_and_reshard(int n_slots, const KeyHook& per_key, ms limit) {
  const auto end = Clock::now() + limit;
  const SlotMap before = slot_map();
  std::vector<int> fresh;
  for (int i = 0; i <= o_.replicas_per_master; ++i) fresh.push_back(start_node());
  meet(fresh, end);
  const int m = fresh.front();
  replicate(m, std::vector<int>(fresh.begin() + 1, fresh.end()), end);
  wait(
      "cluster_state:ok of the new nodes", [this] { return not_ok(); }, end);  // else MIGRATE to it: CLUSTERDOWN
  const std::vector<int> masters = masters_in(before);
  const int n = static_cast<int>(masters.size());
  std::vector<int> moved;
  for (int k = 0; k < n; ++k) {
    for (int slot : last_slots_of(before, masters[k], n_slots / n + (k < n_slots % n ? 1 : 0))) {
      move_slot(slot, m, per_key, end);
      moved.push_back(slot);
    }
  }
  wait(
      "reshard to node " + std::to_string(m), [&] { return unsettled_or_not_at(moved, m); }, end);
  return m;
}

void RedisCluster::wait(const std::string& what, const std::function<std::string()>& state,
                        Clock::time_point end) const {
  poll_until(state, end, [&](const std::string& missing) { time_out(what, missing); });
}

void RedisCluster::time_out(const std::string& what, const std::string& state) const {
  std::string msg = "RedisCluster: no " + what + " in time (" + state + ")\n  ports of the nodes:";
  for (int i = 0; i < size(); ++i) msg += " " + std::to_string(data_port(i));
  for (int i = 0; i < size(); ++i)
    msg += "\n  node " + std::to_string(i) + " log:\n" + log_tail(nodes_[i]->log_file(), kLogLines);
  throw std::runtime_error(msg);
}

}  // namespace fairlock::test
