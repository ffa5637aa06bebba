// A fair counting semaphore: at most 4 render jobs at once, admitted in
// arrival order; a timed wait that gives up cleanly; cancelling a wait.
#include <fairlock/fairlock.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <thread>

// The example itself; main() reports what it throws (no server, ...).
int run() {
  fairlock::Options opts;
  if (const char* url = std::getenv("FAIRLOCK_URL")) opts.url = url;
  fairlock::Client client(opts);

  fairlock::FairSemaphore slots(client, "jobs:render", 4);  // at most 4 holders
  if (slots.try_lock_for(std::chrono::seconds(2))) {        // queues; leaves on timeout
    std::lock_guard<fairlock::FairSemaphore> guard(slots, std::adopt_lock);
    std::cout << "admitted with fence " << slots.fence() << "\n";
  } else {
    std::cout << "no slot within 2 s; our queue entry is gone\n";
  }

  // A blocked lock() can be cancelled from another thread: it leaves the
  // queue and throws fairlock::Cancelled.
  fairlock::LockOptions lo;
  lo.lease = std::chrono::seconds(30);
  lo.on_lost = [] { std::cerr << "lease lost: stop writing\n"; };
  fairlock::FairLock holder(client, "orders:43", lo);
  std::atomic<bool> queued{false};
  lo.on_position = [&](std::size_t place) { queued = place == 0; };  // "you are next"
  fairlock::FairLock waiter(client, "orders:43", lo);
  holder.lock();
  std::thread t([&] {
    try {
      waiter.lock();
    } catch (const fairlock::Cancelled&) {
      std::cout << "wait cancelled\n";
    }
  });
  while (!queued) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  waiter.cancel();
  t.join();
  holder.unlock();
  return 0;
}

int main() {
  try {
    return run();
  } catch (const std::exception& e) {
    std::cerr << "semaphore: " << e.what() << "\n";
    return 1;
  }
}
