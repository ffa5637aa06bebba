// The promotion roulette, asynchronous: ten thousand customers spin at once
// in ONE process with no thread per customer. Each spin is a lock_async()
// on the wheel's fair lock; the client's own async thread grants them in
// arrival order and runs each spin in its callback (read-decide-fenced
// write, as in roulette.cpp), then releases, which hands the wheel to the
// next customer. The process has at most 4 threads: main, the client's
// heartbeat, wake subscriber and async thread.
//
//   fairlock_roulette_async     runs the guarantee table below and checks it
// FAIRLOCK_URL selects the server (default redis://127.0.0.1:6379).
#include <dirent.h>
#include <fairlock/fairlock.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "roulette_store.h"

namespace {

using roulette::Redis;
using roulette::spin;

int threads_in_this_process() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
    closedir(d);
  }
  return n;
}

// What the spins' callbacks saw; they all run on the client's async thread,
// the main thread reads it once they are done.
struct Tally {
  std::mutex mu;
  std::condition_variable cv;
  int done = 0, refused = 0, failed = 0, out_of_order = 0, next_in_line = 0;
  int max_threads = 0;
  void finish() {
    std::lock_guard<std::mutex> lk(mu);
    ++done;
    cv.notify_all();
  }
};

// Every customer spins once, all at the same time.
bool play(const std::string& url, const char* title, int customers, int prizes, int index) {
  const std::string game = "roulette-async:" + std::to_string(getpid()) + ":" + std::to_string(index);
  Redis setup(url);
  setup.integer("DEL %s:prizes %s:winners %s:fence", game.c_str(), game.c_str(), game.c_str());
  setup.integer("SET %s:prizes %d", game.c_str(), prizes);

  Redis store(url);  // used by the callbacks only, all on the async thread
  Tally tally;
  {
    fairlock::Options opts;
    opts.url = url;
    // One process keeps 10,000 waiters alive: each heartbeat round renews
    // every one of them (about 30,000 Redis commands). On a loaded host a
    // round can take seconds, so liveness gets room for a slow round or two.
    opts.liveness_ttl = std::chrono::seconds(20);
    fairlock::Client client(opts);
    std::vector<std::unique_ptr<fairlock::FairLock>> wheel;  // one claim per customer
    wheel.reserve(customers);
    for (int c = 0; c < customers; ++c) {
      wheel.push_back(std::make_unique<fairlock::FairLock>(client, game));
      fairlock::FairLock* turn = wheel.back().get();
      turn->lock_async([&, turn, c](const fairlock::AcquireResult& r) {
        {
          std::lock_guard<std::mutex> lk(tally.mu);
          if (!r) {
            ++tally.failed;
          } else {
            if (c != tally.next_in_line) ++tally.out_of_order;
            tally.next_in_line = c + 1;
            try {
              if (spin(store, game, "customer-" + std::to_string(c), r.fence()) < 0) ++tally.refused;
            } catch (const std::exception& e) {
              std::fprintf(stderr, "roulette_async: %s\n", e.what());
              ++tally.failed;
            }
            tally.max_threads = std::max(tally.max_threads, threads_in_this_process());
          }
        }
        if (r) turn->unlock();  // hands the wheel to the next customer
        tally.finish();
      });
    }
    std::unique_lock<std::mutex> lk(tally.mu);
    if (!tally.cv.wait_for(lk, std::chrono::minutes(5), [&] { return tally.done == customers; })) {
      throw std::runtime_error("the spins did not finish within 5 minutes");
    }
  }
  long long winners = setup.integer("SCARD %s:winners", game.c_str());
  long long left = setup.integer("GET %s:prizes", game.c_str());
  long long expected = std::min(customers, prizes);
  bool ok = tally.failed == 0 && tally.refused == 0 && tally.out_of_order == 0 && tally.max_threads <= 4 &&
            winners == expected && left == prizes - winners;
  std::printf("%-36s %6d %6d %7lld %5lld %7d %8d %7d  %s\n", title, customers, prizes, winners, left, tally.refused,
              tally.out_of_order, tally.max_threads, ok ? "yes" : "NO");
  setup.integer("DEL %s:prizes %s:winners %s:fence", game.c_str(), game.c_str(), game.c_str());
  return ok;
}

}  // namespace

int main() {
  const std::string url = roulette::store_url();
  if (url.empty()) {
    std::fprintf(stderr, "roulette_async: FAIRLOCK_URL must be redis://host:port\n");
    return 2;
  }
  std::printf("%-36s %6s %6s %7s %5s %7s %8s %7s  %s\n", "scenario (one process)", "spins", "prizes", "winners", "left",
              "refused", "overtook", "threads", "ok");
  bool all = true;
  try {
    all = play(url, "10000 concurrent spins, 500 prizes", 10000, 500, 0) && all;
    all = play(url, "1000 concurrent spins, 1000 prizes", 1000, 1000, 1) && all;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "roulette_async: %s\n", e.what());
    return 1;
  }
  std::printf("%s\n", all ? "every guarantee held: served in arrival order, winners = min(spins, prizes), nobody won "
                            "twice, no fenced write refused, at most 4 threads"
                          : "A GUARANTEE FAILED");
  return all ? 0 : 1;
}
