// Part 4 of fairlock_cluster_bench: the wake subscriptions of one process
// waiting on N names at once (issue 35: "measure subscriptions per process
// at 10,000 names"). One client holds N names spread over the masters;
// another client waits on each (lock_async, 120 s). Once every wait is
// queued, each master's INFO stats gives its shard channels
// (pubsubshard_channels: the waiting process's SSUBSCRIBEs there, one per
// name); then the holder releases every name, each wait is granted by a
// handoff, and the channels kept afterwards show the idle bound (the wake
// keeps at most 1024 idle subscriptions per node).
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <thread>

#include "cluster.h"

namespace fcluster {

namespace {

using fairlock::test::RedisCluster;

long long shard_channels(const fairlock::test::RedisServer& s) {
  const std::string info = s.cmd({"INFO", "stats"});
  const std::string field = "pubsubshard_channels:";
  const std::size_t at = info.find(field);
  return at == std::string::npos ? -1 : std::stoll(info.substr(at + field.size()));
}

std::vector<long long> channels_per_master(const RedisCluster& c) {
  std::vector<long long> out;
  for (const auto* s : masters_of(c)) out.push_back(shard_channels(*s));
  return out;
}

long long sum(const std::vector<long long>& v) {
  long long total = 0;
  for (long long x : v) total += x;
  return total;
}

// Polls `done` every 100 ms for at most `limit`; true once it held.
template <class F>
bool within(ms limit, F done) {
  const auto end = Clock::now() + limit;
  while (!done()) {
    if (Clock::now() >= end) return false;
    std::this_thread::sleep_for(ms(100));
  }
  return true;
}

// The shard subscriptions of each connection of a master that has some
// (CLIENT LIST's ssub), as "name=count" (the clients set no name: "id=N").
std::string subscribers(const fairlock::test::RedisServer& s) {
  std::string out;
  const std::string list = s.cmd({"CLIENT", "LIST"});
  std::size_t line = 0;
  while (line < list.size()) {
    const std::size_t end = std::min(list.find('\n', line), list.size());
    const std::string l = list.substr(line, end - line);
    const std::size_t at = l.find(" ssub=");
    if (at != std::string::npos && l.compare(at + 6, 2, "0 ") != 0) {
      out += " [" + l.substr(0, l.find(' ')) + " ssub=" + l.substr(at + 6, l.find(' ', at + 6) - at - 6) + "]";
    }
    line = end + 1;
  }
  return out;
}

void print_channels(const RedisCluster& c, const char* when) {
  const std::vector<long long> per_master = channels_per_master(c);
  std::printf("  %-24s %lld shard channels:", when, sum(per_master));
  for (long long n : per_master) std::printf(" %lld", n);
  std::printf(" (per master); subscribers:");
  for (const auto* s : masters_of(c)) std::printf("%s", subscribers(*s).c_str());
  std::printf("\n");
}

// try_lock() (no queue, so no subscription) on `n` fresh names, each
// released at once: µs per call.
double try_lock_us(fairlock::Client& client, int n) {
  const auto t0 = Clock::now();
  for (int i = 0; i < n; ++i) {
    fairlock::FairLock l(client, "subs-try-" + std::to_string(i));
    if (l.try_lock()) l.unlock();
  }
  return seconds_since(t0) * 1e6 / n;
}

}  // namespace

void subscriptions(const RedisCluster& c, int names) {
  std::printf("\n4. Wake subscriptions of one process waiting on %d names at once (3 masters)\n", names);
  fairlock::Client holder(options(c.url())), waiter(options(c.url()));
  std::vector<std::unique_ptr<fairlock::FairLock>> held, waits;
  std::vector<int> names_per_master(masters_of(c).size(), 0);
  const auto locking = Clock::now();
  for (int i = 0; i < names; ++i) {
    held.push_back(std::make_unique<fairlock::FairLock>(holder, "subs-" + std::to_string(i)));
    held.back()->lock();
  }
  const double lock_us = seconds_since(locking) * 1e6 / names;
  for (int i = 0; i < names; ++i) ++names_per_master.at(owner_of(c, "subs-" + std::to_string(i)));
  std::printf("  names per master:");
  for (int n : names_per_master) std::printf(" %d", n);
  std::printf(
      "\n  the holder's uncontended lock() on each fresh name: %.0f us (a queued wait subscribes to its\n"
      "  name first); try_lock() on fresh names (no subscription): %.0f us\n",
      lock_us, try_lock_us(holder, names));
  std::atomic<int> granted{0}, failed{0};
  const auto t0 = Clock::now();
  for (int i = 0; i < names; ++i) {
    waits.push_back(std::make_unique<fairlock::FairLock>(waiter, "subs-" + std::to_string(i)));
    waits.back()->lock_async(std::chrono::seconds(120),
                             [&](const fairlock::AcquireResult& r) { (r.granted() ? granted : failed).fetch_add(1); });
  }
  const bool all_subscribed = within(ms(120000), [&] { return sum(channels_per_master(c)) >= names; });
  std::printf("  every wait subscribed: %s after %.1f s\n", all_subscribed ? "yes" : "NO", seconds_since(t0));
  print_channels(c, "while waiting:");
  const auto t1 = Clock::now();
  for (auto& h : held) h->unlock();
  const bool all_done = within(ms(120000), [&] { return granted.load() + failed.load() >= names; });
  std::printf("  granted %d, failed %d (%s), %.1f s after the releases began\n", granted.load(), failed.load(),
              all_done ? "all ended" : "NOT all ended", seconds_since(t1));
  for (auto& w : waits) {
    if (w->owns_lock()) w->unlock();
  }
  std::this_thread::sleep_for(ms(500));
  print_channels(c, "after every wait ended:");
}

}  // namespace fcluster
