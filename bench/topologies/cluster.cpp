// fairlock on a Redis Cluster against a standalone server, all in one run
// (issue 35, "Measure"): `fairlock_cluster_bench [--blocks N] [--rounds N]
// [--seconds S] [--parts 1234] [--names N]`. It starts its own servers
// (tests/harness/redis_cluster.h, tests/harness/redis_server.h: free loopback
// ports, no persistence): a standalone redis-server, a 3-master and a 1-master
// cluster without replicas.
//  1. One name: uncontended lock+unlock pairs of one client (blocks
//     interleaved standalone / cluster, medians), and W = 16 threads (a
//     Client each) on one lock in rounds alternating which goes first:
//     grants/s and handoff (the releaser stamps the time just before
//     unlock(), the next holder, another thread, takes now - stamp when its
//     lock() returns: the release's round trip included).
//  2. Many names: 8 processes x 2 threads looping lock+unlock on random
//     names of 64, on the 1-master and the 3-master cluster (alternating):
//     grants/s and, per master, the names it owns, its share of the script
//     calls (= of the grants), commands/s and Redis CPU (INFO deltas), the
//     CPU less the master's idle CPU (measured with no client), per grant it served.
//  3. Wake fan-out: part 1's W = 16 cluster rounds seen from every master:
//     Redis CPU per grant of the master that owns the name and of the others,
//     each less its own idle CPU (measured with no client), and PUBLISH /
//     SPUBLISH per grant on the owner: which wake the library used, so the
//     same program measures the sharded wake once it lands.
//  4. Subscriptions (only with --parts 4, not by default): one process waiting
//     on N names at once (--names, default 10,000): the shard channels each
//     master holds for it, then after every wait ended (cluster_subscriptions.cpp).
#include "cluster.h"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <thread>
#include <vector>

namespace {

using fairlock::test::RedisCluster;
using fairlock::test::RedisClusterOptions;
using fairlock::test::RedisServer;
using namespace fcluster;

struct Args {
  int blocks = 15;
  int rounds = 3;
  ms contended{2000};  // one W = 16 round
  ms many{3000};       // one many-names round
  std::string parts = "123";
  int names = 10000;  // part 4
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--blocks") a.blocks = std::stoi(v);
    else if (k == "--rounds") a.rounds = std::stoi(v);
    else if (k == "--seconds") a.many = a.contended = ms(static_cast<long>(std::stod(v) * 1000));
    else if (k == "--parts") a.parts = v;
    else if (k == "--names") a.names = std::stoi(v);
    else throw std::invalid_argument("unknown option " + k);
  }
  if (argc % 2 == 0) throw std::invalid_argument("an option without its value");
  return a;
}

// A cluster of `masters` masters without replicas; a generous node timeout:
// a master starved of CPU for a while on a loaded machine is not a failure here.
RedisClusterOptions masters_only(int masters) {
  RedisClusterOptions o;
  o.masters = masters;
  o.replicas_per_master = 0;
  o.node_timeout = ms(15000);
  return o;
}

// Each server's CPU seconds per second over `window` with no client.
std::vector<double> idle_cpu(const Servers& servers, ms window) {
  const Sample before = counters(servers);
  std::this_thread::sleep_for(window);
  const Sample d = minus(counters(servers), before);
  std::vector<double> out;
  for (const auto& c : d) out.push_back(c.cpu_s / std::chrono::duration<double>(window).count());
  return out;
}

void many_names(const RedisCluster& one, const RedisCluster& three, const Args& a) {
  const std::vector<double> idle1 = idle_cpu(masters_of(one), ms(2000)), idle3 = idle_cpu(masters_of(three), ms(2000));
  Many m1, m3;
  for (int k = 0; k < a.rounds; ++k) {
    if (k % 2 == 0) many_round(one, a.many, 2 * k, m1);
    many_round(three, a.many, 2 * k + 1, m3);
    if (k % 2 == 1) many_round(one, a.many, 2 * k, m1);
  }
  std::printf("\n2. Many names: %d processes x %d threads, lock+unlock on random names of %d\n", kProcs, kThreads,
              kNames);
  print_many("1 master", one, m1, idle1);
  print_many("3 masters", three, m3, idle3);
}

void run(const Args& a) {
  std::printf("fairlock_cluster_bench: %u CPUs, load %s at start\n", std::thread::hardware_concurrency(),
              loadavg().c_str());
  const RedisServer standalone({"--save", "", "--appendonly", "no"});
  const RedisCluster three(masters_only(3)), one(masters_only(1));
  const int owner = owner_of(three, "hot");
  std::printf("servers: standalone :%d; 3 masters %s; 1 master %s; name \"hot\" on master %d\n", standalone.port(),
              three.seeds().c_str(), one.seeds().c_str(), owner);
  if (a.parts.find_first_of("13") != std::string::npos) {
    Servers servers = masters_of(three);
    servers.insert(servers.begin(), &standalone);
    const std::vector<double> idle = idle_cpu(servers, ms(2000));
    const OneName r = one_name(standalone, three, a.blocks, a.rounds, a.contended);
    print_one_name(r);
    print_fanout(r, owner, idle);
  }
  if (a.parts.find('2') != std::string::npos) many_names(one, three, a);
  if (a.parts.find('4') != std::string::npos) subscriptions(three, a.names);
  std::printf("\nload %s at the end\n", loadavg().c_str());
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc > 1 && std::string(argv[1]) == "worker")
      return worker_main(std::vector<std::string>(argv + 2, argv + argc));
    run(parse(argc, argv));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fairlock_cluster_bench: %s\n", e.what());
    std::fprintf(stderr,
                 "usage: fairlock_cluster_bench [--blocks N] [--rounds N] [--seconds S] [--parts 1234] [--names N]\n");
    return 2;
  }
}
