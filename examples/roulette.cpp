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
#include <hiredis/hiredis.h>
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

namespace {

// The fenced write: applies a spin's outcome only if its fence is newer than
// every fence already seen. Returns 1 applied, -1 refused (stale grant).
const char* kFencedWrite = R"(
local last = tonumber(redis.call('GET', KEYS[3]) or '0')
if tonumber(ARGV[1]) <= last then return -1 end
redis.call('SET', KEYS[3], ARGV[1])
redis.call('SET', KEYS[1], ARGV[2])
if ARGV[3] ~= '' then redis.call('SADD', KEYS[2], ARGV[3]) end
return 1)";

struct Redis {  // a plain connection to the protected store
  redisContext* c;
  explicit Redis(const std::string& url) {
    auto colon = url.rfind(':');
    c = redisConnect(url.substr(8, colon - 8).c_str(), std::atoi(url.c_str() + colon + 1));
    if (!c || c->err) {
      if (c) redisFree(c);
      throw std::runtime_error("cannot connect to " + url);
    }
  }
  Redis(const Redis&) = delete;
  Redis& operator=(const Redis&) = delete;
  ~Redis() { redisFree(c); }
  long long integer(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    auto* r = static_cast<redisReply*>(redisvCommand(c, fmt, ap));
    va_end(ap);
    if (!r) throw std::runtime_error("redis command failed");
    long long v = r->type == REDIS_REPLY_INTEGER ? r->integer : r->type == REDIS_REPLY_STRING ? std::atoll(r->str) : 0;
    freeReplyObject(r);
    return v;
  }
};

struct Scenario {
  const char* title;
  int processes, threads, players, spins_per_player, prizes;
};

// One spin: read, decide, fenced write. Returns +1 won, 0 lost, -1 refused.
int spin(Redis& store, const std::string& game, const std::string& player, std::uint64_t fence) {
  long long left = store.integer("GET %s:prizes", game.c_str());
  bool already = store.integer("SISMEMBER %s:winners %s", game.c_str(), player.c_str()) == 1;
  bool wins = left > 0 && !already;  // the wheel always pays while stock lasts
  std::string fence_s = std::to_string(fence), left_s = std::to_string(wins ? left - 1 : left);
  std::string prizes = game + ":prizes", winners = game + ":winners", fences = game + ":fence";
  long long applied = store.integer("EVAL %s 3 %s %s %s %s %s %s", kFencedWrite, prizes.c_str(), winners.c_str(),
                                    fences.c_str(), fence_s.c_str(), left_s.c_str(), wins ? player.c_str() : "");
  if (applied != 1) return -1;
  return wins ? 1 : 0;
}

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
  const char* env = std::getenv("FAIRLOCK_URL");
  std::string url = env ? env : "redis://127.0.0.1:6379";
  if (url.rfind("redis://", 0) != 0 || url.find('@') != std::string::npos) {
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
