// What Options::sync_replicas costs per grant, as ratios to the same run
// without it: `fairlock_sync_cost <master port>` against a master with two
// replicas (bench/sync_cost.sh starts them). Uncontended: one client's
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
constexpr int kLevels[] = {0, 1, 2};

fairlock::Options options(int port, int replicas) {
  fairlock::Options o;
  o.url = "redis://127.0.0.1:" + std::to_string(port);
  o.sync_replicas = replicas;
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
double contended_rate(int port, int replicas, int w, std::chrono::milliseconds run, const std::string& name) {
  std::vector<std::unique_ptr<fairlock::Client>> clients;
  for (int i = 0; i < w; ++i) clients.push_back(std::make_unique<fairlock::Client>(options(port, replicas)));
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
  return grants.load() / std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: fairlock_sync_cost <master port> [blocks] [rounds]\n");
    return 2;
  }
  const int port = std::atoi(argv[1]);
  const int blocks = argc > 2 ? std::atoi(argv[2]) : 15;
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 3;
  std::vector<double> pair[3], rate[3];
  {
    std::vector<std::unique_ptr<fairlock::Client>> clients;
    std::vector<std::unique_ptr<fairlock::FairLock>> locks;
    for (int n : kLevels) {
      clients.push_back(std::make_unique<fairlock::Client>(options(port, n)));
      locks.push_back(std::make_unique<fairlock::FairLock>(*clients.back(), "sync-cost-pair-" + std::to_string(n)));
      pair_us(*locks.back(), 50);  // warm up: connections, the library
    }
    for (int b = 0; b < blocks; ++b) {
      for (int n : kLevels) pair[n].push_back(pair_us(*locks[n], 200));
    }
  }
  for (int r = 0; r < rounds; ++r) {
    for (int n : kLevels) {
      rate[n].push_back(
          contended_rate(port, n, 16, std::chrono::milliseconds(2000), "sync-cost-w16-" + std::to_string(n)));
    }
  }
  std::printf("%-16s %12s %8s %16s %14s %8s\n", "sync_replicas", "pair us", "ratio", "W=16 grants/s", "us/grant",
              "ratio");
  for (int n : kLevels) {
    const double p = median(pair[n]);
    const double g = median(rate[n]);
    std::printf("%-16d %12.1f %8.2f %16.0f %14.1f %8.2f\n", n, p, p / median(pair[0]), g, 1e6 / g, median(rate[0]) / g);
  }
  return 0;
}
