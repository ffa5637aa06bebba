// An operator's evict (Client::evict, `fairlock evict`): an evicted waiter's
// wait ends with EvictedError, promptly (at its next heartbeat: a third of
// a liveness period), for lock(), try_lock_for() and lock_async() alike, and
// it never queues again by itself; a waiter whose process stalled past its
// liveness still queues again when it comes back; an evicted holder is told
// as a lost grant is (on_lost once, release() says lost). (Memory eviction
// by Redis's maxmemory-policy is test_eviction_policy.cpp's.)
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <functional>
#include <future>
#include <string>
#include <thread>

#include "child.h"
#include "test_util.h"

namespace fairlock::test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// A heartbeat round every 666 ms: an evicted waiter learns it within about
// that, and the tests allow the whole liveness period (3 x) as the bound.
constexpr auto kLiveness = 2000ms;

Options waiter_opts() {
  Options o = opts_for(server());
  o.liveness_ttl = kLiveness;
  return o;
}

std::string queue_of(const std::string& name) { return server().cmd({"ZRANGE", key(name, "q"), "0", "-1"}); }

// The one waiter of `name`, once it is queued.
std::string the_waiter(Client& operator_client, const std::string& name) {
  EXPECT_TRUE(eventually([&] { return zcard(server(), name, "q") == 1; }));
  const QueueState st = operator_client.inspect(name);
  EXPECT_EQ(st.waiters.size(), 1u);
  return st.waiters.empty() ? "" : st.waiters[0].token;
}

// Over two liveness periods, the member never shows up in the queue again.
void expect_never_queued_again(const std::string& name, const std::string& member) {
  const auto end = Clock::now() + 2 * kLiveness;
  while (Clock::now() < end) {
    const std::string q = queue_of(name);
    ASSERT_EQ(q.find(member), std::string::npos) << "queued again: " << q;
    std::this_thread::sleep_for(50ms);
  }
}

// Evicts the waiter, then runs `ended` (which waits until the wait ended,
// true if it ended with EvictedError): that must happen within one liveness
// period of the eviction.
void evict_and_expect_prompt_end(Client& operator_client, const std::string& name, const std::function<bool()>& ended) {
  const std::string member = the_waiter(operator_client, name);
  ASSERT_FALSE(member.empty());
  const auto evicted_at = Clock::now();
  ASSERT_EQ(operator_client.evict(name, member), Evicted::waiter);
  EXPECT_TRUE(ended()) << "the wait did not end with EvictedError";
  const auto took = since(evicted_at);
  std::printf("[figures] evicted waiter told after %lld ms (bound %lld ms)\n", static_cast<long long>(took.count()),
              static_cast<long long>(kLiveness.count()));
  EXPECT_LT(took, kLiveness);
  expect_never_queued_again(name, member);
}

// How a blocking wait ended: "evicted", "granted", "timed out" or another error's text.
std::string blocking_outcome(const std::function<bool()>& wait) {
  try {
    return wait() ? "granted" : "timed out";
  } catch (const EvictedError&) {
    return "evicted";
  } catch (const std::exception& e) {
    return e.what();
  }
}

void blocking_wait_is_evicted(const std::function<bool(FairLock&)>& wait) {
  const std::string name = unique_name("evicted-blocking");
  Client holder_client(opts_for(server())), waiter_client(waiter_opts()), operator_client(opts_for(server()));
  FairLock holder(holder_client, name), waiter(waiter_client, name);
  holder.lock();
  auto outcome = std::async(std::launch::async, [&] { return blocking_outcome([&] { return wait(waiter); }); });
  evict_and_expect_prompt_end(operator_client, name, [&] {
    if (outcome.wait_for(2 * kLiveness) != std::future_status::ready) return false;
    const std::string how = outcome.get();
    EXPECT_EQ(how, "evicted");
    return how == "evicted";
  });
  EXPECT_FALSE(waiter.owns_lock());
  holder.unlock();
  // The object waits again, anew, and is granted.
  EXPECT_TRUE(waiter.try_lock_for(10s));
  waiter.unlock();
}

TEST(Evicted, ABlockingLockEndsWithEvictedError) {
  blocking_wait_is_evicted([](FairLock& l) {
    l.lock();
    return true;
  });
}

TEST(Evicted, ATryLockForEndsWithEvictedError) {
  blocking_wait_is_evicted([](FairLock& l) { return l.try_lock_for(60s); });
}

TEST(Evicted, AnAsynchronousWaitGetsEvictedErrorOnce) {
  const std::string name = unique_name("evicted-async");
  Client holder_client(opts_for(server())), waiter_client(waiter_opts()), operator_client(opts_for(server()));
  FairLock holder(holder_client, name), waiter(waiter_client, name);
  holder.lock();
  std::atomic<int> calls{0}, evicted{0};
  std::promise<void> called;
  waiter.lock_async([&](const AcquireResult& r) {
    try {
      r.rethrow();
    } catch (const EvictedError&) {
      ++evicted;
    } catch (...) {
    }
    if (++calls == 1) called.set_value();
  });
  auto done = called.get_future();
  evict_and_expect_prompt_end(operator_client, name, [&] {
    return done.wait_for(2 * kLiveness) == std::future_status::ready && evicted.load() == 1;
  });
  EXPECT_EQ(calls.load(), 1) << "the callback ran " << calls.load() << " times";
  holder.unlock();
}

// Not evicted: a waiter's process stalls (SIGSTOP) past its liveness, so its
// entry counts as dead; when it comes back it learns its entry is gone and
// queues again, at the tail, and is granted in turn.
TEST(Evicted, AWaiterPrunedForLivenessQueuesAgain) {
  const std::string name = unique_name("pruned-requeues");
  Client holder_client(opts_for(server()));
  FairLock holder(holder_client, name);
  holder.lock();
  Child stalled({server().url(), "wait", name, "1000"});  // liveness 1 s
  ASSERT_TRUE(eventually([&] { return zcard(server(), name, "q") == 1; }));
  const std::string before = server().cmd({"ZRANGE", key(name, "q"), "0", "-1", "WITHSCORES"});
  stalled.kill(SIGSTOP);
  std::this_thread::sleep_for(2500ms);  // its liveness (1 s) runs out
  stalled.kill(SIGCONT);
  // It finds its entry gone and queues again, with a new ticket.
  ASSERT_TRUE(eventually([&] {
    const std::string now = server().cmd({"ZRANGE", key(name, "q"), "0", "-1", "WITHSCORES"});
    return zcard(server(), name, "q") == 1 && now != before;
  })) << "not queued again";
  holder.unlock();
  EXPECT_EQ(stalled.line().rfind("granted ", 0), 0u);
  EXPECT_EQ(stalled.wait(), 0);
}

// An evicted holder is told as for any lost grant: on_lost once (at its next
// heartbeat: well within a liveness period), owns_lock() false, and
// release() says lost.
TEST(Evicted, AnEvictedHolderIsToldItsGrantIsLost) {
  const std::string name = unique_name("evicted-holder");
  Client holder_client(waiter_opts()), operator_client(opts_for(server()));
  std::atomic<int> lost{0};
  LockOptions lo;
  lo.on_lost = [&] { ++lost; };
  FairLock holder(holder_client, name, lo);
  holder.lock();
  const QueueState st = operator_client.inspect(name);
  ASSERT_EQ(st.holders.size(), 1u);
  const auto evicted_at = Clock::now();
  ASSERT_EQ(operator_client.evict(name, st.holders[0].token), Evicted::holder);
  ASSERT_TRUE(eventually([&] { return lost.load() > 0; }, 2 * kLiveness)) << "on_lost never ran";
  std::printf("[figures] evicted holder told after %lld ms\n", static_cast<long long>(since(evicted_at).count()));
  EXPECT_LT(since(evicted_at), kLiveness);
  EXPECT_FALSE(holder.owns_lock());
  std::this_thread::sleep_for(kLiveness);  // more rounds: no second report
  EXPECT_EQ(lost.load(), 1);
  EXPECT_EQ(holder.release(), Released::lost);
}

}  // namespace
}  // namespace fairlock::test
