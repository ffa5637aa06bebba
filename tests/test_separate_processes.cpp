// Separate processes, as a distributed lock's users are.
#include <gtest/gtest.h>

#include <memory>

#include "child.h"
#include "test_util.h"

namespace fairlock::test {
namespace {

using namespace std::chrono_literals;

TEST(Process, MutualExclusionAcrossProcessesWithANonAtomicCounter) {
  std::string name = unique_name("proc-mutex");
  std::string counter = "counter:" + name;
  constexpr int kProcs = 4, kIters = 50;
  std::vector<std::unique_ptr<Child>> kids;
  for (int i = 0; i < kProcs; ++i) {
    kids.push_back(std::make_unique<Child>(
        std::vector<std::string>{server().url(), "count", name, std::to_string(kIters), counter}));
  }
  for (auto& k : kids) EXPECT_EQ(k->wait(), 0);
  EXPECT_EQ(server().cmd({"GET", counter}), std::to_string(kProcs * kIters));
  EXPECT_EQ(keys_of(server(), name), key(name, "seq"));
}

TEST(Process, ProcessesAreServedInArrivalOrder) {
  Client client(opts_for(server()));
  std::string name = unique_name("proc-fifo");
  std::string log = "log:" + name;
  FairLock gate(client, name);
  gate.lock();
  std::vector<std::unique_ptr<Child>> kids;
  for (int i = 0; i < 5; ++i) {
    kids.push_back(
        std::make_unique<Child>(std::vector<std::string>{server().url(), "order", name, log, std::to_string(i)}));
    ASSERT_TRUE(eventually([&] { return zcard(server(), name, "q") == i + 1; }));
  }
  gate.unlock();
  for (auto& k : kids) EXPECT_EQ(k->wait(), 0);
  EXPECT_EQ(server().cmd({"LRANGE", log, "0", "-1"}), "0\n1\n2\n3\n4");
}

TEST(Process, KilledHolderIsReplacedAfterItsLeaseWithALargerFence) {
  std::string name = unique_name("proc-holder");
  Child holder({server().url(), "hold", name, "3000"});
  std::string l = holder.line();
  ASSERT_EQ(l.rfind("fence ", 0), 0u) << l;
  std::uint64_t dead_fence = std::stoull(l.substr(6));
  Client client(opts_for(server()));
  FairLock next(client, name);
  std::thread t([&] { EXPECT_TRUE(next.try_lock_for(std::chrono::seconds(30))); });
  ASSERT_TRUE(eventually([&] { return zcard(server(), name, "q") == 1; }));
  holder.kill();
  holder.wait();
  t.join();
  ASSERT_TRUE(next.owns_lock());
  EXPECT_GT(next.fence(), dead_fence);
  next.unlock();
  EXPECT_EQ(keys_of(server(), name), key(name, "seq"));
}

TEST(Process, KilledWaiterAtTheHeadDoesNotStallTheQueue) {
  Client client(opts_for(server()));
  std::string name = unique_name("proc-waiter");
  FairLock holder(client, name), behind(client, name);
  holder.lock();
  // Its liveness (2 s) is what the queue waits for after the kill; shorter
  // risks the entry expiring before it is seen when the machine is slow
  // (sanitizers, a loaded CI host), and nothing here depends on it.
  Child dead({server().url(), "wait", name, "2000"});
  ASSERT_TRUE(eventually([&] { return zcard(server(), name, "q") == 1; }));
  std::atomic<bool> got{false};
  std::thread t([&] { got = behind.try_lock_for(std::chrono::seconds(30)); });
  ASSERT_TRUE(eventually([&] { return zcard(server(), name, "q") == 2; }));
  dead.kill();
  dead.wait();
  const auto released = std::chrono::steady_clock::now();
  holder.unlock();  // hands off to the dead head; its grant lasts only its liveness
  t.join();
  EXPECT_TRUE(got.load());
  // Its liveness (2 s), never its lease (10 s): a handed-off grant is a
  // lease only once its owner confirms it.
  EXPECT_LT(std::chrono::steady_clock::now() - released, std::chrono::seconds(10));
  behind.unlock();
  EXPECT_EQ(keys_of(server(), name), key(name, "seq"));
}

}  // namespace
}  // namespace fairlock::test
