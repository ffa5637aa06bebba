// The server log's checker against a live server and the real library (the
// checkers on crafted input, without a server, are in test_checker.cpp).
#include <fairlock/fairlock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "scenario.h"

namespace fairlock::faults {
namespace {

// A resync reads o with its PTTL (the snapshot): a holder kept inline
// before the log started is known, so its move into h when a second caller
// queues is not taken for a grant of its fence.
TEST(ServerLogReplay, TheSnapshotTakesTheInlineHolder) {
  Options o;
  o.url = test::server().url();
  Client client(o);
  const std::string name = "replay-snapshot:" + std::to_string(::getpid());
  FairLock first(client, name);
  first.lock();  // nobody else uses the name: kept inline
  const std::uint64_t first_fence = first.fence();
  ServerLog log(test::server().port());
  std::uint64_t second_fence = 0;
  std::thread second([&] {
    FairLock lock(client, name);
    lock.lock();
    second_fence = lock.fence();
    lock.unlock();
  });
  EXPECT_TRUE(eventually([&] { return zcard(test::server(), name, "q") == 1; }));  // queued: moved into h
  first.unlock();
  second.join();
  ASSERT_TRUE(log.stop());
  for (const auto& v : log.violations()) ADD_FAILURE() << v;
  std::vector<std::uint64_t> fences;
  for (const auto& g : log.grants()) {
    if (g.name == name) fences.push_back(g.fence);
  }
  EXPECT_EQ(fences, std::vector<std::uint64_t>{second_fence}) << "the first holder's fence: " << first_fence;
}

// The live log against a real server and the real library: no violations,
// and every grant the clients saw is one the server made.
TEST(ServerLogReplay, FollowsALiveServer) {
  ServerLog log(test::server().port());
  Options o;
  o.url = test::server().url();
  o.liveness_ttl = 900ms;
  Client client(o);
  std::string name = "replay-live:" + std::to_string(::getpid());
  std::vector<std::uint64_t> fences;
  std::mutex mu;
  std::vector<std::thread> ts;
  for (int i = 0; i < 4; ++i) {
    ts.emplace_back([&] {
      FairLock lock(client, name);
      for (int j = 0; j < 10; ++j) {
        lock.lock();
        {
          std::lock_guard<std::mutex> lk(mu);
          fences.push_back(lock.fence());
        }
        lock.unlock();
      }
    });
  }
  for (auto& t : ts) t.join();
  ASSERT_TRUE(log.stop());
  for (const auto& v : log.violations()) ADD_FAILURE() << v;
  std::set<std::uint64_t> server_fences;
  for (const auto& g : log.grants()) {
    if (g.name == name) server_fences.insert(g.fence);
  }
  EXPECT_EQ(server_fences.size(), 40u);
  for (auto f : fences) EXPECT_TRUE(server_fences.count(f)) << f;
}

}  // namespace
}  // namespace fairlock::faults
