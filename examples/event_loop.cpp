// Asynchronous waits without a thread per waiter, three ways: a callback
// on the client's async thread, a std::future, and a poll() event loop
// that runs every callback on its own thread (fairlock::ReadyQueue).
//   fairlock_event_loop         (FAIRLOCK_URL selects the server)
#include <fairlock/fairlock.h>
#include <poll.h>

#include <cstdlib>
#include <future>
#include <iostream>
#include <memory>
#include <vector>

namespace {

std::string server_url() {
  const char* url = std::getenv("FAIRLOCK_URL");
  return url ? url : "redis://127.0.0.1:6379";
}

// A callback and a future: both return at once; the client's own thread
// drives the wait.
void callback_and_future() {
  fairlock::Options opts;
  opts.url = server_url();
  fairlock::Client client(opts);
  fairlock::FairLock lock(client, "orders:42");
  std::promise<void> done;
  lock.lock_async([&](const fairlock::AcquireResult& r) {  // returns an AcquireHandle: .cancel()
    if (r) {
      std::cout << "callback: holding orders:42 with fence " << r.fence() << "\n";
      lock.unlock();  // callbacks may call back into the library
    } else {
      try {
        r.rethrow();  // TimeoutError, Cancelled, ConnectionError, ...
      } catch (const std::exception& e) {
        std::cout << "callback: not granted: " << e.what() << "\n";
      }
    }
    done.set_value();
  });
  done.get_future().wait();

  std::future<std::uint64_t> turn = lock.lock_future(std::chrono::seconds(5));
  const std::uint64_t fence = turn.get();  // throws if not granted
  std::cout << "future: holding orders:42 with fence " << fence << "\n";
  lock.unlock();
}

// An event loop: callbacks run inside run_ready(), on the loop's thread,
// when the queue's eventfd is readable.
void event_loop() {
  fairlock::ReadyQueue ready;
  fairlock::Options opts;
  opts.url = server_url();
  opts.executor = ready.executor();
  fairlock::Client client(opts);
  std::vector<std::unique_ptr<fairlock::FairLock>> spins;
  int served = 0, ended = 0;
  for (int i = 0; i < 100; ++i) {
    spins.push_back(std::make_unique<fairlock::FairLock>(client, "roulette:wheel"));
    fairlock::FairLock& spin = *spins.back();
    spin.lock_async(std::chrono::seconds(30), [&spin, &served, &ended](const fairlock::AcquireResult& r) {
      ++ended;  // no mutex: every callback runs on this thread
      if (!r) return;
      ++served;
      spin.release_async();
    });
  }
  while (ended < 100) {
    pollfd fds[] = {{ready.fd(), POLLIN, 0}};  // add your sockets here
    if (poll(fds, 1, 1000) > 0) ready.run_ready();
  }
  std::cout << "event loop: served " << served << " spins, every callback on this thread\n";
}

}  // namespace

int main() {
  try {
    callback_and_future();
    event_loop();
  } catch (const std::exception& e) {  // fairlock::Error: no server, a wrong password, ...
    std::cerr << "event_loop: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
