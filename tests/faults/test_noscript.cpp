// NOSCRIPT never reaches a caller: while the server's functions and script
// cache are flushed over and over (bursts of FUNCTION FLUSH + SCRIPT FLUSH
// about 1 ms apart), several threads of two clients, one calling the
// scripts as functions and one by EVALSHA, keep locking and unlocking a
// few names. Every
// call must end as if nothing had happened: lock() always succeeds, no
// call throws (in particular no ServerError "NOSCRIPT ..."), no grant is
// reported lost, and no two holders of one name overlap.
//
// Deterministic: the flushing is bounded (a number of flushes, and a time
// cap in case the box is slow); nothing asserts on how long anything took.
// Each client is made to recover at least once by a last flush followed by
// one lock() each, so script_reloads > 0 does not depend on scheduling.
#include <fairlock/fairlock.h>
#include <gtest/gtest.h>
#include <hiredis/hiredis.h>

#include <array>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <typeinfo>
#include <vector>

#include "redis_server.h"
#include "test_util.h"

namespace fairlock::faults {
namespace {

using namespace std::chrono_literals;

// The storm: bursts of kBurst flushes about 1 ms apart, each followed by a
// kQuiet gap (so that a recovery that retries until its deadline has windows
// to get through even when every round trip is slow, as under TSan), up to
// kMaxFlushes flushes or kFlushFor, whichever comes first.
constexpr int kMaxFlushes = 1500;
constexpr int kBurst = 10;
constexpr auto kQuiet = std::chrono::milliseconds(10);
constexpr auto kFlushFor = std::chrono::seconds(3);
constexpr int kThreadsPerClient = 3;
constexpr int kNames = 3;

Options options_for(const test::RedisServer& s, bool use_functions) {
  Options o;
  o.url = s.url();
  o.use_functions = use_functions;
  return o;  // default (generous) timeouts and liveness: no timing here
}

// Both ways of running the scripts lose them: one flush of each.
bool flush_scripts(redisContext* rc) {
  bool ok = true;
  for (const char* command : {"FUNCTION FLUSH", "SCRIPT FLUSH"}) {
    auto* r = static_cast<redisReply*>(redisCommand(rc, command));
    ok = ok && r && r->type == REDIS_REPLY_STATUS;
    if (r) freeReplyObject(r);
  }
  return ok;
}

// Everything a worker saw that is not a plain success.
class Failures {
 public:
  void add(const std::string& what) {
    std::lock_guard<std::mutex> lk(mu_);
    ++count_;
    if (first_.size() < 10) first_.push_back(what);
    if (what.find("NOSCRIPT") != std::string::npos || what.find("Function not found") != std::string::npos) ++noscript_;
  }
  int count() const {
    std::lock_guard<std::mutex> lk(mu_);
    return count_;
  }
  int noscript() const {
    std::lock_guard<std::mutex> lk(mu_);
    return noscript_;
  }
  std::string summary() const {
    std::lock_guard<std::mutex> lk(mu_);
    std::string out;
    for (const auto& f : first_) out += "\n  " + f;
    return out;
  }

 private:
  mutable std::mutex mu_;
  int count_ = 0;
  int noscript_ = 0;
  std::vector<std::string> first_;
};

std::string describe(const char* call, const std::exception& e) {
  return std::string(call) + " threw " + typeid(e).name() + ": " + e.what();
}

TEST(NoScript, FlushedScriptCacheNeverReachesACaller) {
  test::RedisServer server;
  Client c1(options_for(server, true)), c2(options_for(server, false));
  std::array<Client*, 2> clients{&c1, &c2};
  std::array<std::string, kNames> names;
  for (int i = 0; i < kNames; ++i) names[i] = test::unique_name("noscript-" + std::to_string(i));

  Failures failures;
  std::atomic<bool> stop{false};
  std::atomic<long> lock_calls{0}, lock_ok{0}, timed_calls{0}, timed_ok{0}, try_calls{0}, try_ok{0};
  std::atomic<long> lost_callbacks{0}, overlaps{0};
  std::array<std::atomic<int>, kNames> inside{};

  LockOptions lo;
  lo.on_lost = [&] { ++lost_callbacks; };

  // One grant held: checks exclusion, then releases it, which must find
  // the grant and give it up (a release that failed, e.g. on NOSCRIPT,
  // says Released::failed and logs the error).
  auto hold_and_unlock = [&](FairLock& l, int n, const char* how) {
    if (++inside[n] != 1) ++overlaps;
    --inside[n];
    const Released r = l.release();
    if (r != Released::released) {
      failures.add(std::string(how) + ": release() said " +
                   (r == Released::lost     ? "lost"
                    : r == Released::failed ? "failed"
                                            : "not held"));
    }
  };

  // One attempt to take a lock: counts it, records an exception, and holds
  // and releases what it got. `attempt` returns whether it got the lock.
  auto take = [&](FairLock& l, int n, const char* how, std::atomic<long>& calls, std::atomic<long>& ok,
                  const std::function<bool()>& attempt) {
    ++calls;
    try {
      if (!attempt()) return;
    } catch (const std::exception& e) {
      failures.add(describe(how, e));
      return;
    }
    ++ok;
    hold_and_unlock(l, n, how);
  };

  auto worker = [&](Client& client, int t) {
    for (long i = 0; !stop.load(); ++i) {
      const int n = static_cast<int>((t + i) % kNames);
      FairLock l(client, names[n], lo);
      if (i % 3 == 0) {
        take(l, n, "lock()", lock_calls, lock_ok, [&] {
          l.lock();
          return true;
        });
      } else if (i % 3 == 1) {  // false only at its deadline: allowed, not expected
        take(l, n, "try_lock_for()", timed_calls, timed_ok, [&] { return l.try_lock_for(30s); });
      } else {  // false when busy: allowed
        take(l, n, "try_lock()", try_calls, try_ok, [&] { return l.try_lock(); });
      }
    }
  };

  std::vector<std::thread> threads;
  for (int c = 0; c < 2; ++c) {
    for (int t = 0; t < kThreadsPerClient; ++t) threads.emplace_back(worker, std::ref(*clients[c]), t);
  }

  // The flusher: its own connection, the storm described at the top.
  int flushes = 0;
  {
    redisContext* rc = redisConnect("127.0.0.1", server.port());
    EXPECT_TRUE(rc && !rc->err) << "flusher cannot connect";  // not ASSERT: the workers must be joined
    const auto until = std::chrono::steady_clock::now() + kFlushFor;
    while (rc && !rc->err && flushes < kMaxFlushes && std::chrono::steady_clock::now() < until) {
      if (!flush_scripts(rc)) break;
      ++flushes;
      std::this_thread::sleep_for(flushes % kBurst ? 1ms : kQuiet);
    }
    if (rc) redisFree(rc);
  }
  stop = true;
  for (auto& t : threads) t.join();

  // Each client recovers at least once, whatever the scheduling was, and
  // each still runs the scripts its own way: c1 as functions (it did not
  // fall back to EVALSHA for good under the storm), c2 by EVALSHA.
  EXPECT_EQ(server.cmd({"FUNCTION", "FLUSH"}), "OK");
  EXPECT_EQ(server.cmd({"SCRIPT", "FLUSH"}), "OK");
  for (Client* c : clients) {
    const long long fcalls = test::command_calls(server, "fcall"), evalshas = test::command_calls(server, "evalsha");
    FairLock l(*c, names[0], lo);
    take(l, 0, "lock() after the last flush", lock_calls, lock_ok, [&] {
      l.lock();
      return true;
    });
    const bool functions = c == &c1;
    EXPECT_GT(test::command_calls(server, functions ? "fcall" : "evalsha"), functions ? fcalls : evalshas)
        << (functions ? "the functions client ran no FCALL" : "the EVALSHA client ran no EVALSHA");
  }

  std::cout << "[figures] " << flushes << " FUNCTION FLUSH + SCRIPT FLUSH; lock() " << lock_ok << "/" << lock_calls
            << ", try_lock_for() " << timed_ok << "/" << timed_calls << ", try_lock() " << try_ok << "/" << try_calls
            << "; script_reloads " << c1.stats().script_reloads << " + " << c2.stats().script_reloads << "\n";
  EXPECT_GT(flushes, 0);
  EXPECT_EQ(failures.count(), 0) << failures.noscript() << " of them NOSCRIPT; the first:" << failures.summary();
  EXPECT_EQ(failures.noscript(), 0);
  EXPECT_EQ(lock_ok.load(), lock_calls.load()) << "a lock() did not succeed";
  EXPECT_GT(lock_calls.load(), 2);
  EXPECT_EQ(lost_callbacks.load(), 0) << "a grant was reported lost";
  EXPECT_EQ(overlaps.load(), 0) << "two holders of one name at once";
  for (Client* c : clients) {
    EXPECT_GT(c->stats().script_reloads, 0u);
    EXPECT_EQ(c->stats().lost, 0u);
  }
}

}  // namespace
}  // namespace fairlock::faults
