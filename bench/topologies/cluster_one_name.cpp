// Part 1 of fairlock_cluster_bench (cluster.h): one name, standalone against
// the cluster; and part 3, the wake fan-out seen from every master over the
// cluster's W = 16 rounds.
#include <sys/resource.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cluster.h"

namespace fcluster {

namespace {

constexpr int kW = 16;
constexpr int kPairs = 200;  // per block
const char* const kWay[2] = {"standalone", "cluster"};

// Microseconds per lock+unlock pair over `pairs` pairs.
double pair_us(fairlock::FairLock& lock, int pairs) {
  const auto t0 = Clock::now();
  for (int i = 0; i < pairs; ++i) {
    lock.lock();
    lock.unlock();
  }
  return seconds_since(t0) * 1e6 / pairs;
}

// Median µs per uncontended pair, blocks interleaved across the two URLs.
void uncontended(const std::string (&url)[2], int blocks, OneName& r) {
  fairlock::Client c0(options(url[0])), c1(options(url[1]));
  fairlock::FairLock l0(c0, "pair"), l1(c1, "pair");
  fairlock::FairLock* lock[2] = {&l0, &l1};
  std::vector<double> us[2];
  for (auto* l : lock) pair_us(*l, 50);  // warm up: connections, the library
  for (int b = 0; b < blocks; ++b)
    for (int i = 0; i < 2; ++i) us[(i + b) % 2].push_back(pair_us(*lock[(i + b) % 2], kPairs));
  for (int i = 0; i < 2; ++i) r.pair_us[i] = median(us[i]);
}

// This process's CPU seconds (user + system) so far: the W = 16 clients' cost.
double process_cpu_s() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  const auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  return s(u.ru_utime) + s(u.ru_stime);
}

long long now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

// The last holder and when it called unlock(), for the next holder's handoff.
struct Handoff {
  std::atomic<int> holder{-1};
  std::atomic<long long> released_ns{0};
};

// Participant `me`: lock+unlock on `name` until `stop`; its grants, and its handoffs (µs).
long long contend(fairlock::Client& client, const std::string& name, int me, Handoff& h, const std::atomic<bool>& stop,
                  std::vector<double>& handoffs) {
  fairlock::FairLock lock(client, name);
  long long grants = 0;
  while (!stop.load()) {
    lock.lock();
    const long long t = now_ns();
    const int previous = h.holder.exchange(me);
    if (previous >= 0 && previous != me) handoffs.push_back(static_cast<double>(t - h.released_ns.load()) / 1e3);
    ++grants;
    h.released_ns = now_ns();
    lock.unlock();
  }
  return grants;
}

// One round of W = 16 threads, each with a Client, on `name`: grants, seconds, handoffs.
struct Round {
  long long grants = 0;
  double seconds = 0;
  double client_cpu_s = 0;
  std::vector<double> handoffs;
};
Round contended(const std::string& url, const std::string& name, ms run) {
  std::vector<std::unique_ptr<fairlock::Client>> clients;
  for (int i = 0; i < kW; ++i) clients.push_back(std::make_unique<fairlock::Client>(options(url)));
  std::atomic<bool> stop{false};
  std::atomic<long long> grants{0};
  Handoff h;
  std::vector<std::vector<double>> handoffs(kW);
  std::vector<std::thread> threads;
  const auto t0 = Clock::now();
  const double cpu0 = process_cpu_s();
  for (int i = 0; i < kW; ++i)
    threads.emplace_back([&, i] { grants += contend(*clients[i], name, i, h, stop, handoffs[i]); });
  std::this_thread::sleep_for(run);
  stop = true;
  for (auto& t : threads) t.join();
  Round r{grants.load(), seconds_since(t0), process_cpu_s() - cpu0, {}};
  for (auto& v : handoffs) r.handoffs.insert(r.handoffs.end(), v.begin(), v.end());
  return r;
}

}  // namespace

OneName one_name(const fairlock::test::RedisServer& standalone, const fairlock::test::RedisCluster& c, int blocks,
                 int rounds, ms round) {
  const std::string url[2] = {standalone.url(), c.url()};
  OneName r;
  uncontended(url, blocks, r);
  std::vector<double> handoffs[2];
  const Servers servers[2] = {{&standalone}, masters_of(c)};
  for (int k = 0; k < rounds; ++k) {
    for (int j = 0; j < 2; ++j) {
      const int i = (j + k) % 2;  // alternate which goes first
      const Sample before = counters(servers[i]);
      Round one = contended(url[i], "hot", round);
      add(r.servers[i], minus(counters(servers[i]), before));
      r.grants[i] += one.grants;
      r.seconds[i] += one.seconds;
      r.client_cpu_s[i] += one.client_cpu_s;
      r.rounds[i].push_back(static_cast<double>(one.grants) / one.seconds);
      handoffs[i].insert(handoffs[i].end(), one.handoffs.begin(), one.handoffs.end());
    }
  }
  for (int i = 0; i < 2; ++i) {
    r.rate[i] = median(r.rounds[i]);
    r.handoff_p50[i] = percentile(handoffs[i], 0.5);
    r.handoff_p90[i] = percentile(handoffs[i], 0.9);
    r.handoff_p99[i] = percentile(handoffs[i], 0.99);
  }
  return r;
}

double client_us(const OneName& r, int i) { return r.client_cpu_s[i] * 1e6 / static_cast<double>(r.grants[i]); }

void print_one_name(const OneName& r) {
  std::printf("\n1. One name: uncontended pairs (one client) and W = %d threads on one lock\n", kW);
  std::printf("%-12s %8s %8s %14s %12s %12s %12s %14s\n", "server", "pair us", "pairs/s", "W=16 grants/s",
              "handoff p50", "p90", "p99", "client us/grant");
  for (int i = 0; i < 2; ++i)
    std::printf("%-12s %8.1f %8.0f %14.0f %9.1f us %9.1f us %9.1f us %14.1f\n", kWay[i], r.pair_us[i],
                1e6 / r.pair_us[i], r.rate[i], r.handoff_p50[i], r.handoff_p90[i], r.handoff_p99[i], client_us(r, i));
  for (int i = 0; i < 2; ++i) {
    std::printf("%s W=16 rounds, grants/s:", kWay[i]);
    for (double g : r.rounds[i]) std::printf(" %.0f", g);
    std::printf("\n");
  }
  std::printf("%-12s %8.2f %8.2f %14.2f %12.2f %12.2f %12.2f %14.2f\n", "cluster/std", r.pair_us[1] / r.pair_us[0],
              r.pair_us[0] / r.pair_us[1], r.rate[1] / r.rate[0], r.handoff_p50[1] / r.handoff_p50[0],
              r.handoff_p90[1] / r.handoff_p90[0], r.handoff_p99[1] / r.handoff_p99[0],
              client_us(r, 1) / client_us(r, 0));
}

// One server's row of the fan-out table.
void fanout_row(const std::string& label, const char* owns, const Counters& c, double idle, long long grants,
                double seconds) {
  const auto g = static_cast<double>(grants);
  std::printf("%-10s %-5s %10.1f %10.2f %14.2f %12.2f %10.2f %10.2f\n", label.c_str(), owns, c.cpu_s * 1e3 / seconds,
              idle * 1e3, c.cpu_s * 1e6 / g, (c.cpu_s - idle * seconds) * 1e6 / g, static_cast<double>(c.publish) / g,
              static_cast<double>(c.spublish) / g);
}

void print_fanout(const OneName& r, int owner, const std::vector<double>& idle) {
  std::printf("\n3. Wake fan-out: the W = %d rounds (cluster: %lld grants in %.1f s) seen from each server\n", kW,
              r.grants[1], r.seconds[1]);
  std::printf("%-10s %-5s %10s %10s %14s %12s %10s %10s\n", "server", "owns", "CPU ms/s", "idle ms/s", "CPU us/grant",
              "less idle", "pub/grant", "spub/grant");
  fanout_row("standalone", "yes", r.servers[0][0], idle[0], r.grants[0], r.seconds[0]);
  for (std::size_t m = 0; m < r.servers[1].size(); ++m)
    fanout_row("master " + std::to_string(m), static_cast<int>(m) == owner ? "yes" : "no", r.servers[1][m], idle[m + 1],
               r.grants[1], r.seconds[1]);
}

}  // namespace fcluster
