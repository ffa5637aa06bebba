// Issue 31, asynchronous waits: one wait per object for real, deadlines
// kept whatever the server does, teardown from any callback. Each test
// reproduces one defect of the issue against a real server.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <functional>
#include <future>
#include <iostream>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "outcomes.h"
#include "test_util.h"

namespace fairlock::test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// One round of ACancelledWaitNeverTouchesTheNextAsyncWaitOfItsObject: the
// objects outlive the round, so a callback that comes late is still counted.
struct AsyncRound {
  std::string name;
  std::unique_ptr<FairLock> holder, lock;
  std::thread a;
  int a_outcome = 0;  // A's lock(): 1 granted, 2 Cancelled, 3 another error
  std::uint64_t a_fence = 0;
  int refusals = 0;           // lock_async threw std::logic_error: the first wait had not left
  bool refused_idle = false;  // ... even after A's lock() had returned
  bool threw = false;         // lock_async threw anything else
  std::atomic<bool> a_done{false};
  Outcomes c;  // what C's callback reported
};

// Thread A blocks in lock(); cancel() makes it leave; as soon as cancel()
// has returned, lock_async(1.5 s) is called on the same object, and the
// holder unlocks.
void cancel_then_wait_async(AsyncRound& r, Client& client, Client& others) {
  r.name = unique_name("cancel-next-async");
  r.holder = std::make_unique<FairLock>(others, r.name);
  r.lock = std::make_unique<FairLock>(client, r.name);
  r.holder->lock();
  r.a = std::thread([&r] {
    try {
      r.lock->lock();
      r.a_fence = r.lock->fence();
      r.a_outcome = 1;
    } catch (const Cancelled&) {
      r.a_outcome = 2;
    } catch (...) {
      r.a_outcome = 3;
    }
    r.a_done = true;
  });
  EXPECT_TRUE(eventually([&] { return zcard(server(), r.name, "q") == 1; }));
  r.lock->cancel();
  std::thread c([&r] {
    // Waits again as soon as the object takes it: a refusal (the first wait
    // has not fully left) is retried at once, until the first wait has ended.
    for (;;) {
      const bool a_ended = r.a_done.load();
      try {
        r.lock->lock_async(1500ms, [&r](const AcquireResult& res) { r.c.record(0, res); });
        return;
      } catch (const std::logic_error&) {
        ++r.refusals;
        if (a_ended) return void(r.refused_idle = true);
      } catch (const std::exception&) {
        return void(r.threw = true);
      }
    }
  });
  r.holder->unlock();
  r.a.join();
  c.join();
  r.c.wait_total(1, r.refused_idle || r.threw ? 0s : 5s);
}

// Defect 2, asynchronous. Over 100 rounds: the later wait is refused
// (std::logic_error) until the first has left, then runs as its own wait:
// its callback runs exactly once, never with Cancelled from the cancel that
// came before it, and one grant is never reported to both waits.
TEST(SafetyAsync, ACancelledWaitNeverTouchesTheNextAsyncWaitOfItsObject) {
  Client client(opts_for(server())), others(opts_for(server()));
  std::vector<std::unique_ptr<AsyncRound>> rounds;
  for (int i = 0; i < 100; ++i) {
    rounds.push_back(std::make_unique<AsyncRound>());
    cancel_then_wait_async(*rounds.back(), client, others);
    if (rounds.back()->lock->owns_lock()) rounds.back()->lock->unlock();
  }
  std::this_thread::sleep_for(500ms);  // a second callback would come now
  int spurious_cancel = 0, never = 0, more_than_once = 0, twice = 0, refused_idle = 0, refusals = 0, threw = 0;
  for (auto& r : rounds) {
    std::lock_guard<std::mutex> lk(r->c.mu);
    refusals += r->refusals;
    threw += r->threw;
    if (r->threw) continue;
    if (r->refused_idle) {
      refused_idle += r->a_outcome != 1;  // A's grant is held: a refusal is right
      continue;
    }
    spurious_cancel += r->c.cancelled;
    never += r->c.total() == 0;
    more_than_once += r->c.total() > 1;
    twice += r->a_outcome == 1 && !r->c.fences.empty() && r->c.fences[0] == r->a_fence;
  }
  EXPECT_EQ(spurious_cancel, 0) << "the later wait was reported Cancelled in " << spurious_cancel << " of 100 rounds";
  EXPECT_EQ(never, 0) << "its callback never ran in " << never << " of 100 rounds";
  EXPECT_EQ(more_than_once, 0) << "its callback ran more than once in " << more_than_once << " of 100 rounds";
  EXPECT_EQ(twice, 0) << "one grant reported to both waits in " << twice << " of 100 rounds";
  EXPECT_EQ(threw, 0) << "lock_async threw another error in " << threw << " of 100 rounds";
  EXPECT_EQ(refused_idle, 0) << "refused after the first wait had returned in " << refused_idle << " of 100 rounds";
  std::cout << "[figures] " << refusals << " refusals of the later lock_async in 100 rounds" << std::endl;
}

// Defect 6b: 1,000 asynchronous waits of 1.5 s queue, then the server is
// stopped until all have ended: every callback is a TimeoutError, each at its
// own deadline (within 1 s), not after give-ups queued behind one another's
// command timeouts.
TEST(SafetyAsync, ThousandAsyncDeadlinesAreKeptWithTheServerStopped) {
  RedisServer own;
  Client holders(opts_for(own)), waiters(opts_for(own));
  const std::string name = unique_name("async-deadlines-stopped");
  LockOptions long_lease;
  long_lease.lease = 60s;
  FairLock holder(holders, name, long_lease);
  holder.lock();
  const int kWaits = static_cast<int>(env_or("FAIRLOCK_ASYNC_WAITS", 1000));  // 10000 to measure
  Outcomes out;  // outlives the locks: a callback may run as they go
  std::vector<Clock::time_point> called(kWaits);
  std::vector<milliseconds> took(kWaits, milliseconds(-1));
  std::vector<std::unique_ptr<FairLock>> locks;
  for (int i = 0; i < kWaits; ++i) locks.push_back(std::make_unique<FairLock>(waiters, name));
  for (int i = 0; i < kWaits; ++i) {
    called[i] = Clock::now();
    locks[i]->lock_async(1500ms, [&, i](const AcquireResult& r) {
      took[i] = since(called[i]);  // before record: the test reads it once all are recorded
      out.record(i, r);
    });
  }
  // Queued (those the deadline overtakes on a slow machine end normally).
  EXPECT_TRUE(eventually([&] { return zcard(own, name, "q") == kWaits || out.wait_total(1, 0s); }));
  own.pause();
  const bool all = out.wait_total(kWaits, 20s);
  own.resume();
  ASSERT_TRUE(all || out.wait_total(kWaits, 60s));
  std::lock_guard<std::mutex> lk(out.mu);
  EXPECT_EQ(out.timed_out, kWaits) << out.granted.size() << " granted, " << out.cancelled << " cancelled, " << out.other
                                   << " other errors";
  const auto [fastest, slowest] = std::minmax_element(took.begin(), took.end());
  EXPECT_GE(fastest->count(), 1500);
  EXPECT_LE(slowest->count(), 1500 + 1000)
      << "a callback of lock_async(1.5 s) came after " << slowest->count() << " ms";
  std::vector<long long> overshoot;
  for (const milliseconds t : took) overshoot.push_back(t.count() - 1500);
  std::cout << "[figures] " << kWaits << " x lock_async(1.5 s), server stopped: overshoot " << p50_max(overshoot)
            << "\n";
}

// A timed async wait cancelled while the server is stopped: its Cancelled
// callback comes by its deadline (+ margin), not when the server answers
// the leave (command_timeout 5 s here, so the two cannot be confused).
TEST(SafetyAsync, ACancelledTimedWaitEndsByItsDeadlineWithTheServerStopped) {
  RedisServer own;
  Options slow = opts_for(own);
  slow.command_timeout = 5s;
  Client holders(opts_for(own)), waiters(slow);
  const std::string name = unique_name("cancelled-stopped");
  LockOptions long_lease;
  long_lease.lease = 60s;
  FairLock holder(holders, name, long_lease), waiter(waiters, name);
  holder.lock();
  Outcomes out;  // outlives the lock
  const auto called = Clock::now();
  AcquireHandle handle = waiter.lock_async(1500ms, [&](const AcquireResult& r) { out.record(0, r); });
  ASSERT_TRUE(eventually([&] { return zcard(own, name, "q") == 1; }));
  own.pause();
  handle.cancel();
  const bool ended = out.wait_total(1, 10s);
  const milliseconds took = since(called);
  own.resume();
  ASSERT_TRUE(ended || out.wait_total(1, 30s));
  std::lock_guard<std::mutex> lk(out.mu);
  EXPECT_EQ(out.cancelled, 1);
  EXPECT_LE(took.count(), 1500 + 1000) << "the Cancelled callback came " << took.count() << " ms after the call";
}

// A timed async wait that begins while the async thread is blocked in a
// round of calls to a stopped server (an untimed wait's first acquire;
// command_timeout 5 s) keeps its own deadline: the round is cut there, not
// at the bound it began with. The untimed wait is not lost: its acquire is
// asked again and granted once the server is back.
TEST(SafetyAsync, AnAsyncWaitBegunDuringAStalledRoundKeepsItsDeadline) {
  RedisServer own;
  Options slow = opts_for(own);
  slow.command_timeout = 5s;
  Client waiters(slow);
  FairLock untimed(waiters, unique_name("stalled-round")), timed(waiters, unique_name("begun-during"));
  Outcomes first, second;  // outlive the locks
  own.pause();
  untimed.lock_async([&](const AcquireResult& r) { first.record(0, r); });
  std::this_thread::sleep_for(200ms);  // the round is blocked (else this wait bounds it from its start)
  const auto called = Clock::now();
  timed.lock_async(300ms, [&](const AcquireResult& r) { second.record(0, r); });
  const bool ended = second.wait_total(1, 10s);
  const milliseconds took = since(called);
  own.resume();
  ASSERT_TRUE(ended || second.wait_total(1, 30s));
  {
    std::lock_guard<std::mutex> lk(second.mu);
    EXPECT_EQ(second.timed_out, 1) << second.granted.size() << " granted, " << second.other << " other errors ("
                                   << second.last_other << ")";
  }
  EXPECT_LE(took.count(), 300 + 1000) << "lock_async(300 ms)'s callback came after " << took.count() << " ms";
  std::cout << "[figures] lock_async(300 ms) begun during a stalled round called back after " << took.count()
            << " ms\n";
  ASSERT_TRUE(first.wait_total(1, 30s));
  std::lock_guard<std::mutex> lk(first.mu);
  EXPECT_EQ(first.granted.size(), 1U) << first.other << " other errors";
}

// An untimed async wait cancelled while its first acquire is blocked on a
// stopped server: the Cancelled callback comes soon (the call gets 100 ms,
// the leave 100 ms more), not when the server answers or command_timeout
// (5 s) passes.
TEST(SafetyAsync, ACancelledUntimedWaitEndsSoonWithTheServerStopped) {
  RedisServer own;
  Options slow = opts_for(own);
  slow.command_timeout = 5s;
  Client waiters(slow);
  FairLock waiter(waiters, unique_name("cancel-untimed-stopped"));
  Outcomes out;  // outlives the lock
  own.pause();
  AcquireHandle handle = waiter.lock_async([&](const AcquireResult& r) { out.record(0, r); });
  std::this_thread::sleep_for(200ms);  // its acquire is blocked on the server
  const auto t0 = Clock::now();
  handle.cancel();
  const bool ended = out.wait_total(1, 10s);
  const milliseconds took = since(t0);
  own.resume();
  ASSERT_TRUE(ended || out.wait_total(1, 30s));
  std::lock_guard<std::mutex> lk(out.mu);
  EXPECT_EQ(out.cancelled, 1);
  EXPECT_LE(took.count(), 1000) << "the Cancelled callback came " << took.count() << " ms after cancel()";
  std::cout << "[figures] the Cancelled callback came " << took.count() << " ms after cancel()\n";
}

// A cancel bounds the rounds that carry its leave, never the waits of
// others: on a healthy server, with the async thread busy 400 ms in a user
// callback (no executor) while one wait is cancelled and a try begins, the
// try is granted (it once failed unsent: the round's bound, cancel + 100 ms,
// had passed before the round began).
TEST(SafetyAsync, ACancelNeverFailsAnotherWaitOnAHealthyServer) {
  RedisServer own;
  Client holders(opts_for(own)), c(opts_for(own));
  const std::string held = unique_name("held");
  FairLock holder(holders, held), cancelled(c, held), busy(c, unique_name("busy")), tried(c, unique_name("tried"));
  holder.lock();
  Outcomes out_cancelled, out_busy, out_tried;  // outlive the locks
  AcquireHandle handle = cancelled.lock_async([&](const AcquireResult& r) { out_cancelled.record(0, r); });
  ASSERT_TRUE(eventually([&] { return zcard(own, held, "q") == 1; }));
  std::atomic<bool> in_callback{false};
  busy.lock_async([&](const AcquireResult& r) {
    in_callback = true;
    std::this_thread::sleep_for(400ms);
    out_busy.record(0, r);
  });
  ASSERT_TRUE(eventually([&] { return in_callback.load(); }));
  handle.cancel();
  tried.lock_async(0ms, [&](const AcquireResult& r) { out_tried.record(0, r); });
  ASSERT_TRUE(out_tried.wait_total(1, 10s));
  ASSERT_TRUE(out_cancelled.wait_total(1, 10s));
  std::lock_guard<std::mutex> lk(out_tried.mu);
  EXPECT_EQ(out_tried.granted.size(), 1U)
      << out_tried.timed_out << " timed out, " << out_tried.other << " other errors (" << out_tried.last_other << ")";
}

// Defect 6c: a timeout of milliseconds::max() does not overflow into the
// past: lock_async, lock_future and try_lock_for wait as lock() does, until
// the holder unlocks.
TEST(SafetyAsync, AnEndlessTimeoutWaitsAsLockDoes) {
  Client client(opts_for(server()));
  const std::string name = unique_name("endless-timeout");
  Outcomes out;  // outlives the locks
  FairLock holder(client, name), waiter(client, name);
  holder.lock();
  waiter.lock_async(milliseconds::max(), [&](const AcquireResult& r) { out.record(0, r); });
  EXPECT_FALSE(out.wait_total(1, 1s)) << "lock_async(milliseconds::max()) ended at once";
  holder.unlock();
  ASSERT_TRUE(out.wait_total(1, 15s));
  EXPECT_EQ(out.granted.size(), 1u);
  if (waiter.owns_lock()) waiter.unlock();

  holder.lock();
  auto fence = waiter.lock_future(milliseconds::max());
  EXPECT_TRUE(fence.wait_for(1s) == std::future_status::timeout) << "lock_future(milliseconds::max()) ended at once";
  holder.unlock();
  ASSERT_TRUE(fence.wait_for(15s) == std::future_status::ready);
  try {
    EXPECT_GT(fence.get(), 0u);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "lock_future(milliseconds::max()): " << e.what();
  }
  if (waiter.owns_lock()) waiter.unlock();

  holder.lock();
  auto got = std::async(std::launch::async, [&] { return waiter.try_lock_for(milliseconds::max()); });
  EXPECT_TRUE(got.wait_for(1s) == std::future_status::timeout) << "try_lock_for(milliseconds::max()) ended at once";
  holder.unlock();
  if (got.wait_for(15s) != std::future_status::ready) {
    waiter.cancel();
    FAIL() << "try_lock_for(milliseconds::max()) was never granted";
  }
  EXPECT_TRUE(got.get());
  if (waiter.owns_lock()) waiter.unlock();
}

// Defect 7. `setup` gets a Client and a FairLock made with `new`, and a
// `teardown` that deletes the lock, then the client, and tells the test it
// ran; setup arranges for a callback to call it. Runs in a child process
// (a death test): the process must survive the teardown and exit with 0.
using Teardown = std::function<void()>;
void teardown_survives(const std::function<void(Client*&, FairLock*&, const Teardown&)>& setup) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // the child runs only this test, in a fresh process
  EXPECT_EXIT(
      {
        std::atomic<bool> done{false};
        Client* client = nullptr;
        FairLock* lock = nullptr;
        const Teardown teardown = [&] {
          delete lock;
          delete client;
          done = true;
        };
        setup(client, lock, teardown);
        const bool ran = eventually([&] { return done.load(); }, 20s);
        std::this_thread::sleep_for(500ms);  // the threads that ran it wind down meanwhile
        std::_Exit(ran ? 0 : 3);
      },
      ::testing::ExitedWithCode(0), "");
}

// An async holder's on_lost (heartbeat thread) deletes its lock and client.
TEST(SafetyAsync, DeletingTheLockAndClientFromOnLostDoesNotAbort) {
  teardown_survives([](Client*& client, FairLock*& lock, const Teardown& teardown) {
    const std::string name = unique_name("teardown-lost");
    client = new Client(opts_for(server()));  // a heartbeat round every 300 ms
    LockOptions lo;
    lo.lease = 1s;
    lo.on_lost = [teardown] { teardown(); };
    lock = new FairLock(*client, name, lo);
    ASSERT_GT(lock->lock_future().get(), 0u);
    forget_holders(server(), name);  // the next round finds the grant gone
  });
}

// A waiter's on_position deletes its lock and client once it is next in
// line (learned from a heartbeat or a re-ask after the one ahead left).
TEST(SafetyAsync, DeletingTheLockAndClientFromOnPositionDoesNotAbort) {
  teardown_survives([](Client*& client, FairLock*& lock, const Teardown& teardown) {
    const std::string name = unique_name("teardown-position");
    // The other participants live until the child process exits.
    auto* others = new Client(opts_for(server()));
    auto* holder = new FairLock(*others, name);
    auto* ahead = new FairLock(*others, name);
    holder->lock();
    ahead->lock_async([](const AcquireResult&) {});
    ASSERT_TRUE(eventually([&] { return zcard(server(), name, "q") == 1; }));
    client = new Client(opts_for(server()));
    LockOptions lo;
    lo.on_position = [teardown](std::size_t position) {
      if (position == 0) teardown();
    };
    lock = new FairLock(*client, name, lo);
    lock->lock_async([](const AcquireResult&) {});
    ASSERT_TRUE(eventually([&] { return zcard(server(), name, "q") == 2; }));
    ahead->cancel();
  });
}

// A wait's own completion callback (the client's async thread) deletes its
// lock and client.
TEST(SafetyAsync, DeletingTheLockAndClientFromTheCompletionCallbackDoesNotAbort) {
  teardown_survives([](Client*& client, FairLock*& lock, const Teardown& teardown) {
    client = new Client(opts_for(server()));
    lock = new FairLock(*client, unique_name("teardown-callback"));
    lock->lock_async([teardown](const AcquireResult&) { teardown(); });
  });
}

}  // namespace
}  // namespace fairlock::test
