// What Options::sync_replicas costs per grant, and what going through
// Sentinel costs, as ratios to the same run without either:
// `fairlock_sync_cost <master port> [blocks] [rounds] [sentinel url]`
// against a master with two replicas and three sentinels watching it
// (bench/topologies/sync_cost.sh starts them). Uncontended: one client's
// lock+unlock pairs, in blocks interleaved across N = 0, 1, 2 (medians of
// the blocks). Contended: W = 16 threads, each with a Client of its own, on
// one lock, in rounds alternating N (median grants/s over the rounds).
#include <fairlock/fairlock.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
// One way to use the same master: its URL and sync_replicas.
struct Way {
  std::string label;
  std::string url;
  int replicas;
};

fairlock::Options options(const Way& way) {
  fairlock::Options o;
  o.url = way.url;
  o.sync_replicas = way.replicas;
  return o;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Microseconds per lock+unlock pair over `pairs` pairs.
double pair_us(fairlock::FairLock& lock, int pairs) {
  const auto t0 = Clock::now();
  for (int i = 0; i < pairs; ++i) {
    lock.lock();
    lock.unlock();
  }
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / pairs;
}

// Grants per second of `w` threads on one name for `run`.
double contended_rate(const Way& way, int w, std::chrono::milliseconds run, const std::string& name) {
  std::vector<std::unique_ptr<fairlock::Client>> clients;
  for (int i = 0; i < w; ++i) clients.push_back(std::make_unique<fairlock::Client>(options(way)));
  std::atomic<bool> stop{false};
  std::atomic<long> grants{0};
  std::vector<std::thread> threads;
  const auto t0 = Clock::now();
  for (auto& c : clients) {
    threads.emplace_back([&, client = c.get()] {
      fairlock::FairLock lock(*client, name);
      while (!stop.load()) {
        lock.lock();
        ++grants;
        lock.unlock();
      }
    });
  }
  std::this_thread::sleep_for(run);
  stop = true;
  for (auto& t : threads) t.join();
  return static_cast<double>(grants.load()) / std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: fairlock_sync_cost <master port> [blocks] [rounds] [sentinel url]\n");
    return 2;
  }
  const std::string direct = "redis://127.0.0.1:" + std::string(argv[1]);
  const int blocks = argc > 2 ? std::atoi(argv[2]) : 15;
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 3;
  std::vector<Way> ways = {{"direct N=0", direct, 0}, {"direct N=1", direct, 1}, {"direct N=2", direct, 2}};
  if (argc > 4) ways.push_back({"sentinel N=0", argv[4], 0});
  std::vector<std::vector<double>> pair(ways.size()), rate(ways.size());
  {
    std::vector<std::unique_ptr<fairlock::Client>> clients;
    std::vector<std::unique_ptr<fairlock::FairLock>> locks;
    for (std::size_t i = 0; i < ways.size(); ++i) {
      clients.push_back(std::make_unique<fairlock::Client>(options(ways[i])));
      locks.push_back(std::make_unique<fairlock::FairLock>(*clients.back(), "sync-cost-pair-" + std::to_string(i)));
      pair_us(*locks.back(), 50);  // warm up: connections, the library
    }
    for (int b = 0; b < blocks; ++b) {
      for (std::size_t i = 0; i < ways.size(); ++i) pair[i].push_back(pair_us(*locks[i], 200));
    }
  }
  for (int r = 0; r < rounds; ++r) {
    for (std::size_t i = 0; i < ways.size(); ++i) {
      rate[i].push_back(
          contended_rate(ways[i], 16, std::chrono::milliseconds(2000), "sync-cost-w16-" + std::to_string(i)));
    }
  }
  std::printf("%-16s %12s %8s %16s %14s %8s\n", "way", "pair us", "ratio", "W=16 grants/s", "us/grant", "ratio");
  for (std::size_t i = 0; i < ways.size(); ++i) {
    const double p = median(pair[i]);
    const double g = median(rate[i]);
    std::printf("%-16s %12.1f %8.2f %16.0f %14.1f %8.2f\n", ways[i].label.c_str(), p, p / median(pair[0]), g, 1e6 / g,
                median(rate[0]) / g);
  }
  return 0;
}
