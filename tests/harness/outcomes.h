#pragma once
// What the callbacks of many asynchronous waits reported (test_async.cpp,
// test_safety_async.cpp).
#include <fairlock/fairlock.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace fairlock::test {

// What the callbacks of many waits reported, for the test thread.
struct Outcomes {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<int> granted;  // waiter indexes, in grant order
  std::vector<std::uint64_t> fences;
  int cancelled = 0, timed_out = 0, other = 0;
  std::string last_other;  // what the last other error said

  void record(int who, const AcquireResult& r) {
    std::lock_guard<std::mutex> lk(mu);
    if (r) {
      granted.push_back(who);
      fences.push_back(r.fence());
    } else {
      try {
        r.rethrow();
      } catch (const Cancelled&) {
        ++cancelled;
      } catch (const TimeoutError&) {
        ++timed_out;
      } catch (const std::exception& e) {
        ++other;
        last_other = e.what();
      } catch (...) {
        ++other;
      }
    }
    cv.notify_all();
  }
  int total() const { return static_cast<int>(granted.size()) + cancelled + timed_out + other; }
  bool wait_total(int n, std::chrono::seconds limit = std::chrono::seconds(60)) {
    std::unique_lock<std::mutex> lk(mu);
    return cv.wait_for(lk, limit, [&] { return total() >= n; });
  }
};

}  // namespace fairlock::test
