#include "sentinel_set.h"

#include <hiredis/hiredis.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <thread>

#include "poll_until.h"
#include "tls_pki.h"

namespace fairlock::test {

namespace {

using ms = std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;
using Fields = std::map<std::string, std::string>;

constexpr ms kAsk{1000};    // one question to one process (a stopped one never answers)
constexpr int kQuorum = 2;  // of 3 sentinels; also the majority a failover needs

// One command's reply as text (RedisServer::cmd's form), or "ERR:unreachable".
std::string ask(const RedisServer& s, const std::vector<std::string>& argv) {
  try {
    Reply r = s.reply(argv, kAsk);
    return r ? reply_text(r.get()) : "ERR:no reply";
  } catch (const std::exception&) {
    return "ERR:unreachable";
  }
}

Fields fields_of(const redisReply* r) {
  Fields f;
  if (r->type != REDIS_REPLY_ARRAY) return f;
  for (size_t i = 0; i + 1 < r->elements; i += 2) f[reply_text(r->element[i])] = reply_text(r->element[i + 1]);
  return f;
}

// A reply of key/value arrays (SENTINEL REPLICAS, SENTINEL SENTINELS): one Fields each; none if no answer.
std::vector<Fields> ask_table(const RedisServer& s, const std::vector<std::string>& argv) {
  std::vector<Fields> rows;
  try {
    Reply r = s.reply(argv, kAsk);
    if (r && r->type == REDIS_REPLY_ARRAY)
      for (size_t i = 0; i < r->elements; ++i) rows.push_back(fields_of(r->element[i]));
  } catch (const std::exception&) {
  }
  return rows;
}

// ROLE's first word: "master", "slave", or an "ERR:..." when it does not answer.
std::string role(const RedisServer& s) {
  std::string r = ask(s, {"ROLE"});
  return r.substr(0, r.find('\n'));
}

const Fields* row_with_port(const std::vector<Fields>& rows, int port) {
  for (const auto& f : rows)
    if (f.count("port") && f.at("port") == std::to_string(port)) return &f;
  return nullptr;
}

// Flags of another sentinel that is up and linked. Not "master_down": that
// is its vote that the previous master was down, which stays up to 5 s after
// a failover (Sentinel drops a vote after 5 ask periods).
bool healthy_sentinel(const std::string& flags) {
  std::istringstream in(flags);
  bool sentinel = false;
  for (std::string f; std::getline(in, f, ',');) {
    if (f == "s_down" || f == "o_down" || f == "disconnected") return false;
    sentinel = sentinel || f == "sentinel";
  }
  return sentinel;
}

}  // namespace

SentinelSet::TempDir::TempDir() {
  char tmpl[] = "/tmp/fairlock-sentinel-XXXXXX";
  if (!::mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
  path = tmpl;
}

SentinelSet::TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
}

SentinelSet::SentinelSet(SentinelSetOptions o, ms limit) : o_(std::move(o)) {
  const auto end = Clock::now() + limit;
  start_nodes(end);
  start_sentinels();
  wait_settled(left(end));
}

SentinelSet::~SentinelSet() = default;  // sentinels, then nodes, then the directory

TlsPort SentinelSet::tls_port() const {
  if (!o_.tls) return TlsPort{};
  return TlsPort{pki().server, pki().server_key, pki().ca, false, {"--tls-replication", "yes"}};
}

// A data node's options: replication without disk, as a replica of node
// `replica_of` (none if negative).
std::vector<std::string> SentinelSet::data_args(int replica_of) const {
  std::vector<std::string> a = {"--repl-diskless-sync", "yes",        "--repl-diskless-sync-delay", "0",
                                "--repl-diskless-load", "on-empty-db"};
  if (!o_.data_password.empty()) a.insert(a.end(), {"--masterauth", o_.data_password});
  if (replica_of >= 0) a.insert(a.end(), {"--replicaof", "127.0.0.1", std::to_string(data_port(replica_of))});
  return a;
}

// The master, then its replicas, online before any sentinel starts: a
// sentinel's first INFO of the master finds both (the next one is 10 s later).
void SentinelSet::start_nodes(Clock::time_point end) {
  const Launch data{"redis-server", "", o_.data_password};
  nodes_.push_back(std::make_unique<RedisServer>(data_args(-1), tls_port(), data));
  for (int i = 1; i < kNodes; ++i) nodes_.push_back(std::make_unique<RedisServer>(data_args(0), tls_port(), data));
  poll_until(
      "first sync of the replicas", [this] { return replicas_not_online(0); }, end);
}

// "" when every other node is an online replica of node m (its INFO says so).
std::string SentinelSet::replicas_not_online(int m) const {
  std::string info = ask(*nodes_[m], {"INFO", "replication"});
  for (int i = 0; i < kNodes; ++i)
    if (i != m && info.find(",port=" + std::to_string(data_port(i)) + ",state=online") == std::string::npos)
      return "node " + std::to_string(i) + " is not an online replica of node " + std::to_string(m);
  return "";
}

void SentinelSet::poll_until(const std::string& what, const std::function<std::string()>& state,
                             Clock::time_point end) const {
  test::poll_until(state, end, [&](const std::string& missing) { time_out(what, missing); });
}

std::string SentinelSet::sentinel_config(int master_port, int quorum, ms down_after) const {
  const std::string& n = o_.master_name;
  std::ostringstream c;
  c << "sentinel resolve-hostnames no\n"
    << "sentinel monitor " << n << " 127.0.0.1 " << master_port << " " << quorum << "\n"
    << "sentinel down-after-milliseconds " << n << " " << down_after.count() << "\n"
    << "sentinel failover-timeout " << n << " " << o_.failover_timeout.count() << "\n"
    << "sentinel parallel-syncs " << n << " " << kNodes - 1 << "\n";
  if (!o_.data_password.empty()) c << "sentinel auth-pass " << n << " " << o_.data_password << "\n";
  if (!o_.sentinel_password.empty()) c << "sentinel sentinel-pass " << o_.sentinel_password << "\n";
  return c.str();
}

// A sentinel from `config`, written to `config_file` (which it rewrites).
std::unique_ptr<RedisServer> SentinelSet::start_sentinel(const std::string& config_file,
                                                         const std::string& config) const {
  std::ofstream(config_file) << config;
  return std::make_unique<RedisServer>(std::vector<std::string>{}, tls_port(),
                                       Launch{FAIRLOCK_REDIS_SENTINEL_PATH, config_file, o_.sentinel_password});
}

void SentinelSet::start_sentinels() {
  for (int i = 0; i < kSentinels; ++i) {
    const std::string file = dir_.path + "/sentinel-" + std::to_string(i) + ".conf";
    sentinels_.push_back(start_sentinel(file, sentinel_config(data_port(0), kQuorum, o_.down_after)));
  }
}

std::unique_ptr<RedisServer> SentinelSet::stale_sentinel(int port) const {
  static std::atomic<int> n{0};
  const std::string file = dir_.path + "/stale-sentinel-" + std::to_string(n++) + ".conf";
  return start_sentinel(file, sentinel_config(port, 1, ms(60000)));
}

std::string SentinelSet::url() const {
  std::string u = o_.tls ? "rediss-sentinel://" : "redis-sentinel://";
  for (int i = 0; i < kSentinels; ++i) u += (i ? ",127.0.0.1:" : "127.0.0.1:") + std::to_string(sentinel_port(i));
  return u + "#" + o_.master_name;
}

int SentinelSet::data_port(int node) const { return o_.tls ? nodes_.at(node)->tls_port() : nodes_.at(node)->port(); }
int SentinelSet::sentinel_port(int sentinel) const {
  return o_.tls ? sentinels_.at(sentinel)->tls_port() : sentinels_.at(sentinel)->port();
}

int SentinelSet::index_of(int port) const {
  for (int i = 0; i < kNodes; ++i)
    if (data_port(i) == port) return i;
  return -1;
}

// The master's port as sentinel s names it; -1 if it does not run or answer.
int SentinelSet::named_master_port(int s) const {
  if (!sentinels_[s]->up()) return -1;
  std::string a = ask(*sentinels_[s], {"SENTINEL", "GET-MASTER-ADDR-BY-NAME", o_.master_name});
  return a.rfind("127.0.0.1\n", 0) == 0 ? std::atoi(a.c_str() + a.find('\n') + 1) : -1;
}

std::vector<int> SentinelSet::named_master_ports() const {
  std::vector<int> ports;
  for (int s = 0; s < kSentinels; ++s) ports.push_back(named_master_port(s));
  return ports;
}

int SentinelSet::master_port() const {
  for (int s = 0; s < kSentinels; ++s)
    if (int p = named_master_port(s); p >= 0) return p;
  throw std::runtime_error("no sentinel names the master " + o_.master_name);
}

int SentinelSet::master_index() const { return index_of(master_port()); }

// Until the sentinels that answer (at least a quorum) agree on a master other
// than node `old` and it answers ROLE master.
SentinelSet::NewMaster SentinelSet::wait_new_master(int old, Clock::time_point t0, Clock::time_point end) const {
  std::optional<ms> first;
  int index = -1;
  poll_until(
      "new master after node " + std::to_string(old),
      [&] {
        std::string named;
        std::map<int, bool> promoted;  // named port -> a node other than `old` that answers ROLE master
        int answered = 0;
        for (int p : named_master_ports()) {
          named += " " + std::to_string(p);
          if (p < 0) continue;
          ++answered;
          if (promoted.count(p)) continue;
          index = index_of(p);
          promoted[p] = index >= 0 && index != old && role(*nodes_[index]) == "master";
          if (promoted[p] && !first) first = std::chrono::duration_cast<ms>(Clock::now() - t0);
        }
        const bool agreed = promoted.size() == 1 && promoted.begin()->second && answered >= kQuorum;
        return agreed ? "" : "the sentinels name ports" + named;
      },
      end);
  return {index, *first};
}

void SentinelSet::wait_settled(ms limit) const {
  int running = 0;
  for (const auto& s : sentinels_) running += s->up() ? 1 : 0;
  if (running < kQuorum) throw std::logic_error("SentinelSet: fewer than 2 sentinels run");
  for (int i = 0; i < kNodes; ++i)
    if (!nodes_[i]->up()) throw std::logic_error("SentinelSet: node " + std::to_string(i) + " is down");
  poll_until(
      "settled set", [this] { return unsettled(); }, Clock::now() + limit);
}

// "" when the sentinels that run agree on a master that answers ROLE master
// with both other nodes online replicas, and each of them sees all of it;
// otherwise the first thing that is not so.
std::string SentinelSet::unsettled() const {
  const std::vector<int> ports = named_master_ports();
  int named = -1;
  for (int s = 0; s < kSentinels; ++s) {
    if (!sentinels_[s]->up()) continue;
    if (ports[s] < 0 || (named >= 0 && ports[s] != named))
      return "the sentinels name ports " + std::to_string(ports[0]) + " " + std::to_string(ports[1]) + " " +
             std::to_string(ports[2]);
    named = ports[s];
  }
  const int m = index_of(named);
  if (m < 0) return "the sentinels name port " + std::to_string(named) + ", no node's";
  if (role(*nodes_[m]) != "master") return "node " + std::to_string(m) + " is not ROLE master";
  if (std::string why = replicas_not_online(m); !why.empty()) return why;
  for (int s = 0; s < kSentinels; ++s) {
    std::string why = sentinels_[s]->up() ? unsettled_sentinel(s, m) : "";
    if (!why.empty()) return "sentinel " + std::to_string(s) + ": " + why;
  }
  return "";
}

// What sentinel s does not see yet of a set whose master is node m.
std::string SentinelSet::unsettled_sentinel(int s, int m) const {
  const RedisServer& sentinel = *sentinels_[s];
  const auto masters = ask_table(sentinel, {"SENTINEL", "MASTERS"});
  const Fields* master = row_with_port(masters, data_port(m));
  if (!master || master->at("flags") != "master") return "the master's flags are not just \"master\"";
  const auto replicas = ask_table(sentinel, {"SENTINEL", "REPLICAS", o_.master_name});
  for (int i = 0; i < kNodes; ++i) {
    if (i == m) continue;
    const Fields* r = row_with_port(replicas, data_port(i));
    if (!r || r->at("flags") != "slave" || r->at("master-link-status") != "ok" ||
        r->at("master-port") != std::to_string(data_port(m)))
      return "node " + std::to_string(i) + " is not a healthy replica of node " + std::to_string(m) + " to it";
  }
  const auto others = ask_table(sentinel, {"SENTINEL", "SENTINELS", o_.master_name});
  for (int t = 0; t < kSentinels; ++t) {
    const Fields* r = row_with_port(others, sentinel_port(t));
    if (t != s && sentinels_[t]->up() && (!r || !healthy_sentinel(r->at("flags"))))
      return "it does not see sentinel " + std::to_string(t) + " healthy (" + (r ? r->at("flags") : "unknown") + ")";
  }
  return "";
}

void SentinelSet::time_out(const std::string& what, const std::string& state) const {
  std::string msg = "SentinelSet: no " + what + " in time (" + state + ")\n  data ports of the nodes:";
  for (size_t i = 0; i < nodes_.size(); ++i) msg += " " + std::to_string(data_port(static_cast<int>(i)));
  msg += "; sentinels' ports:";
  for (size_t i = 0; i < sentinels_.size(); ++i) msg += " " + std::to_string(sentinel_port(static_cast<int>(i)));
  for (size_t i = 0; i < sentinels_.size(); ++i)
    msg += "\n  sentinel " + std::to_string(i) + " log:\n" + log_tail(sentinels_[i]->log_file(), 12);
  throw std::runtime_error(msg);
}

void SentinelSet::cut_replication() {
  const int m = master_index();
  for (int i = 0; i < kNodes; ++i) {
    if (i != m) node(i).pause();
  }
  node(m).cmd({"CLIENT", "KILL", "TYPE", "replica"});
}

SentinelSet::ms SentinelSet::kill_master_and_wait_failover(ms limit, ms replicas_behind) {
  const auto end = Clock::now() + limit;
  const int old = master_index();
  if (replicas_behind.count() > 0) {
    cut_replication();
    std::this_thread::sleep_for(replicas_behind);
  }
  const auto t0 = Clock::now();
  node(old).kill();
  if (replicas_behind.count() > 0) {
    for (int i = 0; i < kNodes; ++i) {
      if (i != old) node(i).resume();
    }
  }
  const NewMaster now = wait_new_master(old, t0, end);
  node(old).restart(data_args(now.index));
  wait_settled(left(end));
  return now.took;
}

SentinelSet::ms SentinelSet::failover_coordinated(ms limit) {
  const auto end = Clock::now() + limit;
  const int old = master_index();
  const auto t0 = Clock::now();
  std::string ok = "ERR:no sentinel up";
  for (const auto& s : sentinels_) {
    if (!s->up()) continue;
    ok = ask(*s, {"SENTINEL", "FAILOVER", o_.master_name});
    break;
  }
  if (ok != "OK") throw std::runtime_error("SENTINEL FAILOVER: " + ok);
  const ms took = wait_new_master(old, t0, end).took;
  wait_settled(left(end));
  return took;
}

SentinelSet::ms SentinelSet::pause_master(ms limit) {
  const auto end = Clock::now() + limit;
  const int old = master_index();
  const auto t0 = Clock::now();
  node(old).pause();
  paused_ = old;
  return wait_new_master(old, t0, end).took;
}

SentinelSet::ms SentinelSet::resume_old_master(ms limit) {
  if (paused_ < 0) throw std::logic_error("resume_old_master without pause_master");
  const auto end = Clock::now() + limit;
  const int old = paused_;
  paused_ = -1;
  node(old).resume();
  const auto t0 = Clock::now();
  poll_until(
      "demotion of node " + std::to_string(old),
      [&] { return role(node(old)) == "slave" ? "" : "it answers ROLE " + role(node(old)); }, end);
  const ms took = std::chrono::duration_cast<ms>(Clock::now() - t0);
  wait_settled(left(end));
  return took;
}

}  // namespace fairlock::test
