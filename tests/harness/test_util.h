#pragma once
#include <fairlock/fairlock.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "redis_server.h"

namespace fairlock::test {

inline Options opts_for(const RedisServer& s, Notify notify = Notify::publish) {
  Options o;
  o.url = s.url();
  o.notify = notify;
  o.liveness_ttl = std::chrono::milliseconds(900);
  return o;
}

// For tests that count how a waiter was woken, or look between two
// heartbeat rounds: rounds (which can also grant, or end an evicted
// waiter) and a waiter's timer re-asks come seconds apart, not 300 ms, so
// neither steps in however slowly a test runs (the period is a third of the
// shortest lease: 3.3 s with the default 10 s).
inline Options opts_with_slow_heartbeat(const RedisServer& s, Notify notify = Notify::publish) {
  Options o = opts_for(s, notify);
  o.liveness_ttl = std::chrono::seconds(30);
  return o;
}

// A holder's grant that lives 60 s unless released (lease and liveness:
// heartbeat rounds 20 s apart), so that a test sees what ends it sooner.
inline Options long_lived(Options o) {
  o.liveness_ttl = std::chrono::seconds(60);
  return o;
}
inline LockOptions long_lease() {
  LockOptions l;
  l.lease = std::chrono::seconds(60);
  return l;
}

// The most holders inside `name` at once while 4 threads, each with a
// client of its own (`options`), take a semaphore of `permits` 10 times
// each, holding 1 ms: a semaphore must show exactly `permits`.
inline int most_inside_a_semaphore(const Options& options, const std::string& name, std::uint32_t permits) {
  std::atomic<int> inside{0}, most{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      Client c(options);
      FairSemaphore s(c, name, permits);
      for (int i = 0; i < 10; ++i) {
        s.lock();
        const int now = ++inside;
        int seen = most.load();
        while (now > seen && !most.compare_exchange_weak(seen, now)) {
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        --inside;
        s.unlock();
      }
    });
  }
  for (auto& t : threads) t.join();
  return most.load();
}

// An integer from the environment (a measurement's size), or `fallback`.
inline long env_or(const char* name, long fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atol(v) : fallback;
}

// "p50 X ms, max Y ms" of durations in ms (sorts them).
inline std::string p50_max(std::vector<long long> ms) {
  if (ms.empty()) return "none";
  std::sort(ms.begin(), ms.end());
  return "p50 " + std::to_string(ms[ms.size() / 2]) + " ms, max " + std::to_string(ms.back()) + " ms";
}

// Polls a condition (test-side only) for at most `limit`; true if it held.
inline bool eventually(const std::function<bool()>& pred,
                       std::chrono::milliseconds limit = std::chrono::milliseconds(15000)) {
  auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return pred();
}

// Milliseconds since `t` (steady clock).
inline std::chrono::milliseconds since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t);
}

inline std::string key(const std::string& name, const std::string& suffix, const std::string& prefix = "fairlock") {
  return prefix + ":{" + name + "}:" + suffix;
}

// Deletes every grant of `name` behind the holders' backs: h and g, and the
// holder kept inline in o.
inline void forget_holders(const RedisServer& s, const std::string& name) {
  s.cmd({"DEL", key(name, "h"), key(name, "g"), key(name, "o")});
}

inline long long zcard(const RedisServer& s, const std::string& name, const char* which) {
  return std::stoll(s.cmd({"ZCARD", key(name, which)}));
}

// How many EVALSHA calls the server has run (INFO commandstats).
inline long long command_calls(const RedisServer& s, const std::string& command) {
  std::string info = s.cmd({"INFO", "commandstats"});
  auto at = info.find("cmdstat_" + command + ":calls=");
  if (at == std::string::npos) return 0;
  return std::stoll(info.substr(at + command.size() + 15));
}

// Script calls the server ran, whichever way (FCALL or EVALSHA).
inline long long script_calls(const RedisServer& s) { return command_calls(s, "fcall") + command_calls(s, "evalsha"); }

// What a waiter did, read from a server's slow log (set here to log every
// command from now on): a test learns from it what no timing can tell it.
// A wait on a name with per-name signals (keyspace, a cluster's shard
// channels) asks; once queued, subscribes to the name's channel; then asks
// once more and sleeps: a release before that last ask is found by the ask,
// not signalled.
class CommandLog {
 public:
  explicit CommandLog(const RedisServer& s) : s_(s) {
    s_.cmd({"CONFIG", "SET", "slowlog-log-slower-than", "0", "slowlog-max-len", "100000"});
    s_.cmd({"SLOWLOG", "RESET"});
  }
  CommandLog(const CommandLog&) = delete;
  CommandLog& operator=(const CommandLog&) = delete;
  ~CommandLog() {
    try {
      s_.cmd({"CONFIG", "SET", "slowlog-log-slower-than", "10000", "slowlog-max-len", "128"});  // the defaults
    } catch (const std::exception&) {  // the server is gone: nothing to restore
    }
  }

  // An acquire (FCALL) ran after the SUBSCRIBE or SSUBSCRIBE of `channel`:
  // the waiter that subscribed has asked since, and sleeps on signals.
  bool asked_after_subscribing(const std::string& channel) const {
    bool subscribed = false;
    for (const auto& argv : slow_log(s_)) {
      if (argv.size() < 2) continue;
      const std::string command = lower(argv[0]);
      if (command == "subscribe" || command == "ssubscribe") {
        subscribed = subscribed || std::find(argv.begin() + 1, argv.end(), channel) != argv.end();
      } else if (subscribed && command == "fcall" && ends_with(argv[1], "_acquire")) {
        return true;
      }
    }
    return false;
  }

 private:
  static std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
  }
  static bool ends_with(const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
  }

  const RedisServer& s_;
};

// The keys of one name that exist now, sorted, newline-joined.
inline std::string keys_of(const RedisServer& s, const std::string& name, const std::string& prefix = "fairlock") {
  std::string all = s.cmd({"KEYS", prefix + ":{" + name + "}:*"});
  return all;
}

}  // namespace fairlock::test
