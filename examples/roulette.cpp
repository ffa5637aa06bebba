// The promotion roulette: many players spin at once for a limited prize pool.
//
// Every spin runs under one fair lock, so players are served in arrival
// order. The spin itself is a plain read-decide-write on Redis (read the
// prize count and whether the player already won, decide, write back), which
// is exactly what needs a lock. The write is *fenced*: it carries the grant's
// fencing token and the store refuses it if a newer grant has written since,
// so even a holder that lost its lease (a long pause) cannot issue a prize twice.
//
//   fairlock_roulette            runs the guarantee table below and checks it
// FAIRLOCK_URL selects the server (default redis://127.0.0.1:6379).
#include <fairlock/fairlock.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "roulette_store.h"

namespace {

using roulette::Redis;
using roulette::spin;

struct Scenario {
  const char* title;
  int processes, threads, players, spins_per_player, prizes;
};

// Runs one scenario's players in `processes` processes of `threads` threads.
// Each process reports refused writes through its exit status.
bool play(const std::string& url, const Scenario& s, int index) {
  const std::string game = "roulette:" + std::to_string(getpid()) + ":" + std::to_string(index);
  {
    Redis store(url);
    store.integer("DEL %s:prizes %s:winners %s:fence", game.c_str(), game.c_str(), game.c_str());
    store.integer("SET %s:prizes %d", game.c_str(), s.prizes);
  }
  std::vector<pid_t> kids;
  for (int p = 0; p < s.processes; ++p) {
    pid_t pid = fork();
    if (pid == 0) {
      int refused = 0;
      try {
        fairlock::Options opts;
        opts.url = url;
        fairlock::Client client(opts);
        std::mutex mu;
        std::vector<std::thread> threads;
        for (int t = 0; t < s.threads; ++t) {
          threads.emplace_back([&, t] {
            Redis store(url);
            fairlock::FairLock wheel(client, game);  // one participant per thread
            // Players are dealt round-robin over all threads of all processes.
            for (int pl = p * s.threads + t; pl < s.players; pl += s.processes * s.threads) {
              for (int k = 0; k < s.spins_per_player; ++k) {
                std::lock_guard<fairlock::FairLock> turn(wheel);
                if (spin(store, game, "player-" + std::to_string(pl), wheel.fence()) < 0) {
                  std::lock_guard<std::mutex> lk(mu);
                  ++refused;
                }
              }
            }
          });
        }
        for (auto& th : threads) th.join();
      } catch (const std::exception& e) {
        std::fprintf(stderr, "roulette: %s\n", e.what());
        _exit(100);
      }
      _exit(refused > 99 ? 99 : refused);
    }
    kids.push_back(pid);
  }
  int refused = 0;
  bool crashed = false;
  for (pid_t k : kids) {
    int st = 0;
    waitpid(k, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) == 100) crashed = true;
    if (WIFEXITED(st) && WEXITSTATUS(st) < 100) refused += WEXITSTATUS(st);
  }
  Redis store(url);
  long long winners = store.integer("SCARD %s:winners", game.c_str());
  long long left = store.integer("GET %s:prizes", game.c_str());
  long long expected = std::min(s.players, s.prizes);
  bool ok = !crashed && refused == 0 && left >= 0 && winners == expected && left == s.prizes - winners;
  std::printf("%-44s %7d %6d %6d %7lld %5lld %7d  %s\n", s.title, s.players, s.players * s.spins_per_player, s.prizes,
              winners, left, refused, ok ? "yes" : "NO");
  store.integer("DEL %s:prizes %s:winners %s:fence", game.c_str(), game.c_str(), game.c_str());
  return ok;
}

}  // namespace

int main() {
  const std::string url = roulette::store_url();
  if (url.empty()) {
    std::fprintf(stderr, "roulette: FAIRLOCK_URL must be redis://host:port\n");
    return 2;
  }
  const Scenario table[] = {
      {"200 players, 4 procs x 8 threads, 50 prizes", 4, 8, 200, 1, 50},
      {"100 players for 50 prizes", 2, 8, 100, 1, 50},
      {"1 player spinning 10 times (5 prizes)", 1, 1, 1, 10, 5},
      {"1000 players for 1000 prizes", 4, 8, 1000, 1, 1000},
  };
  std::printf("%-44s %7s %6s %6s %7s %5s %7s  %s\n", "scenario", "players", "spins", "prizes", "winners", "left",
              "refused", "ok");
  bool all = true;
  try {
    for (int i = 0; i < 4; ++i) all = play(url, table[i], i) && all;
  } catch (const std::exception& e) {  // the store is unreachable or failed a command
    std::fprintf(stderr, "roulette: %s\n", e.what());
    return 1;
  }
  std::printf("%s\n", all ? "every guarantee held: winners = min(players, prizes), nobody won twice, "
                            "no prize count below zero, no fenced write refused"
                          : "A GUARANTEE FAILED");
  return all ? 0 : 1;
}
