// Queue inspection, listing, eviction and the position callback.
#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "test_util.h"

namespace fairlock::test {
namespace {

using namespace std::chrono_literals;

TEST(Inspect, ReportsHoldersAndWaitersInOrder) {
  Client client(opts_for(server()));
  std::string name = unique_name("inspect");
  FairSemaphore h1(client, name, 2), h2(client, name, 2);
  h1.lock();
  h2.lock();
  std::vector<std::unique_ptr<FairSemaphore>> ws;
  std::vector<std::thread> ts;
  for (int i = 0; i < 3; ++i) {
    ws.push_back(std::make_unique<FairSemaphore>(client, name, 2));
    ts.emplace_back([&, i] { ws[i]->lock(); });
    ASSERT_TRUE(eventually([&] { return zcard(server(), name, "q") == i + 1; }));
  }
  QueueState st = client.inspect(name);
  EXPECT_EQ(st.name, name);
  EXPECT_EQ(st.permits, 2u);
  EXPECT_EQ(st.holder_count, 2u);
  EXPECT_EQ(st.waiter_count, 3u);
  ASSERT_EQ(st.holders.size(), 2u);
  ASSERT_EQ(st.waiters.size(), 3u);
  std::set<std::uint64_t> fences{st.holders[0].fence, st.holders[1].fence};
  EXPECT_EQ(fences, (std::set<std::uint64_t>{h1.fence(), h2.fence()}));
  for (const auto& h : st.holders) {
    EXPECT_GE(h.held.count(), 0);
    EXPECT_GT(h.lease_left.count(), 0);
    EXPECT_LE(h.lease_left, LockOptions().lease);
  }
  for (std::size_t i = 0; i < st.waiters.size(); ++i) {
    EXPECT_EQ(st.waiters[i].position, i);
    EXPECT_GT(st.waiters[i].liveness_left.count(), 0);
    EXPECT_GE(st.waiters[i].waited.count(), 0);
    if (i) {
      EXPECT_GT(st.waiters[i].ticket, st.waiters[i - 1].ticket);
    }
  }
  EXPECT_GE(st.last_fence, st.waiters.back().ticket);
  QueueState two = client.inspect(name, 2);
  EXPECT_EQ(two.waiters.size(), 2u);
  EXPECT_EQ(two.waiter_count, 3u);
  h1.unlock();
  h2.unlock();
  ts[0].join();
  ts[1].join();
  ws[0]->unlock();
  ts[2].join();
  ws[1]->unlock();
  ws[2]->unlock();
  QueueState idle = client.inspect(name);
  EXPECT_EQ(idle.permits, 0u);
  EXPECT_EQ(idle.holder_count + idle.waiter_count, 0u);
  EXPECT_GT(idle.last_fence, 0u);
}

TEST(Inspect, ListFindsActiveNamesWithCounts) {
  Options o = opts_for(server());
  o.key_prefix = "list-test*[x]";  // glob characters in the prefix are escaped
  Client client(o);
  std::string a = unique_name("listed-a"), b = unique_name("listed-b"), idle = unique_name("listed-idle");
  FairLock la(client, a), lb(client, b), lb2(client, b), li(client, idle);
  la.lock();
  lb.lock();
  li.lock();
  li.unlock();
  std::thread t([&] { lb2.lock(); });
  ASSERT_TRUE(eventually([&] { return std::stoll(server().cmd({"ZCARD", key(b, "q", o.key_prefix)})) == 1; }));
  auto names = client.list();
  std::map<std::string, NameSummary> by;
  for (auto& n : names) by[n.name] = n;
  ASSERT_TRUE(by.count(a));
  ASSERT_TRUE(by.count(b));
  EXPECT_FALSE(by.count(idle));
  EXPECT_EQ(by[a].holders, 1u);
  EXPECT_EQ(by[a].waiters, 0u);
  EXPECT_EQ(by[b].holders, 1u);
  EXPECT_EQ(by[b].waiters, 1u);
  EXPECT_EQ(by[a].permits, 1u);  // read from the inline holder
  EXPECT_EQ(by[b].permits, 1u);  // read from the record (a queue)
  auto only_b = client.list("listed-b*");
  ASSERT_EQ(only_b.size(), 1u);
  EXPECT_EQ(only_b[0].name, b);
  lb.unlock();
  t.join();
  lb2.unlock();
  la.unlock();
}

TEST(Inspect, ListShowsASemaphoresPermits) {
  Client client(opts_for(server()));
  std::string inline_name = unique_name("listed-sem"), queued = unique_name("listed-semq");
  FairSemaphore one(client, inline_name, 3), first(client, queued, 2), second(client, queued, 2);
  one.lock();
  first.lock();
  second.lock();  // two holders: a queue structure, its record keeps p
  std::map<std::string, NameSummary> by;
  for (auto& n : client.list("listed-sem*")) by[n.name] = n;
  EXPECT_EQ(by[inline_name].permits, 3u);
  EXPECT_EQ(by[queued].permits, 2u);
  EXPECT_EQ(by[queued].holders, 2u);
}

// A holder kept inline whose process died stays in the record (it never
// expires) until the name's next call: list() leaves it out once its
// deadline has passed, and reads a version 1 counter as no holder.
// list counts a holder kept inline: in o (version 5), or, on a name an
// older version keeps (not yet upgraded), in its record while its deadline
// is ahead. A record's holder past its deadline (its process died: it
// stays until the name's next call) and a version 1 counter are no holders.
TEST(Inspect, ListCountsInlineHoldersButNotADeadOneOrVersion1Counters) {
  Options o = opts_for(server());
  o.key_prefix = "list-dead";
  Client client(o);
  const std::string dead = unique_name("dead"), v1 = unique_name("v1"), live = unique_name("live");
  const std::string older = unique_name("older");
  FairLock held(client, live);
  held.lock();
  const long long now_s = std::stoll(server().cmd({"TIME"}).substr(0, 10));
  const std::string past = std::to_string((now_s - 60) * 1000), ahead = std::to_string((now_s + 60) * 1000);
  server().cmd(
      {"HSET", key(dead, "seq", o.key_prefix), "v", "2", "s", "7", "o", "p1:2", "d", past, "t", past, "p", "1"});
  server().cmd({"SET", key(v1, "seq", o.key_prefix), "9"});
  server().cmd(
      {"HSET", key(older, "seq", o.key_prefix), "v", "4", "s", "7", "o", "p1:2", "d", ahead, "t", past, "p", "1"});
  auto names = client.list();
  ASSERT_EQ(names.size(), 2u);
  std::map<std::string, std::size_t> holders;
  for (const auto& n : names) holders[n.name] = n.holders;
  EXPECT_EQ(holders[live], 1u);
  EXPECT_EQ(holders[older], 1u);
  held.unlock();
  server().cmd({"DEL", key(older, "seq", o.key_prefix)});
  EXPECT_TRUE(client.list().empty());
}

TEST(Inspect, EvictUnwedgesAQueue) {
  Client client(opts_for(server()));
  std::string name = unique_name("evict");
  LockOptions forever;
  forever.lease = std::chrono::hours(1);
  FairLock wedged(client, name, forever), next(client, name);
  wedged.lock();
  std::thread t([&] { next.lock(); });
  ASSERT_TRUE(eventually([&] { return zcard(server(), name, "q") == 1; }));
  QueueState st = client.inspect(name);
  ASSERT_EQ(st.holders.size(), 1u);
  EXPECT_EQ(client.evict(name, st.holders[0].token), Evicted::holder);
  t.join();  // the next waiter was granted and woken
  EXPECT_TRUE(next.owns_lock());
  EXPECT_EQ(client.evict(name, st.holders[0].token), Evicted::none);
  EXPECT_TRUE(eventually([&] { return !wedged.owns_lock(); }));  // the heartbeat finds it gone
  next.unlock();
}

TEST(Inspect, EvictRemovesAWaiter) {
  Client client(opts_for(server()));
  std::string name = unique_name("evict-waiter");
  FairLock holder(client, name), waiter(client, name);
  holder.lock();
  std::atomic<bool> evicted{false};
  std::thread t([&] {
    try {
      waiter.try_lock_for(30s);
    } catch (const EvictedError&) {
      evicted = true;
    }
  });
  ASSERT_TRUE(eventually([&] { return zcard(server(), name, "q") == 1; }));
  QueueState st = client.inspect(name);
  ASSERT_EQ(st.waiters.size(), 1u);
  EXPECT_EQ(client.evict(name, st.waiters[0].token), Evicted::waiter);
  EXPECT_EQ(zcard(server(), name, "q"), 0);  // (w's entry is the process's: it stays)
  // The evicted waiter's process learns it at its next heartbeat: its wait
  // ends with EvictedError, and it is not queued again (test_operator_evict.cpp).
  t.join();
  EXPECT_TRUE(evicted.load());
  EXPECT_EQ(zcard(server(), name, "q"), 0);
  holder.unlock();
}

TEST(Inspect, BadArgumentsAreRefused) {
  Client client(opts_for(server()));
  EXPECT_THROW(client.inspect(""), std::invalid_argument);
  EXPECT_THROW(client.inspect("a{b}"), std::invalid_argument);
  EXPECT_THROW(client.evict("x", "not-a-token"), BadOption);  // the script's FLBADARG, as the argument
}

TEST(Position, WaiterSeesItsPlaceChange) {
  Client client(opts_for(server()));
  std::string name = unique_name("position");
  FairLock holder(client, name), first(client, name);
  holder.lock();
  std::thread t1([&] { first.lock(); });
  ASSERT_TRUE(eventually([&] { return zcard(server(), name, "q") == 1; }));
  std::mutex mu;
  std::vector<std::size_t> seen;
  LockOptions lo;
  lo.on_position = [&](std::size_t p) {
    std::lock_guard<std::mutex> lk(mu);
    seen.push_back(p);
  };
  FairLock second(client, name, lo);
  std::thread t2([&] { second.lock(); });
  ASSERT_TRUE(eventually([&] {
    std::lock_guard<std::mutex> lk(mu);
    return seen == std::vector<std::size_t>{1};
  }));
  holder.unlock();
  t1.join();
  // Now second in line moved to the head: reported from the heartbeat's reply.
  ASSERT_TRUE(eventually([&] {
    std::lock_guard<std::mutex> lk(mu);
    return seen == std::vector<std::size_t>{1, 0};
  }));
  first.unlock();
  t2.join();
  second.unlock();
}

}  // namespace
}  // namespace fairlock::test
