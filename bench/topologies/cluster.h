#pragma once
// fairlock_cluster_bench (bench/topologies/cluster.cpp): fairlock on a Redis Cluster
// against a standalone server, in one run (issue 35, "Measure"). Shared by
// its files: servers' counters and small helpers (cluster_counters.cpp), the one
// name part (cluster_one_name.cpp), the many-names part and its worker process
// (cluster_many_names.cpp, cluster_worker.cpp), the subscriptions part
// (cluster_subscriptions.cpp).
#include <fairlock/fairlock.h>

#include <chrono>
#include <string>
#include <vector>

#include "redis_cluster.h"
#include "redis_server.h"

namespace fcluster {

using Clock = std::chrono::steady_clock;
using ms = std::chrono::milliseconds;
using Servers = std::vector<const fairlock::test::RedisServer*>;

// What one redis-server has done so far: INFO cpu and INFO commandstats.
struct Counters {
  double cpu_s = 0;        // used_cpu_user + used_cpu_sys
  long long scripts = 0;   // FCALL + EVALSHA calls (the library's script calls)
  long long commands = 0;  // every command but INFO (those inside scripts included)
  long long publish = 0;   // PUBLISH calls (inside scripts: the classic wake)
  long long spublish = 0;  // SPUBLISH calls (the sharded wake)
  Counters operator-(const Counters& o) const;
  Counters& operator+=(const Counters& o);
};
using Sample = std::vector<Counters>;  // one per server

Sample counters(const Servers& servers);
Sample minus(const Sample& after, const Sample& before);
void add(Sample& sum, const Sample& more);  // sum may be empty

// Small helpers.
double median(std::vector<double> v);
double percentile(std::vector<double> v, double p);
double seconds_since(Clock::time_point t0);
std::string loadavg();                                                         // /proc/loadavg's three figures
Servers masters_of(const fairlock::test::RedisCluster& c);                     // without replicas: every node
int owner_of(const fairlock::test::RedisCluster& c, const std::string& name);  // node index
fairlock::Options options(const std::string& url);

// Part 1, one name: standalone against the cluster.
struct OneName {
  double pair_us[2] = {0, 0};     // uncontended pair, median of blocks: [0] standalone, [1] cluster
  double rate[2] = {0, 0};        // W = 16 grants/s, median of rounds
  std::vector<double> rounds[2];  // W = 16 grants/s of each round
  double handoff_p50[2] = {0, 0}, handoff_p90[2] = {0, 0}, handoff_p99[2] = {0, 0};  // µs, over every round's handoffs
  Sample servers[2];  // over the W = 16 rounds: [0] the standalone server, [1] the cluster's masters
  long long grants[2] = {0, 0};
  double seconds[2] = {0, 0};
  double client_cpu_s[2] = {0, 0};  // the W = 16 clients' own CPU (this process's)
};
OneName one_name(const fairlock::test::RedisServer& standalone, const fairlock::test::RedisCluster& c, int blocks,
                 int rounds, ms round);
void print_one_name(const OneName& r);
// Part 3 from part 1's W = 16 rounds; `idle`: each server's CPU seconds per
// second with no client, [0] the standalone server, then the masters.
void print_fanout(const OneName& r, int owner, const std::vector<double>& idle);

// Part 2, many names on one cluster.
struct Many {
  std::vector<double> rate;  // grants/s of each round
  Sample sum;                // per master, over the rounds
  long long grants = 0;
  double seconds = 0;
};
void many_round(const fairlock::test::RedisCluster& c, ms run, int round, Many& into);
void print_many(const std::string& label, const fairlock::test::RedisCluster& c, const Many& m,
                const std::vector<double>& idle);

// Part 4: the wake subscriptions of one process waiting on `names` names.
void subscriptions(const fairlock::test::RedisCluster& c, int names);

constexpr int kNames = 64, kProcs = 8, kThreads = 2;
std::string many_name(int i);  // the many-names part's name i (the worker's and the driver's)

// `fairlock_cluster_bench worker URL NAMES THREADS MILLISECONDS SEED`: one
// Client, THREADS threads looping lock+unlock on random names of NAMES;
// prints "ready", waits for "go" on stdin, runs, prints "grants N".
int worker_main(const std::vector<std::string>& args);

}  // namespace fcluster
